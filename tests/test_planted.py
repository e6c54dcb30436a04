"""The planted-circuit model: ground truth for faithfulness, CPR and the reference solvers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from circuit_gym.baselines.eap_ig import eap_ig_scores
from circuit_gym.circuits import (
    Circuit,
    CircuitRunner,
    Ranking,
    cpr,
    faithfulness,
    faithfulness_curve,
    faithfulness_curves,
    random_ranking,
)
from circuit_gym.models.planted.fixed import (
    N_HEADS,
    N_LAYERS,
    PLANTED_HEADS,
    PLANTED_TASK,
    load_planted_model,
    planted_state_dict,
)
from circuit_gym.solvers.acdc import acdc

N_TOTAL = N_LAYERS * N_HEADS


@pytest.fixture(scope="module")
def planted():
    return load_planted_model()


@pytest.fixture(scope="module")
def runner(planted):
    batch = PLANTED_TASK.batch(planted, "test", 16, seed=0)
    return CircuitRunner.for_task(planted, PLANTED_TASK, batch, "resample")


def _tpr_fpr(found: set[int]) -> tuple[float, float]:
    negatives = N_TOTAL - len(PLANTED_HEADS)
    return len(found & PLANTED_HEADS) / len(PLANTED_HEADS), len(found - PLANTED_HEADS) / negatives


def test_loads_through_the_bridge_and_solves_its_task(planted):
    from transformer_lens.model_bridge import TransformerBridge

    assert isinstance(planted, TransformerBridge) and planted.circuit_gym_info.name == "planted"
    batch = PLANTED_TASK.batch(planted, "eval", 64, seed=1)
    logits = planted(batch.tokens)
    assert float(PLANTED_TASK.correct(logits, batch).mean()) == 1.0
    assert float(PLANTED_TASK.score(logits, batch).mean()) > 2.0  # a margin, in logit difference
    assert planted_state_dict()["layers.0.attn.q.weight"].shape == (N_HEADS * 32, 64)


def test_planted_set_is_faithful_and_every_set_missing_a_planted_head_is_not(planted):
    """Exhaustive over all 2**12 head sets: the ones missing a planted head stay near 0."""
    batch = PLANTED_TASK.batch(planted, "test", 4, seed=2)  # 4,096 circuits x 4 prompts
    runner = CircuitRunner.for_task(planted, PLANTED_TASK, batch, "resample")
    circuits = [
        Circuit.of([h for h in range(N_TOTAL) if bits >> h & 1], N_LAYERS, N_HEADS)
        for bits in range(2**N_TOTAL)
    ]
    m = runner.metric(circuits)
    f = faithfulness(m, m[0], runner.full_metric)
    has_all = np.array([c.heads >= PLANTED_HEADS for c in circuits])
    assert f[circuits.index(Circuit.of(PLANTED_HEADS, N_LAYERS, N_HEADS))] == pytest.approx(1.0, abs=0.05)
    assert f[has_all].min() > 0.9
    assert f[~has_all].max() < 0.15


def test_acdc_recovers_the_planted_heads(runner):
    result = acdc(runner)
    kept = {h for h, s in enumerate(result.ranking.scores) if s == np.inf}
    tpr, fpr = _tpr_fpr(kept)
    print(f"ACDC kept by every threshold: {sorted(kept)}; TPR {tpr:.2f}, FPR {fpr:.2f}")
    assert (tpr, fpr) == (1.0, 0.0)


@pytest.mark.parametrize("steps", [5, 20])
def test_eap_ig_ranks_the_planted_heads_first(runner, steps):
    scores = eap_ig_scores(runner, steps)
    top = set(np.argsort(-scores, kind="stable")[: len(PLANTED_HEADS)].tolist())
    tpr, fpr = _tpr_fpr(top)
    print(f"EAP-IG ({steps} steps) top-{len(PLANTED_HEADS)}: {sorted(top)}; TPR {tpr:.2f}, FPR {fpr:.2f}; "
          f"scores {np.round(scores, 3).tolist()}")  # fmt: skip
    assert (tpr, fpr) == (1.0, 0.0)


def test_planted_first_has_the_best_cpr(runner):
    """CPR on 12 heads reads the top-1, top-2, top-6 and top-12 circuits; the planted-first
    ranking is compared with every choice of top-2 pair and with random rankings."""
    others = [h for h in range(N_TOTAL) if h not in PLANTED_HEADS]
    planted_first = Ranking.from_array([2.0 if h in PLANTED_HEADS else 1.0 for h in range(N_TOTAL)],
                                       "planted_first", N_LAYERS, N_HEADS)  # fmt: skip
    best = cpr(faithfulness_curve(runner, planted_first))
    rivals = [random_ranking(N_LAYERS, N_HEADS, s) for s in range(30)]
    for pair in itertools.combinations(range(N_TOTAL), 2):
        if set(pair) != PLANTED_HEADS:
            scores = [3.0 if h in pair else (1.0 if h in others else 0.0) for h in range(N_TOTAL)]
            rivals.append(Ranking.from_array(scores, "pair", N_LAYERS, N_HEADS))
    rivals = [
        r for r in rivals if r.top(len(PLANTED_HEADS)).heads != PLANTED_HEADS
    ]  # those rank them first too
    rival_cprs = [cpr(c) for c in faithfulness_curves(runner, [(r, False) for r in rivals])]
    assert best > max(rival_cprs) + 0.05


def test_the_planted_environment_builds_generator_v3_models():
    """``PlantedEnv(version=3)`` plays v3's new kinds on v3 models; its end-of-episode truth carries
    the circuit's edges and backup heads; version 2 (the default) refuses v3's kinds."""
    from circuit_gym.envs.planted import TRUTH_KEY, PlantedEnv
    from circuit_gym.models.planted.generator import model_name, truth_of

    env = PlantedEnv(tasks=("planted_self_repair",), inner="circuit", seeds=(7,), pool_size=2, batch_size=4,
                     oracle_info=False, version=3)  # fmt: skip
    _, info = env.reset(seed=0)
    assert info["model"] == model_name(7, 3) == "planted-v3-7" and TRUTH_KEY not in info
    _, _, terminated, _, info = env.step(env.stop_action)
    truth = truth_of(7, 3)
    assert terminated and info[TRUTH_KEY] == truth.to_json("self_repair")
    assert info[TRUTH_KEY]["edges"]["self_repair"] == sorted(truth.edges("self_repair"))
    assert [h["head"] for h in info[TRUTH_KEY]["circuits"]["self_repair"] if h["backup"]] == sorted(
        truth.backups("self_repair")
    )
    with pytest.raises(ValueError, match="tasks must be one of"):
        PlantedEnv(tasks=("planted_and",), inner="circuit", seeds=(7,))
    with pytest.raises(ValueError, match="version"):
        PlantedEnv(tasks=("planted_and",), inner="circuit", seeds=(7,), version=4)
