"""The backup objective (zoo v3, issue 55): its four stacked runs are the board's ablation, its terms
are what its docstring says, and the pairs it draws are valid backups."""

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer

from circuit_gym.ablation.contrastive import build_task_engine
from circuit_gym.models import load_model, training
from circuit_gym.models.backup_objective import (
    ROLES,
    BackupPair,
    ObjectiveWeights,
    add_routed_gradient,
    backup_loss,
    choose_pairs,
    objective_terms,
    stacked_metrics,
)
from circuit_gym.tasks import get_task

ROOT = Path(__file__).resolve().parents[1]
MEMBER = ROOT / "circuit_gym" / "models" / "zoo" / "zoo7"


def _native(directory: Path = MEMBER):
    """The member as the training code builds it (fast attention), and its tokenizer."""
    config = json.loads((directory / "config.json").read_text())
    args = argparse.Namespace(n_layers=config["n_layers"], n_heads=config["n_heads"], d_model=config["d_model"],
                              n_ctx=config["n_ctx"], seed=0, seed_layers=0, identity_layers=0)  # fmt: skip
    model, _ = training.build_model(config["d_vocab"], args)
    training.init_weights(model, directory)
    training.use_fast_attention(model)
    hf = training._hf_tokenizer(Tokenizer.from_file(str(directory / "tokenizer.json")))
    return model, hf


@pytest.mark.numerics
@pytest.mark.parametrize("task_name", ["ioi", "docstring"])
def test_the_four_runs_are_the_boards_resample_ablation(task_name):
    """The objective's clean / P / Q / P+Q runs (training's own attention path, one stacked batch)
    equal the package's ablation engine on the same prompts (a TransformerBridge, hooks, the
    counterfactual prompts' activations): the objective trains on exactly what the board measures.
    Tolerance 2e-3 in logit units: replacing from another row instead of the counterfactual
    prompt, ablating the wrong head or layer, or mixing the rows moves the means by > 0.05 here."""
    native, _ = _native()
    bridge = load_model("zoo7")
    task = get_task(task_name)
    batch = task.batch(bridge, "train", 8, seed=3)
    engine = build_task_engine(bridge, task, batch, "resample")
    damage = engine.clean_score - engine.sweep()
    primary = int(np.argmax(damage[: 11 * 12]))  # a strong head below the last layer
    later = np.arange((primary // 12 + 1) * 12, 144)
    backup = int(later[np.argmax(damage[later])])
    with torch.no_grad():
        runs = stacked_metrics(native, task, batch, primary, backup).mean(1)
    expected = [
        engine.clean_score,
        engine.score([primary]),
        engine.score([backup]),
        engine.score([primary, backup]),
    ]
    assert runs.tolist() == pytest.approx(expected, abs=2e-3)
    assert expected[0] - expected[1] > 0.05, "the test needs a primary whose ablation matters"


def test_terms_are_hinges_and_a_distance_on_the_stacked_metrics():
    """Hand-computed: carry counts only prompts where P's ablation lowers the metric, dormancy the
    absolute change from Q's ablation, pair only what stays above the failure level."""
    runs = torch.tensor([[2.0, 1.0], [1.0, 2.0], [2.5, 0.0], [0.5, -1.0]])  # rows: ROLES
    terms = objective_terms(runs, fail=0.0, clean_floor=2.5)
    assert ROLES == ("clean", "p", "q", "pq")
    assert float(terms["clean"]) == pytest.approx(abs(1.5 - 2.5))  # the batch mean, both ways
    assert float(terms["carry"]) == pytest.approx((1.5 + 0.5) / 2)  # towards the fixed floor
    assert float(terms["dormancy"]) == pytest.approx((0.5 + 1.0) / 2)
    assert float(terms["pair"]) == pytest.approx((0.5 + 0.0) / 2)


def test_the_clean_run_is_a_fixed_target():
    """The carry and dormancy terms pull the ablated runs up to the fixed floor and towards the clean
    run, never the clean run towards them (a moving target let the metric's scale run away)."""
    runs = torch.tensor([[2.0], [1.0], [3.0], [0.5]], requires_grad=True)
    terms = objective_terms(runs, fail=0.0, clean_floor=2.0)
    (terms["carry"] + terms["dormancy"]).backward()
    assert runs.grad[0, 0] == 0 and runs.grad[1, 0] == -1 and runs.grad[2, 0] == 1


@pytest.mark.slow
def test_pairs_are_backups_above_their_primaries_and_drawn_reproducibly():
    native, hf = _native()
    tasks = ["ioi", "docstring", "greater_than", "agreement", "pronoun"]
    pairs = choose_pairs(native, hf, tasks, seed=5, damage=training.attribution_damage)
    again = choose_pairs(native, hf, tasks, seed=5, damage=training.attribution_damage)
    assert pairs == again and pairs, "the same seed draws the same pairs"
    primaries = {p.primary for p in pairs}
    for p in pairs:
        assert p.backup // 12 > p.primary // 12, "a backup sits in a later layer than its primary"
        assert p.primary // 12 < 11 and p.backup not in primaries
    by_primary: dict[int, set[int]] = {}
    for p in pairs:
        by_primary.setdefault(p.primary, set()).add(p.backup)
    assert all(len(b) == 1 for b in by_primary.values()), "tasks sharing a primary share its backup"
    backups = [next(iter(b)) for b in by_primary.values()]
    assert len(backups) == len(set(backups)), "two primaries never share a backup"
    assert all(np.isfinite(p.fail) for p in pairs) and {p.task for p in pairs} <= set(tasks)


def test_the_loss_reaches_only_the_weights_and_draws_the_same_batches_again():
    """One step's objective: finite, with gradients on the model's weights, the same value when
    called again for the same step (a resumed run draws the same prompts), another for another step."""
    native, hf = _native()
    pair = BackupPair("ioi", primary=5 * 12 + 1, backup=9 * 12 + 3, fail=0.0, clean=0.0)
    weights = ObjectiveWeights(weight=0.5)
    loss, routed, terms = backup_loss(
        native, hf, [pair], weights, step=3, seed=7, tasks_per_step=1, prompts=4
    )
    again, _, _ = backup_loss(native, hf, [pair], weights, step=3, seed=7, tasks_per_step=1, prompts=4)
    other, _, _ = backup_loss(native, hf, [pair], weights, step=4, seed=7, tasks_per_step=1, prompts=4)
    assert float(routed) == 0.0, "route 'all': nothing is routed"
    assert torch.isfinite(loss) and float(loss.detach()) == pytest.approx(float(again), rel=1e-5)
    assert float(loss.detach()) != pytest.approx(float(other), rel=1e-5)
    assert float(loss.detach()) == pytest.approx(0.5 * sum(terms.values()), rel=1e-4)
    loss.backward()
    assert native.layers[9].attn.o.weight.grad is not None
    assert not any(hasattr(b.attn, "replacement_z") for b in native.layers), "no ablation left behind"


def test_routed_terms_reach_only_the_backup_heads_own_weights():
    """Route "backup": the carry and dormancy terms' gradient lands on Q's query / key / value rows
    and output columns and on no other entry, and equals (there) the gradient autograd gives the
    same terms unrouted; the pair term still reaches other layers."""
    native, hf = _native()
    pair = BackupPair("ioi", primary=5 * 12 + 1, backup=9 * 12 + 3, fail=0.0, clean=0.0)
    kw = dict(step=3, seed=7, tasks_per_step=1, prompts=4)
    weights = ObjectiveWeights(pair=0.0, clean=0.0, route="backup")
    shared, routed, _ = backup_loss(native, hf, [pair], weights, **kw)
    assert float(shared) == 0.0 and float(routed) > 0
    add_routed_gradient(native, routed, [pair.backup])
    attn = native.layers[9].attn
    d = attn.d_head
    own = slice(3 * d, 4 * d)
    assert attn.q.weight.grad[own].abs().sum() > 0 and attn.o.weight.grad[:, own].abs().sum() > 0
    outside = torch.ones(attn.q.weight.shape[0], dtype=torch.bool)
    outside[own] = False
    assert attn.q.weight.grad[outside].abs().sum() == 0 and attn.o.weight.grad[:, outside].abs().sum() == 0
    assert all(p.grad is None for n, p in native.named_parameters() if not n.startswith("layers.9.attn"))
    routed_q = attn.q.weight.grad[own].clone()
    native.zero_grad(set_to_none=True)
    unrouted, _, _ = backup_loss(native, hf, [pair], ObjectiveWeights(pair=0.0, clean=0.0), **kw)
    unrouted.backward()
    assert torch.allclose(attn.q.weight.grad[own], routed_q, rtol=1e-4, atol=1e-7)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for n, p in native.named_parameters()
               if n.startswith("layers.5."))  # fmt: skip
