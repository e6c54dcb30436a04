"""Generated planted models (``make_planted_model(seed)``) against their own ground truth.

Independent of the discovery code: heads are ablated by the ground truth's roles with plain
TransformerLens hooks written here (resample ablation: each ablated head's ``hook_z`` replaced by
its value on the counterfactual prompts), never with the package's ablation engine or circuit
runner, and the task metric is read through the public task API; nothing here ranks or searches
heads, except the last test, which scores ACDC (the discovery code) against the truth.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from circuit_gym.models.planted import KINDS, PLANTED_TASKS, generate, make_planted_model
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.models.planted.layout import N_HEADS, N_LAYERS
from circuit_gym.models.planted.roles import CIRCUIT_ROLES, DECOY_COUNTS

N = N_LAYERS * N_HEADS
SEEDS = (0, 1)
MORE_SEEDS = tuple(range(2, 10))  # the slow tests'
# A generator defect found by the audit of issue 31 item 5 (the tests had covered seeds 0 and 1
# only): on some seeds the clean model fails a kind's task, its circuits interfering (seed 6:
# three previous-token heads of three circuits in layer 6 and the redundant reader in layer 3;
# induction's m(full) is -0.10, 31% of prompts answered). Clean accuracy below 90% on 16 test
# prompts: seeds 4 (suppression), 6 (induction, multi-hop, suppression), 12 (the same three),
# 14 (suppression) and 29 (one kind) of seeds 0-29. Public seeds 4, 6, 12 and 14 are on the board.
DEFECT = "generator defect: on this seed the clean model fails some of its tasks (circuits interfere)"
WEAK_SEEDS = (4, 6, 12, 14, 29)  # of seeds 0-29: a kind answered on fewer than 90% of prompts
BROKEN_SEEDS = (6,)  # of MORE_SEEDS: a kind whose m(full) is below 0.5 (the ablation checks cannot hold)
# Tolerances, in shares of the full model's metric m(full) (a logit difference):
DESTROYED = 0.2  # ablating the whole true circuit leaves at most this much
UNTOUCHED = 0.15  # ablating every other head (decoys and distractors included) moves it by at most this
REDUNDANT_ALONE = 0.15  # one redundant retriever ablated alone costs at most this
REDUNDANT_BOTH = 0.7  # both ablated cost at least this


@pytest.fixture(scope="module", params=SEEDS)
def planted(request):
    return make_planted_model(request.param)  # written to the session's cache directory (conftest)


class Ablator:
    """The task metric of one test batch with any head set resample-ablated, by plain hooks."""

    def __init__(self, planted, kind: str) -> None:
        self.model, self.task = planted.model, PLANTED_TASKS[kind]
        self.batch = self.task.batch(planted.model, "test", 16, seed=3)
        names = [f"blocks.{layer}.attn.hook_z" for layer in range(N_LAYERS)]
        with torch.no_grad():
            _, cache = self.model.run_with_cache(self.batch.counterfactual, names_filter=lambda n: n in names)
            self.counterfactual_z = [cache[name].clone() for name in names]
            self.full = self._score(self.model(self.batch.tokens))

    def _score(self, logits: torch.Tensor) -> float:
        return float(self.task.score(logits, self.batch).mean())

    @torch.no_grad()
    def metric(self, ablated) -> float:
        """``m`` with the heads ``ablated`` (flat ids) replaced by their counterfactual output."""
        by_layer: dict[int, list[int]] = {}
        for h in sorted(set(ablated)):
            by_layer.setdefault(h // N_HEADS, []).append(h % N_HEADS)
        hooks = []
        for layer, heads in by_layer.items():

            def replace(z, hook, layer=layer, heads=heads):
                z = z.clone()
                z[:, :, heads] = self.counterfactual_z[layer][:, :, heads]
                return z

            hooks.append((f"blocks.{layer}.attn.hook_z", replace))
        return self._score(self.model.run_with_hooks(self.batch.tokens, fwd_hooks=hooks))

    def keeping(self, heads) -> float:
        """``m`` with every head but ``heads`` ablated."""
        return self.metric(set(range(N)) - set(heads))


def test_generation_is_deterministic_per_seed_and_seeds_differ():
    (a, truth_a), (b, truth_b) = generate(5), generate(5)
    assert truth_a == truth_b and a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    other = truth_of(6)
    assert all(truth_a.circuit(k) != other.circuit(k) for k in KINDS)
    assert not torch.equal(a["layers.0.attn.q.weight"], generate(6)[0]["layers.0.attn.q.weight"])


def test_every_seed_places_every_role_once_in_an_order_its_circuit_can_run():
    layers_used = {kind: set() for kind in KINDS}
    for seed in range(300):
        truth = truth_of(seed)
        assert [r.head for r in truth.roles] == list(range(N))  # one role per head
        layer = {(r.group, r.role): r.layer for r in truth.roles if r.group in CIRCUIT_ROLES}
        for kind, roles in CIRCUIT_ROLES.items():
            assert len(truth.circuit(kind)) == len(roles)
            layers_used[kind] |= {layer[(kind, role)] for role in roles}
        assert layer[("induction", "previous_token")] < layer[("induction", "induction")]
        assert (layer[("multihop", "previous_token")] < layer[("multihop", "second_previous")]
                < layer[("multihop", "mover")])  # fmt: skip
        assert (
            max(layer[("redundant", "retriever_1")], layer[("redundant", "retriever_2")])
            < layer[("redundant", "reader")]
        )
        for role in ("mover", "suppressor"):
            assert layer[("suppression", "previous_token")] < layer[("suppression", role)]
        decoys = [r for r in truth.roles if r.group == "decoy"]
        assert len(decoys) == sum(DECOY_COUNTS.values())
        for r in decoys:
            if r.role == "decoy_induction":  # reads the induction circuit's channel: must sit above it
                assert r.layer > layer[("induction", "previous_token")]
    assert all(used == set(range(N_LAYERS)) for used in layers_used.values())  # anywhere in the 12 layers


def _check_the_circuit_carries_the_task(planted, kind: str) -> None:
    ablator = Ablator(planted, kind)
    full = ablator.full
    assert full > 0.5, f"{kind}: the clean model's logit difference is only {full:.3f}"
    circuit = planted.truth.circuit(kind)
    unread = {r.head for r in planted.truth.roles if r.group == "decoy" and r.role != "decoy_copy"}
    decoys = {r.head for r in planted.truth.roles if r.group == "decoy"}
    m_without_circuit, m_without_others = ablator.metric(circuit), ablator.keeping(circuit)
    m_without_unread, m_without_decoys = ablator.metric(unread), ablator.metric(decoys)
    print(f"seed {planted.seed} {kind}: m(full) {full:.3f}, circuit ablated {m_without_circuit:.3f}, "
          f"only the circuit {m_without_others:.3f}, unread decoys ablated {m_without_unread:.3f}, "
          f"every decoy ablated {m_without_decoys:.3f}")  # fmt: skip
    assert m_without_circuit < DESTROYED * full
    assert abs(m_without_others - full) < UNTOUCHED * full
    assert abs(m_without_unread - full) < 0.02 * full  # these decoys write what LayerNorm removes
    assert abs(m_without_decoys - full) < UNTOUCHED * full


@pytest.mark.parametrize("kind", KINDS)
def test_the_model_does_its_tasks_and_only_the_true_circuit_carries_them(planted, kind):
    _check_the_circuit_carries_the_task(planted, kind)


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed",
    [pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=DEFECT)) if s in BROKEN_SEEDS else s
     for s in MORE_SEEDS],
)  # fmt: skip
def test_only_the_true_circuit_carries_the_task_on_more_seeds(seed):
    planted = make_planted_model(seed)
    for kind in KINDS:
        _check_the_circuit_carries_the_task(planted, kind)


def test_the_clean_models_answer_every_prompt(planted):
    for kind in KINDS:
        task = PLANTED_TASKS[kind]
        batch = task.batch(planted.model, "eval", 32, seed=1)
        accuracy = float(task.correct(planted.model(batch.tokens), batch).mean())
        assert accuracy >= 0.9, f"seed {planted.seed} {kind}: clean accuracy {accuracy:.2f}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed",
    [pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=DEFECT)) if s in WEAK_SEEDS else s
     for s in range(30)],
)  # fmt: skip
def test_the_clean_models_answer_on_more_seeds(seed):
    """Strict: a seed of :data:`WEAK_SEEDS` that starts passing (the defect fixed) fails here."""
    planted = make_planted_model(seed)
    for kind in KINDS:
        task = PLANTED_TASKS[kind]
        batch = task.batch(planted.model, "test", 16, seed=3)
        with torch.no_grad():
            logits = planted.model(batch.tokens)
        accuracy, metric = float(task.correct(logits, batch).mean()), float(task.score(logits, batch).mean())
        assert accuracy >= 0.9 and metric > 0.5, (
            f"seed {seed} {kind}: accuracy {accuracy:.2f}, m {metric:.2f}"
        )


def test_a_redundant_pair_each_alone_small_both_together_large(planted):
    ablator = Ablator(planted, "redundant")
    (r1,), (r2,) = (
        planted.truth.heads_of("redundant", "retriever_1"),
        planted.truth.heads_of("redundant", "retriever_2"),
    )
    full = ablator.full
    one, two, both = (full - ablator.metric(heads) for heads in ({r1}, {r2}, {r1, r2}))
    assert one < REDUNDANT_ALONE * full and two < REDUNDANT_ALONE * full
    assert both > REDUNDANT_BOTH * full
    # what single-head ablation underestimates, the rest of the circuit does not hide
    (reader,) = planted.truth.heads_of("redundant", "reader")
    assert full - ablator.metric({reader}) > REDUNDANT_BOTH * full


def test_the_suppressor_lowers_the_metric_and_the_mover_carries_it(planted):
    ablator = Ablator(planted, "suppression")
    (mover,), (suppressor,) = (planted.truth.heads_of("suppression", r) for r in ("mover", "suppressor"))
    full = ablator.full
    assert ablator.metric({suppressor}) > 1.2 * full  # removing the head that suppresses the answer helps
    assert ablator.metric({mover}) < 0
    signs = {h["role"]: h["sign"] for h in planted.truth.to_json()["circuits"]["suppression"]}
    assert signs == {"previous_token": 1, "mover": 1, "suppressor": -1}


def test_bad_seeds_are_refused():
    for bad in (-1, 1.5, "3", True, None):
        with pytest.raises(ValueError, match="seed"):
            generate(bad)
    assert np.all(np.isfinite(generate(0)[0]["head.weight"].numpy()))


@pytest.mark.slow
def test_acdc_at_head_level_recovers_the_true_circuit_on_most_seeds():
    """ACDC as the Planted track runs it (its head-level threshold sweep; its circuit: the heads
    kept at the track's alpha) on 5 seeds per kind outside the board's public ones, against the
    truth; precision and recall per kind are printed. It must find the whole induction and
    multi-hop circuits on at least 4 of 5 seeds, and on the redundant and suppression kinds every
    head but the one its design cannot see (a redundant retriever: removing one alone costs
    nothing; the suppressor: removing it raises the metric)."""
    from circuit_gym.leaderboard.planted_scorer import (
        BATCH_INDEX,
        PUBLIC_SEEDS,
        episode_scores,
        make_planted_envs,
        reference_solver,
    )
    from circuit_gym.solvers.episodes import play_episode
    from circuit_gym.tasks.planted import task_name

    seeds = tuple(range(100, 105))
    assert not set(seeds) & set(PUBLIC_SEEDS)
    envs = make_planted_envs(seeds)
    solver, _ = reference_solver("acdc", envs)
    for kind in KINDS:
        rows = [episode_scores(kind, s, play_episode(envs[kind].unwrapped.inner_for(s), solver, task_name(kind),
                                                     BATCH_INDEX)) for s in seeds]  # fmt: skip
        precision, recall = (float(np.mean([r[m] for r in rows])) for m in ("precision", "recall"))
        print(f"ACDC {kind}: precision {precision:.2f}, recall {recall:.2f}, "
              f"recall per seed {[round(r['recall'], 2) for r in rows]}")  # fmt: skip
        size = len(CIRCUIT_ROLES[kind])
        needed = 1.0 if kind in ("induction", "multihop") else (size - 1) / size
        assert sum(r["recall"] >= needed - 1e-9 for r in rows) >= 4
        assert precision >= 0.5
