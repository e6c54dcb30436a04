"""The model zoo: its members are drawn by the recipe, ship with cards that match their weights,
and really perform the tasks their gate admits, checked without the package's gate code."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from circuit_gym import benchmark as B
from circuit_gym.embedded import EMBEDDED, MODEL_SETS, SHIPPED_ZOO, ZOO, ZOO_GENERATIONS
from circuit_gym.models.cards import card_metrics, gated_tasks
from circuit_gym.models.loading import embedded_dir, load_model
from circuit_gym.models.zoo_recipe import (
    GENERATIONS,
    PLACEMENT_STRATA,
    ZOO_SEED,
    private_member,
    public_members,
)
from circuit_gym.tasks import get_task
from circuit_gym.tasks.base import beats_distractors


def test_public_members_are_drawn_one_per_stratum_and_reproducibly():
    members = public_members()
    assert members == public_members(ZOO_SEED)
    assert public_members(ZOO_SEED + 1) != members  # another zoo seed draws another zoo
    strata = sorted(next(i for i, (lo, hi) in enumerate(PLACEMENT_STRATA) if lo <= m.identity_layers <= hi)
                    for m in members)  # fmt: skip
    assert strata == list(range(len(PLACEMENT_STRATA)))
    assert len({m.seed for m in members}) == len(members)


def test_the_private_draw_depends_on_the_secret_only():
    a, b = private_member(12345), private_member(12345)
    assert a == b and private_member(12346) != a
    assert a.seed not in {m.seed for m in public_members()}


def _recipe_member(name: str):
    """The recipe's draw of a shipped member, from the generation whose names hold it."""
    generation = next(g for g, names in ZOO_GENERATIONS.items() if name in names)
    return next(m for m in public_members(generation=GENERATIONS[generation]) if m.name == name)


def test_shipped_members_are_the_recipes():
    for generation, names in ZOO_GENERATIONS.items():
        recipe = [m.name for m in public_members(generation=GENERATIONS[generation])]
        # a generation still training ships its first members, in the recipe's order (zoo v3)
        assert list(names) == recipe[: len(names)] and names, generation
        assert len(names) == len(recipe) or generation == max(ZOO_GENERATIONS)
    assert MODEL_SETS["zoo"] == ZOO and set(ZOO) <= set(SHIPPED_ZOO)
    assert all(name in EMBEDDED for name in SHIPPED_ZOO)


@pytest.mark.parametrize("name", SHIPPED_ZOO)
def test_a_zoo_member_loads_matches_its_card_and_was_trained_with_its_draw(name):
    import json

    model = load_model(name)
    card = card_metrics(name)
    assert card["weights_hash"] == model.circuit_gym_info.weights_hash
    setup = json.loads((embedded_dir(name) / "training_log.json").read_text())["setup"]
    member = _recipe_member(name)
    assert (setup["seed"], setup["identity_layers"], setup["recipe"], setup.get("head_dropout", 0.0)) == (
        member.seed,
        member.identity_layers,
        "zoo",
        member.head_dropout,
    )
    assert len(setup["tokenizer_sha256"]) == 64  # trained with the zoo's shared tokenizer file


@pytest.mark.parametrize("name", SHIPPED_ZOO)
def test_a_zoo_member_performs_its_gated_tasks(name):
    """Clean accuracy on fresh test-split batches (seeds the card did not use), computed here from
    the logits: the answer token beats every distractor at the metric position."""
    model = load_model(name)
    gated = gated_tasks(name)
    # zoo v1 performs every task; a v2 member trained with the knob may lose some, but must perform at
    # least as many held-out tasks as a private model needs to rank a board
    from circuit_gym.leaderboard.transfer_scorer import MIN_PRIVATE_TASKS

    held_out = set(gated) & set(B.TRANSFER_HELD_OUT_TASKS)
    assert len(gated) >= 5 if name in ZOO else len(held_out) >= MIN_PRIVATE_TASKS, (name, gated)
    for task_name in gated:
        task = get_task(task_name)
        if task.accuracy is not beats_distractors:
            continue  # a task-specific accuracy (greater-than's probability mass): the card reports it
        scores = []
        for seed in range(8):  # 8 batches of 16: a batch is one template, and templates differ
            batch = task.make_batch(model.tokenizer, "test", 16, np.random.default_rng([777, seed]))
            with torch.no_grad():
                logits = model(batch.tokens)
            pos = batch.positions
            answer = logits[:, pos].gather(-1, batch.answers[..., None])[..., 0]
            if batch.distractors.shape[-1] == 0:  # induction-style: the answer is the top token
                correct = (logits[:, pos].argmax(-1) == batch.answers).float().mean(-1)
            else:
                distract = logits[:, pos].gather(-1, batch.distractors).amax(-1)
                correct = (answer > distract).float().mean(-1)
            scores.append(float(correct.mean()))
        # the gate asks 0.9 on the card's batches; chance is 0.5 or below
        assert np.mean(scores) >= 0.8, (name, task_name, scores)


def test_zoo_members_share_one_tokenizer():
    files = {name: (embedded_dir(name) / "tokenizer.json").read_bytes() for name in SHIPPED_ZOO}
    assert len(set(files.values())) == 1


def test_zoo_multi_samples_the_v6_training_tasks_and_the_split_rule_holds():
    import gymnasium as gym

    import circuit_gym
    from circuit_gym import benchmark as B

    rows = {r["id"]: r for r in circuit_gym.list_envs(True, "zoo")}
    assert tuple(rows["CircuitDiscovery-Zoo-Multi-v0"]["tasks"]) == B.TRANSFER_TRAIN_TASKS
    assert gym.spec("CircuitDiscovery-Zoo-Multi-v0").kwargs["inner"] == "single-head"
    # the split rule: disjoint halves of the zoo by index parity, both non-empty; disjoint task splits
    assert set(B.TRAIN_MODELS) | set(B.HELD_OUT_MODELS) == set(ZOO)
    assert B.TRAIN_MODELS and B.HELD_OUT_MODELS and not set(B.TRAIN_MODELS) & set(B.HELD_OUT_MODELS)
    assert all(int(m.removeprefix("zoo")) % 2 == 1 for m in MODEL_SETS["zoo-train"])
    assert not set(B.TRANSFER_TRAIN_TASKS) & set(B.TRANSFER_HELD_OUT_TASKS)
    # every task of both splits is gated on every public member (never served where it fails)
    for model in ZOO:
        assert set(B.TRANSFER_TRAIN_TASKS + B.TRANSFER_HELD_OUT_TASKS) <= set(gated_tasks(model))
    v8 = B.transfer_benchmark("v8")  # zoo v3, split by the same rule
    held_out, train = v8.held_out_models[0], v8.train_models[0]
    assert B.quadrant("capital", held_out, "v8") == "unseen_task_unseen_model"
    assert B.quadrant("ioi", train, "v8") == "seen_task_seen_model"
    with pytest.raises(ValueError, match="no split"):
        B.quadrant("induction", train, "v8")
    with pytest.raises(ValueError, match="no split"):  # zoo v1's members are in no split of v8
        B.quadrant("ioi", B.TRAIN_MODELS[0], "v8")


def test_zoo_v2_draws_one_member_per_knob_stratum_and_leaves_v1_unchanged():
    """Zoo v2 (issue 41): placements as v1's rule, and the self-repair knob from one stratum each,
    "none" included; zoo v1's members and private draw are what they were before the knob."""
    from circuit_gym.models.zoo_recipe import GENERATIONS, KNOB_STRATA_V2, ZOO_V2

    v2 = GENERATIONS["v2"]
    assert public_members(generation=v2) == ZOO_V2
    assert [m.name for m in ZOO_V2] == [f"zoo{i}" for i in range(5, 5 + len(PLACEMENT_STRATA))]
    assert {m.seed for m in ZOO_V2}.isdisjoint(m.seed for m in public_members())
    knob_strata = sorted(
        next(i for i, (lo, hi) in enumerate(KNOB_STRATA_V2) if lo <= m.head_dropout <= hi) for m in ZOO_V2
    )
    assert knob_strata == list(range(len(KNOB_STRATA_V2)))
    assert sum(m.head_dropout == 0 for m in ZOO_V2) == 1  # the range includes none
    assert all(m.head_dropout == 0 for m in public_members())  # v1 predates the knob
    for m in ZOO_V2:  # the knob reaches the training script only where it is set
        args = m.train_args("out", "work", "tok")
        assert ("--head-dropout" in args) == (m.head_dropout > 0)
        if m.head_dropout:
            assert float(args[args.index("--head-dropout") + 1]) == m.head_dropout
    private = private_member(12345, v2)
    assert private == private_member(12345, v2) and private != private_member(12345)
    assert KNOB_STRATA_V2[0][0] <= private.head_dropout <= KNOB_STRATA_V2[-1][1]


def test_the_private_models_placement_is_apart_from_every_public_members_from_v2_on():
    """A private model whose circuits sit in a public member's layers lets the test-set memoriser's
    lookup transfer (the first private v2 draw, layer 0 like zoo8: best-of-1 0.49 there). From v2 the
    draw avoids every public placement, uniformly over the rest; v1's draw is the plain one, kept
    (recomputed here with numpy from its definition)."""
    import numpy as np

    from circuit_gym.models.zoo_recipe import GENERATIONS, ZOO_SEED

    v1, v2 = GENERATIONS["v1"], GENERATIONS["v2"]
    taken = {m.identity_layers for m in public_members(generation=v2)}
    drawn = [private_member(s, v2).identity_layers for s in range(300)]
    lo, hi = PLACEMENT_STRATA[0][0], PLACEMENT_STRATA[-1][1]
    assert not set(drawn) & taken and set(drawn) == set(range(lo, hi + 1)) - taken  # every free layer occurs
    for s in range(20):
        rng = np.random.default_rng([s, ZOO_SEED])
        seed, layers = int(rng.integers(1_000, 2**31)), int(rng.integers(lo, hi + 1))
        m = private_member(s, v1)
        assert (m.seed, m.identity_layers) == (seed, layers)
    assert v1.private_apart is False and v2.private_apart is True


def test_pilot_rounds_train_zoo2s_draw_with_each_knob_only_where_set():
    """Every pilot member is zoo2's draw (seed, placement); a knob or the MLP width reaches the
    training script only where the member sets it, so each round differs from zoo2 by what it tests."""
    from circuit_gym.models.zoo_recipe import PILOT_BASE, pilot_members

    base = next(m for m in public_members() if m.name == PILOT_BASE)
    flags = {"head_dropout": "--head-dropout", "top_head_dropout": "--top-head-dropout", "d_mlp": "--d-mlp"}
    for m in pilot_members():
        assert (m.seed, m.identity_layers) == (base.seed, base.identity_layers)
        args = m.train_args("out", "work", "tok")
        for field, flag in flags.items():
            value = getattr(m, field)
            assert (flag in args) == bool(value), (m.name, flag)
            if value:
                assert float(args[args.index(flag) + 1]) == value
    assert {m.d_mlp for m in pilot_members()} == {0, 576}


def test_zoo_v3_trains_every_member_with_the_backup_objective_and_earlier_generations_without():
    """The backup objective reaches the training script through the generation's setting only: every
    zoo v3 member and its private draw carry the setting's flags; no v1 / v2 member or pilot member
    gets a backup flag, so their setups (and resume checks) are unchanged."""
    from circuit_gym.models.zoo_recipe import BACKUP_SETTINGS, GENERATIONS, pilot_members, private_member

    v3 = GENERATIONS["v3"]
    flags = list(BACKUP_SETTINGS[v3.backup])
    assert "--backup-weight" in flags and float(flags[flags.index("--backup-weight") + 1]) > 0
    members = [*public_members(generation=v3), private_member(12345, v3)]
    assert len(members) == 5 and all(m.backup == v3.backup for m in members)
    for m in members:
        args = m.train_args("out", "work", "tok")
        assert args[-len(flags) :] == flags
    earlier = [*public_members(), *public_members(generation=GENERATIONS["v2"]), *pilot_members()]
    assert not any("--backup-weight" in m.train_args("o", "w", "t") for m in earlier)
    # v3's private placement avoids every public v3 member's, as v2's did
    taken = {m.identity_layers for m in public_members(generation=v3)}
    assert all(private_member(s, v3).identity_layers not in taken for s in range(20))
    with pytest.raises(ValueError, match="unknown backup setting"):
        type(v3)("vX", 1, first=99, backup="nope")
