"""Edge faithfulness curves at MIB's sizes and edge CPR / CMD, against values computed here:
MIB's sizes by hand, f from the plain-hook patching of tests/test_edges_patching.py, areas
as trapezoids written out."""

from __future__ import annotations

import numpy as np
import pytest
from test_edges_patching import hook_patched_metric

from circuit_gym.circuits.scores import summarise_batches
from circuit_gym.edges import random_edge_ranking
from circuit_gym.edges.attribution import eap_ig_ranking
from circuit_gym.edges.curve import edge_batch_scores, edge_curve
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.tasks import get_task

# floats of a model's kernels, compared to tolerance: `make test` reruns them as another CPU
# rounds (ATEN_CPU_CAPABILITY=default, one thread; issue 58)
pytestmark = pytest.mark.numerics

MIB = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]


def test_curve_sizes_faithfulness_and_areas(tiny_model):
    task = get_task("ioi")
    batch = task.batch(tiny_model, "eval", 4, seed=7)
    patcher = EdgePatcher.for_task(tiny_model, task, batch, "resample")
    ranking = eap_ig_ranking(patcher)
    curve = edge_curve(patcher, ranking)
    n = patcher.graph.n_edges
    assert curve.sizes == tuple(int(k * n) for k in MIB)
    every = set(patcher.graph.names)
    empty = hook_patched_metric(tiny_model, task, batch, "resample", set())
    full = hook_patched_metric(tiny_model, task, batch, "resample", every)
    index = MIB.index(0.1)
    kept = {patcher.graph.names[e] for e in ranking.order()[: curve.sizes[index]]}
    expected_f = (hook_patched_metric(tiny_model, task, batch, "resample", kept) - empty) / (full - empty)
    assert curve.faithfulness[index] == pytest.approx(expected_f, abs=1e-4)
    assert curve.faithfulness[-1] == pytest.approx(1.0, abs=1e-6)
    scores = edge_batch_scores(patcher, ranking, n_random=1)
    f = np.array(scores["curve"]["faithfulness"])
    by_hand = sum((MIB[i + 1] - MIB[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(MIB) - 1))
    assert scores["cpr"] == pytest.approx(by_hand, abs=1e-12)
    g = np.abs(1 - np.array(scores["curve_absolute"]["faithfulness"]))
    assert scores["cmd"] == pytest.approx(
        sum((MIB[i + 1] - MIB[i]) * (g[i] + g[i + 1]) / 2 for i in range(9))
    )
    summary = summarise_batches([scores, scores], ranking.method, "ioi", "resample")
    assert summary["cpr"] == pytest.approx(scores["cpr"]) and summary["batches"] == 2


def test_random_edge_ranking_is_reproducible_and_costs_nothing(tiny_model):
    from circuit_gym.edges import EdgeGraph

    graph = EdgeGraph.of_model(tiny_model)
    a, b = random_edge_ranking(graph, 3), random_edge_ranking(graph, 3)
    assert np.array_equal(a.scores, b.scores) and not np.array_equal(
        a.scores, random_edge_ranking(graph, 4).scores
    )
    assert sorted(a.scores) == list(range(1, graph.n_edges + 1)) and a.passes["forward"] == 0
