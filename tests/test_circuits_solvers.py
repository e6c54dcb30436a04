"""ACDC and EAP-IG on the embedded "tiny" model: definitions, pass counts, thresholds."""

from __future__ import annotations

import numpy as np
import pytest

from circuit_gym.baselines.acdc import acdc_ranking
from circuit_gym.baselines.eap_ig import attribution_patching_ranking, eap_ig_ranking, eap_ig_scores
from circuit_gym.circuits import Circuit, CircuitRunner, Ranking
from circuit_gym.passes import PassCounter
from circuit_gym.solvers.acdc import acdc
from circuit_gym.tasks import get_task


def test_eap_ig_with_one_step_is_minus_attribution_patching(tiny_model, ioi_batch, runner):
    """Two independent code paths: the IG path at alpha = 1 vs circuit_gym.ablation.attribution."""
    ap = attribution_patching_ranking(tiny_model, get_task("ioi"), ioi_batch)
    np.testing.assert_allclose(eap_ig_scores(runner, 1), ap.array, atol=1e-5, rtol=1e-4)
    assert ap.method == "attribution_patching"


def test_eap_ig_passes_and_ranking(tiny_model, ioi_batch):
    with PassCounter(tiny_model) as counter:
        ranking = eap_ig_ranking(tiny_model, get_task("ioi"), ioi_batch, steps=5)
    # clean + counterfactual (engine), one stacked IG pass; the engine's replay check; one backward
    assert counter.counts() == {"forward": 3, "partial": 1, "backward": 1}
    assert isinstance(ranking, Ranking) and ranking.method == "eap_ig"
    with pytest.raises(ValueError, match="steps"):
        eap_ig_scores(CircuitRunner.for_task(tiny_model, get_task("ioi"), ioi_batch), 0)


def test_acdc_passes_follow_its_tries(tiny_model, ioi_batch):
    runner = CircuitRunner.for_task(tiny_model, get_task("ioi"), ioi_batch)
    with PassCounter(tiny_model) as counter:
        result = acdc(runner)
    assert counter.counts() == {"forward": 0, "partial": result.tries + 1, "backward": 0}  # + m(empty)
    with PassCounter(tiny_model) as counter:
        ranking = acdc_ranking(tiny_model, get_task("ioi"), ioi_batch)
    assert counter.counts()["forward"] == 2 and ranking.scores == result.ranking.scores


def test_acdc_thresholds_shrink_the_circuit_and_score_by_removal(runner):
    result = acdc(runner, taus=[0.01, 0.1, 1.0, 1e6])
    sizes = [len(k) for k in result.kept]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 0  # a huge threshold removes everything
    for tau, kept in zip(result.taus, result.kept, strict=True):
        # a head still in the circuit after threshold tau scores above tau
        assert all(result.ranking.scores[h] > tau for h in kept)
    removed_first = {h for h, s in enumerate(result.ranking.scores) if s == 0.01}
    assert removed_first and removed_first.isdisjoint(result.kept[0])
    # the head ACDC keeps longest hurts when removed from the full circuit
    top = int(np.argmax(result.ranking.array))
    full = Circuit.full(4, 4)
    assert runner.full_metric - runner.metric([full.without(top)])[0] > 0.1
    with pytest.raises(ValueError, match="increasing"):
        acdc(runner, taus=[1.0, 0.5])
