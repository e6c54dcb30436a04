"""The builtin white-box solvers (circuit_gym/solvers/white_box.py) on the single-head and circuit
tracks in force: ACDC and EAP-IG beside greedy, their rankings and pass counts recomputed independently.

The tests' small benchmark (tests/leaderboard_helpers.py): the 4 x 4 model, one held-out task
(docstring), 2 seeds.
"""

from __future__ import annotations

import numpy as np
import pytest
from leaderboard_helpers import SMALL_TASK, small_in_force

from circuit_gym import benchmark as B
from circuit_gym.ablation.gim import gim_importance
from circuit_gym.ablation.integrated_gradients import integrated_gradients
from circuit_gym.circuits import Circuit, CircuitRunner
from circuit_gym.leaderboard.transfer_scorer import score_transfer
from circuit_gym.planning import top_k_heads
from circuit_gym.solvers.acdc import acdc
from circuit_gym.solvers.white_box import EAP_IG_STEPS, _finite, builtins
from circuit_gym.tasks import get_task


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        yield small_in_force(mp, tmp_path_factory.mktemp("cache"), seeds=(0, 1))


def score(name: str, **kwargs) -> dict:
    return score_transfer(name, B.SINGLE_HEAD, **kwargs)


def score_circuit(name: str, **kwargs) -> dict:
    return score_transfer(name, B.CIRCUIT, **kwargs)


def _runner(model, seed: int, ablation: str) -> CircuitRunner:
    batch = get_task(SMALL_TASK).batch(model, B.SPLIT, B.PROMPTS_PER_EPISODE, seed=seed)
    return CircuitRunner.for_task(model, get_task(SMALL_TASK), batch, ablation)


def test_one_builtin_list_for_both_tracks():
    assert set(builtins("single-head")) == {"greedy", "acdc", "eap_ig", "gim"}
    assert set(builtins("circuit")) == {"greedy_search", "attribution", "acdc", "eap_ig", "gim"}
    with pytest.raises(ValueError, match="on the circuit track"):
        score_circuit("x", builtin="greedy")
    with pytest.raises(ValueError, match="on the single-head track"):
        score("x", builtin="greedy_search")


def test_acdc_and_eap_ig_on_the_single_head_track(small, tiny_model):
    """Their top-5 heads are those of ACDC's sweep and EAP-IG's attribution run here on the
    episode's batch; their passes: the runner's 2 forward passes and check pass, then ACDC's empty
    circuit and one partial pass per circuit tried, EAP-IG's (and GIM's) one forward and backward."""
    for name in ("acdc", "eap_ig", "gim"):
        result = score(name, builtin=name)
        assert result["status"] == "scored" and result["provenance"]["white_box"], result.get("failure")
        assert result["provenance"]["policy"] == f"builtin:{name}"
        for episode in result["scores"]["episodes"]:
            runner = _runner(tiny_model, episode["seed"], small.ablation)
            if name == "acdc":
                sweep = acdc(runner)
                scores = _finite(np.asarray(sweep.ranking.scores))
                passes = {"forward": 2, "partial": 1 + 1 + sweep.tries, "backward": 0}
            else:
                scores = (integrated_gradients(runner.engine, EAP_IG_STEPS) if name == "eap_ig"
                          else gim_importance(runner.engine))  # fmt: skip
                passes = {"forward": 3, "partial": 1, "backward": 1}
            assert episode["top5"] == top_k_heads(scores, 5, np.ones(16, dtype=bool)), name
            assert episode["lm_passes"] == passes, name


def test_acdc_and_eap_ig_on_the_circuit_track(small, tiny_model):
    """Each adds heads in its score order while the score, in faithfulness units, beats alpha;
    forward passes = the environment's (4 setup + 1 per head added) + its own."""
    for name in ("acdc", "eap_ig", "gim"):
        result = score_circuit(name, builtin=name)
        assert result["status"] == "scored", result.get("failure")
        for episode in result["scores"]["episodes"]:
            runner = _runner(tiny_model, episode["seed"], small.ablation)
            span = runner.full_metric - float(
                runner.metric([Circuit.empty(runner.n_layers, runner.n_heads)])[0]
            )
            if name == "acdc":
                sweep = acdc(runner)
                scores, own = _finite(np.asarray(sweep.ranking.scores) / abs(span)), 1 + sweep.tries
            elif name == "eap_ig":
                scores, own = integrated_gradients(runner.engine, EAP_IG_STEPS) / span, 2 * EAP_IG_STEPS
            else:
                scores, own = gim_importance(runner.engine) / span, 2
            expected = []  # the score order (ties: lower id), while it beats alpha, to the budget
            for head in np.argsort(-scores, kind="stable"):
                if len(expected) == B.CIRCUIT_BUDGET or scores[head] <= B.CIRCUIT_ALPHA:
                    break
                expected.append(int(head))
            assert episode["order"] == expected, name
            assert episode["forward_passes"] == 4 + len(expected) + own, name
