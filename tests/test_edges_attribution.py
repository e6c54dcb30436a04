"""EAP and EAP-IG edge scores: EAP against finite differences of the plain-hook edge
patching written in tests/test_edges_patching.py (independent of the package's pass)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_edges_patching import hook_patched_metric

from circuit_gym.edges.attribution import _port_gradients, _ranking, eap_ig_ranking, eap_ranking
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.tasks import get_task

# floats of a model's kernels, compared to tolerance: `make test` reruns them as another CPU
# rounds (ATEN_CPU_CAPABILITY=default, one thread; issue 58)
pytestmark = pytest.mark.numerics


@pytest.fixture(scope="module")
def setup(tiny_model):
    task = get_task("ioi")
    batch = task.batch(tiny_model, "eval", 4, seed=5)
    return tiny_model, task, batch, EdgePatcher.for_task(tiny_model, task, batch, "resample")


def test_eap_is_minus_the_derivative_of_patching_each_edge(setup):
    model, task, batch, patcher = setup
    ranking = eap_ranking(patcher)
    graph = patcher.graph
    every = set(graph.names)
    picks = ["input->a0.h1<q>", "a0.h2->a1.h0<k>", "a1.h3->a3.h1<v>", "a2.h0->logits", "input->logits",
             graph.names[int(np.argmax(ranking.scores))]]  # fmt: skip
    eps = 0.05
    for name in picks:
        plus = hook_patched_metric(model, task, batch, "resample", every, {name: eps})
        minus = hook_patched_metric(model, task, batch, "resample", every, {name: -eps})
        derivative = (plus - minus) / (2 * eps)  # d m / d (share of the edge patched)
        assert ranking.scores[graph.edge_index(name)] == pytest.approx(-derivative, rel=2e-2, abs=2e-4), name
    assert ranking.passes == {"forward": 3, "backward": 1}


def test_eap_ig_steps_are_the_mean_of_single_interpolations(setup):
    _, _, _, patcher = setup
    steps = 3
    stacked = eap_ig_ranking(patcher, steps)
    clean, corrupt = patcher.clean_input, patcher.corrupt_input
    one_by_one = []
    for j in range(steps):
        grads = _port_gradients(patcher, corrupt + (j / steps) * (clean - corrupt), 1)
        one_by_one.append(_ranking(patcher, grads, "single").scores)
    np.testing.assert_allclose(stacked.scores, np.mean(one_by_one, axis=0), rtol=1e-4, atol=1e-6)
    # counted per copy of the batch: the stacked pass costs what the one-by-one loop above ran
    assert stacked.method == "eap_ig_3" and stacked.passes["backward"] == steps


def test_eap_ig_with_one_step_is_eap_at_the_corrupted_input(setup):
    _, _, _, patcher = setup
    at_corrupt = _ranking(patcher, _port_gradients(patcher, patcher.corrupt_input, 1), "x").scores
    np.testing.assert_allclose(eap_ig_ranking(patcher, 1).scores, at_corrupt, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError):
        eap_ig_ranking(patcher, 0)


def test_attribution_leaves_the_patcher_unchanged(setup):
    _, _, _, patcher = setup
    before = (patcher.clean_input.clone(), patcher.sender_differences())
    eap_ig_ranking(patcher, 2)
    assert torch.equal(before[0], patcher.clean_input) and torch.equal(
        before[1], patcher.sender_differences()
    )
