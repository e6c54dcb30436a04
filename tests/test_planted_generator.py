"""Generated planted models (``make_planted_model(seed)``) against their own ground truth.

Independent of the discovery code: the checks ablate heads by the ground truth's roles with
the circuit runner (resample ablation: each ablated head's output on the counterfactual
prompt) and read the task metric; nothing here ranks or searches heads.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from circuit_gym.circuits import Circuit, CircuitRunner
from circuit_gym.models.planted import KINDS, PLANTED_TASKS, generate, make_planted_model
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.models.planted.layout import N_HEADS, N_LAYERS
from circuit_gym.models.planted.roles import CIRCUIT_ROLES, DECOY_COUNTS

N = N_LAYERS * N_HEADS
SEEDS = (0, 1)
# Tolerances, in shares of the full model's metric m(full) (a logit difference):
DESTROYED = 0.2  # ablating the whole true circuit leaves at most this much
UNTOUCHED = 0.15  # ablating every other head (decoys and distractors included) moves it by at most this
REDUNDANT_ALONE = 0.15  # one redundant retriever ablated alone costs at most this
REDUNDANT_BOTH = 0.7  # both ablated cost at least this


@pytest.fixture(scope="module", params=SEEDS)
def planted(request):
    return make_planted_model(request.param)  # written to the session's cache directory (conftest)


def _runner(planted, kind: str) -> CircuitRunner:
    task = PLANTED_TASKS[kind]
    return CircuitRunner.for_task(
        planted.model, task, task.batch(planted.model, "test", 16, seed=3), "resample"
    )


def _keep(heads) -> Circuit:
    return Circuit.of(heads, N_LAYERS, N_HEADS)


def _ablate(heads) -> Circuit:
    return Circuit.of(set(range(N)) - set(heads), N_LAYERS, N_HEADS)


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


@pytest.mark.parametrize("kind", KINDS)
def test_the_model_does_its_tasks_and_only_the_true_circuit_carries_them(planted, kind):
    runner = _runner(planted, kind)
    full = runner.full_metric
    assert full > 0.5, f"{kind}: the clean model's logit difference is only {full:.3f}"
    circuit = planted.truth.circuit(kind)
    unread = {r.head for r in planted.truth.roles if r.group == "decoy" and r.role != "decoy_copy"}
    m_without_circuit, m_without_others, m_without_decoys = runner.metric(
        [_ablate(circuit), _keep(circuit), _ablate(unread)]
    )
    print(f"seed {planted.seed} {kind}: m(full) {full:.3f}, circuit ablated {m_without_circuit:.3f}, "
          f"only the circuit {m_without_others:.3f}, unread decoys ablated {m_without_decoys:.3f}")  # fmt: skip
    assert m_without_circuit < DESTROYED * full
    assert abs(m_without_others - full) < UNTOUCHED * full
    assert abs(m_without_decoys - full) < 0.02 * full  # these decoys write what LayerNorm removes


def test_the_clean_models_answer_every_prompt(planted):
    for kind in KINDS:
        task = PLANTED_TASKS[kind]
        batch = task.batch(planted.model, "eval", 32, seed=1)
        accuracy = float(task.correct(planted.model(batch.tokens), batch).mean())
        assert accuracy >= 0.9, f"seed {planted.seed} {kind}: clean accuracy {accuracy:.2f}"


def test_a_redundant_pair_each_alone_small_both_together_large(planted):
    runner = _runner(planted, "redundant")
    (r1,), (r2,) = (
        planted.truth.heads_of("redundant", "retriever_1"),
        planted.truth.heads_of("redundant", "retriever_2"),
    )
    full = runner.full_metric
    one, two, both = full - runner.metric([_ablate({r1}), _ablate({r2}), _ablate({r1, r2})])
    assert one < REDUNDANT_ALONE * full and two < REDUNDANT_ALONE * full
    assert both > REDUNDANT_BOTH * full


def test_the_suppressor_lowers_the_metric_and_the_mover_carries_it(planted):
    runner = _runner(planted, "suppression")
    (mover,), (suppressor,) = (planted.truth.heads_of("suppression", r) for r in ("mover", "suppressor"))
    full = runner.full_metric
    m_no_suppressor, m_no_mover = runner.metric([_ablate({suppressor}), _ablate({mover})])
    assert m_no_suppressor > 1.2 * full  # removing the head that suppresses the answer helps
    assert m_no_mover < 0
    signs = {h["role"]: h["sign"] for h in planted.truth.to_json()["circuits"]["suppression"]}
    assert signs == {"previous_token": 1, "mover": 1, "suppressor": -1}


def test_bad_seeds_are_refused():
    for bad in (-1, 1.5, "3", True, None):
        with pytest.raises(ValueError, match="seed"):
            generate(bad)
    assert np.all(np.isfinite(generate(0)[0]["head.weight"].numpy()))
