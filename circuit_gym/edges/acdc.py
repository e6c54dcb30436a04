"""ACDC at edge level (Conmy et al. 2023), a reference of any cost.

The algorithm, as the original runs it on edges, with the task metric (logit difference)
in place of the KL divergence (the patcher returns the metric only):

- receivers are visited in reverse topological order: ``logits``, then the heads from the
  last layer to the first (within a layer its MLP, on models with one, then the last head to
  the first), a head's ports in the order q, k, v; a receiver's incoming edges from the latest sender to the earliest
  (:func:`acdc_order`);
- each edge is tried once per threshold: removed (patched with the sender's counterfactual
  output) on top of every edge removed so far, and kept removed when the metric drops by
  less than ``tau``, ``m(current) - m(current - e) < tau`` (a rise is a negative drop: such
  edges are always removed), after which ``m(current)`` moves on;
- a **threshold sweep**: ``taus`` increasing, each pass starting from what the previous one
  left (cumulative, as the head level's :mod:`circuit_gym.solvers.acdc`; auto-circuit 1.0.1
  instead restarts every threshold from the full graph and scores an edge by the smallest
  threshold that removed it). Default thresholds: ``|m(full) - m(empty)|`` times the head
  level's grid (:data:`~circuit_gym.circuits.thresholds.DEFAULT_RELATIVE_TAUS`, 12 geometric steps
  from 1e-3 to 0.5), so a threshold is a share of the behaviour.

**Restricted to candidates**: every edge of a 12 x 12 model is 29,089 patched runs per
pass; given ``prior`` and ``n_candidates``, the search starts from the circuit of the
prior's top ``n_candidates`` edges by signed score (MechRL's agent acts on EAP-IG's top
3,000): every other edge is patched from the start and never tried.

**Batched, exactly**: the decisions are sequential (each depends on every earlier one), so
the pass is run speculatively, assuming removal: the next ``b`` edges' cumulative removals
``current - e1``, ``current - e1 - e2``, ... run as one stacked call
(:meth:`EdgePatcher.masks_metric_rows`); the accepted prefix stands, the first rejected edge
is kept and the rest of the chunk is tried again from there. The decisions are those of the
one-by-one loop (``tests/test_edge_acdc.py`` checks it against one written in the test);
``b`` doubles after a chunk with no rejection and halves after one (ACDC removes most edges).

**Ranking**: an edge's level is the number of passes it survived (0 = removed at the first
threshold, ``len(taus)`` = kept by every pass); candidates rank by level, ties by the prior's
order (by edge index without a prior), above every other edge, which keeps the prior's
score. Signed and absolute orders agree on the candidates.

**Cost** (``passes``): the prior's, plus ``circuits``: every circuit run, speculative ones
included, plus ``m(empty)`` and, when restricted, ``m(start)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from circuit_gym.circuits.thresholds import DEFAULT_RELATIVE_TAUS, absolute_taus
from circuit_gym.edges.circuit import EdgeCircuit
from circuit_gym.edges.graph import EdgeGraph
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking
from circuit_gym.graph_names import LOGITS, PORTS, parse_node_name

MAX_CHUNK = 16  # speculative removals per stacked call (on a CPU a bigger stack barely saves time)


@dataclass(frozen=True)
class EdgeAcdcResult:
    ranking: EdgeRanking
    taus: tuple[float, ...]  # the thresholds swept, increasing, in the metric's unit
    kept: tuple[frozenset[int], ...]  # the circuit left after each threshold
    start: frozenset[int]  # the circuit the sweep started from (the candidates, or every edge)
    tries: int  # circuit runs, speculative ones included


def acdc_order(graph: EdgeGraph, edges: Sequence[int] | None = None) -> list[int]:
    """``edges`` (default: all) in ACDC's visiting order (module docstring)."""
    edges = range(graph.n_edges) if edges is None else edges

    def key(index: int) -> tuple[int, int, int, int]:
        sender, receiver, port = graph.edges[index]
        if receiver == LOGITS:
            return (0, 0, 0, -sender)
        kind, layer, head = parse_node_name(receiver)
        assert layer is not None
        within = graph.n_heads if kind == "mlp" else int(head or 0)  # a layer's MLP reads after its heads
        return (1, -(layer * (graph.n_heads + 1) + within), PORTS.index(port) if port else 0, -sender)

    return sorted((int(e) for e in edges), key=key)


def edge_acdc(patcher: EdgePatcher, prior: EdgeRanking | None = None, n_candidates: int | None = None,
              relative_taus: Sequence[float] = DEFAULT_RELATIVE_TAUS, max_chunk: int = MAX_CHUNK,
              candidates: Sequence[int] | np.ndarray | None = None) -> EdgeAcdcResult:  # fmt: skip
    """Run the threshold sweep on the patcher's batch (module docstring); restricted to the
    prior's top ``n_candidates`` edges when both are given, or to the edges ``candidates`` (an
    environment's candidate set; the prior, if any, then only breaks ties within a level)."""
    graph = patcher.graph
    if candidates is not None and n_candidates is not None:
        raise ValueError("give n_candidates (the prior's top edges) or candidates, not both")
    if candidates is None and (prior is None) != (n_candidates is None):
        raise ValueError("give both prior and n_candidates, or neither")
    if prior is not None and prior.graph != graph:
        raise ValueError("the prior ranking is of another graph")
    start = np.ones(graph.n_edges, dtype=bool)
    if prior is not None and n_candidates is not None:
        start[:] = False
        start[prior.candidates(int(n_candidates))] = True
    if candidates is not None:
        start[:] = False
        start[np.asarray(candidates, dtype=np.int64)] = True
    m_full = patcher.full_metric
    m_empty = float(patcher.metric([EdgeCircuit.empty(graph)])[0])
    m_current = m_full if start.all() else float(patcher.masks_metric_rows(start[None]).mean())
    taus = tuple(absolute_taus(m_full, m_empty, relative_taus))

    current, kept, tries = start.copy(), [], 0
    level = np.zeros(graph.n_edges, dtype=np.int64)
    for tau in taus:
        order = acdc_order(graph, np.flatnonzero(current).tolist())
        current, m_current, n = _pass(patcher, order, current, m_current, tau, max_chunk)
        tries += n
        level[current] += 1
        kept.append(frozenset(np.flatnonzero(current).tolist()))

    circuits = tries + 1 + int(not start.all())
    ranking = _ranking(graph, start, level, prior, circuits)
    return EdgeAcdcResult(ranking, taus, tuple(kept), frozenset(np.flatnonzero(start).tolist()), tries)


def _pass(patcher: EdgePatcher, order: list[int], current: np.ndarray, m_current: float, tau: float,
          max_chunk: int) -> tuple[np.ndarray, float, int]:  # fmt: skip
    """One threshold's pass over ``order``: the circuit left, its metric, the circuits run."""
    current = current.copy()
    i, chunk, tries = 0, 1, 0
    while i < len(order):
        edges = order[i : i + chunk]
        masks = np.repeat(current[None], len(edges), axis=0)
        for j, e in enumerate(edges):
            masks[j:, e] = False  # mask j removes edges[0..j]
        metrics = patcher.masks_metric_rows(masks).mean(1)
        tries += len(edges)
        accepted = 0
        for m in metrics:
            if m_current - m >= tau:
                break
            accepted += 1
            m_current = float(m)
        current[edges[:accepted]] = False
        if accepted < len(edges):  # edges[accepted] stays; the rest of the chunk is tried again
            i += accepted + 1
            chunk = max(1, chunk // 2)
        else:
            i += accepted
            chunk = min(2 * chunk, max(1, int(max_chunk)))
    return current, m_current, tries


def _ranking(graph: EdgeGraph, start: np.ndarray, level: np.ndarray, prior: EdgeRanking | None,
             circuits: int) -> EdgeRanking:  # fmt: skip
    """Candidates by level, ties by the prior's order (or edge index), above every other edge."""
    candidates = np.flatnonzero(start)
    if prior is None:
        scores = np.zeros(graph.n_edges)
        tie_order = np.arange(graph.n_edges)
        method, passes = "acdc", {}
    else:
        scores = prior.scores.copy()
        tie_order = np.empty(graph.n_edges, dtype=np.int64)
        tie_order[prior.order()] = np.arange(graph.n_edges)
        method, passes = f"acdc_{prior.method}_{len(candidates)}", dict(prior.passes)
    finite = np.abs(scores[np.isfinite(scores)])
    top = float(finite.max()) if finite.size else 0.0
    # within a level, earlier in the tie order = a larger fraction in (0, 1)
    rank = np.argsort(np.argsort(tie_order[candidates], kind="stable"), kind="stable")
    scores[candidates] = top + 1.0 + level[candidates] + 1.0 - (rank + 1.0) / (len(candidates) + 1.0)
    return EdgeRanking.from_array(scores, method, graph, {**passes, "circuits": circuits})
