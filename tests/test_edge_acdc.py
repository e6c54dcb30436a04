"""Edge ACDC (circuit_gym.edges.acdc) against the one-by-one loop written here: the same
visiting order (derived from the edge names), one patched circuit per decision. The package
runs the loop speculatively in stacked chunks; its decisions must be the loop's."""

from __future__ import annotations

import re

import numpy as np
import pytest

from circuit_gym.edges.acdc import acdc_order, edge_acdc
from circuit_gym.edges.attribution import eap_ig_ranking
from circuit_gym.edges.circuit import EdgeCircuit
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.tasks import get_task

# floats of a model's kernels, compared to tolerance: `make test` reruns them as another CPU
# rounds (ATEN_CPU_CAPABILITY=default, one thread; issue 58)
pytestmark = pytest.mark.numerics

RELATIVE_TAUS = (0.002, 0.02, 0.2)


@pytest.fixture(scope="module")
def patcher(tiny_model):
    task = get_task("ioi")
    return EdgePatcher.for_task(tiny_model, task, task.batch(tiny_model, "eval", 4, seed=11), "resample")


def _visit_key(name: str, n_heads: int) -> tuple:
    """Receivers from logits back to a0.h0 (ports q, k, v), senders from the latest one."""
    sender, receiver = name.split("->")
    head = re.fullmatch(r"a(\d+)\.h(\d+)", sender)
    sender_rank = 0 if sender == "input" else 1 + int(head[1]) * n_heads + int(head[2])
    if receiver == "logits":
        return (0, 0, 0, -sender_rank)
    port = receiver[-2]
    layer, h = re.fullmatch(r"a(\d+)\.h(\d+)<[qkv]>", receiver).groups()
    return (1, -(int(layer) * n_heads + int(h)), "qkv".index(port), -sender_rank)


def _one_by_one(patcher: EdgePatcher, start: set[int]) -> list[frozenset[int]]:
    graph = patcher.graph
    m_empty = float(patcher.metric([EdgeCircuit.empty(graph)])[0])
    scale = abs(patcher.full_metric - m_empty)
    current = set(start)
    m_current = float(patcher.metric([EdgeCircuit.of(current, graph)])[0])
    order = sorted(range(graph.n_edges), key=lambda e: _visit_key(graph.names[e], graph.n_heads))
    kept = []
    for tau in sorted(t * scale for t in RELATIVE_TAUS):
        for e in order:
            if e not in current:
                continue
            trial = current - {e}
            m = float(patcher.metric([EdgeCircuit.of(trial, graph)])[0])
            if m_current - m < tau:
                current, m_current = trial, m
        kept.append(frozenset(current))
    return kept


def test_visiting_order_is_reverse_topological(patcher):
    graph = patcher.graph
    expected = sorted(range(graph.n_edges), key=lambda e: _visit_key(graph.names[e], graph.n_heads))
    assert acdc_order(graph) == expected
    assert graph.names[acdc_order(graph)[0]].endswith("->logits")


@pytest.mark.parametrize("restricted", [pytest.param(False, marks=pytest.mark.slow), True])
def test_edge_acdc_decides_as_the_one_by_one_loop(patcher, restricted):
    graph = patcher.graph
    prior = eap_ig_ranking(patcher) if restricted else None
    n = 60 if restricted else None
    result = edge_acdc(patcher, prior, n, RELATIVE_TAUS)
    start = set(prior.candidates(n).tolist()) if restricted else set(range(graph.n_edges))
    assert result.start == frozenset(start)
    expected = _one_by_one(patcher, start)
    assert list(result.kept) == expected
    sizes = [len(k) for k in expected]
    assert len(start) > sizes[0] > sizes[-1] > 0  # the thresholds remove some edges and keep some
    # the ranking: edges kept longer come first; candidates above every other edge
    order = result.ranking.order().tolist()
    assert set(order[: sizes[-1]]) == expected[-1] and set(order[: sizes[0]]) == expected[0]
    assert set(order[: len(start)]) == start
    assert result.ranking.order(absolute=True)[: len(start)].tolist() == order[: len(start)]
    # every decision is one run (plus speculative ones), m(empty) and, when restricted, m(start)
    assert result.ranking.passes["circuits"] == result.tries + 1 + int(restricted)
    assert result.tries >= sum(len(start) if i == 0 else sizes[i - 1] for i in range(len(sizes)))
    if restricted:
        assert result.ranking.passes["forward"] == prior.passes["forward"]
        rest = result.ranking.order()[len(start) :]
        assert list(rest) == [e for e in prior.order() if e not in start]


def test_prior_and_candidates_go_together(patcher):
    with pytest.raises(ValueError):
        edge_acdc(patcher, eap_ig_ranking(patcher), None)
    with pytest.raises(ValueError):
        edge_acdc(patcher, None, 10)
    assert np.isfinite(edge_acdc(patcher, eap_ig_ranking(patcher), 5, (0.5,)).ranking.scores).all()


class _AdditivePatcher:
    """A patcher stub: a circuit's metric is the sum of its kept edges' values (one prompt)."""

    def __init__(self, values: np.ndarray) -> None:
        from circuit_gym.edges.graph import EdgeGraph

        self.graph = EdgeGraph(2, 4)
        self.values = values
        self.full_metric = float(values.sum())

    def metric(self, circuits):
        return np.array([float(self.values[list(c.edges)].sum()) for c in circuits])

    def masks_metric_rows(self, keep):
        return (np.asarray(keep, dtype=np.float64) @ self.values)[:, None]


def test_acdc_over_an_explicit_candidate_set_orders_every_candidate():
    """Protocol 2's ACDC (issue 57): the sweep starts from exactly the given candidates (an
    environment's K rows), every other edge is patched from the start and ranks below them all,
    and the candidates rank by how long they survive: edge 40 (value 5) above 7 (value 1) above
    the ones worth nothing."""
    values = np.zeros(81)
    values[[40, 7]] = [5.0, 1.0]
    values[60] = 2.0  # an important edge the candidates leave out: never tried, never ranked above them
    candidates = [3, 7, 12, 40, 55]
    result = edge_acdc(_AdditivePatcher(values), candidates=candidates)  # type: ignore[arg-type]
    assert result.start == frozenset(candidates)
    order = result.ranking.order().tolist()
    assert set(order[:5]) == set(candidates) and order[:2] == [40, 7]
    assert result.kept[0] >= {40, 7} and not result.kept[0] & {3, 12, 55}
    with pytest.raises(ValueError):
        edge_acdc(_AdditivePatcher(values), eap_ig_ranking_stub(), 3, candidates=candidates)  # type: ignore[arg-type]


def eap_ig_ranking_stub():
    from circuit_gym.edges.graph import EdgeGraph
    from circuit_gym.edges.ranking import EdgeRanking

    return EdgeRanking.from_array(np.arange(81.0), "prior", EdgeGraph(2, 4))
