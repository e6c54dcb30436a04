"""An entry's ranking of every edge under the edge track's protocol 2 (issue 57, item 1).

Protocol 1 (the retired edge tracks': docs/archive.md) filled every edge an entry did not rank with
EAP-IG's signed score, and broke the entry's ties among its candidates by EAP-IG's order: a
policy that returns constant scores was EAP-IG, and CPR over thousands of unranked edges checked
EAP-IG's signs. Under protocol 2 nothing of a reference method decides an edge the metric reads:

- the entry's candidates (the edge-building environment's ``K`` rows) come first: the edges it
  added, in the order added, then the others by its scores, signed scores for the signed order
  (CPR) and ``|score|`` for the absolute order (CMD), its own signs both ways;
- ties among its scores, and every edge it was not offered, follow one **fixed random order**
  (:func:`fixed_order`): seeded by the episode's key (model or planted kind, task, seed), the
  same for every entry, no method's. Its expected value is the random entry's, which the board
  shows.

The ranking metric reads only the first ``K`` places (:func:`circuit_gym.edges.small_circuits.
log_axis_fractions`: sizes up to the ranked count), so an edge outside the candidates cannot count
there; MIB's linear-axis CPR / CMD (secondary columns) read the fixed order beyond them, the
same order for every entry.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from circuit_gym.edges.graph import EdgeGraph
from circuit_gym.edges.ranking import EdgeRanking


def fixed_order(graph: EdgeGraph, key: str) -> np.ndarray:
    """A random permutation's rank of every edge (0 = first), reproducible from ``key`` and the
    graph's shape: the same for every entry of an episode, another for another episode."""
    rng = np.random.default_rng([zlib.crc32(key.encode()), graph.n_layers, graph.n_heads, int(graph.has_mlp)])
    rank = np.empty(graph.n_edges, dtype=np.int64)
    rank[rng.permutation(graph.n_edges)] = np.arange(graph.n_edges)
    return rank


def entry_order(n_edges: int, candidates: Sequence[int] | np.ndarray, added: Sequence[int],
                scores: Sequence[float] | np.ndarray, tie_rank: np.ndarray, absolute: bool = False) -> np.ndarray:  # fmt: skip
    """Every edge index, most important first: ``added`` (in order), the other ``candidates`` by
    ``scores`` (one per candidate, ``|score|`` when ``absolute``) descending, ties by
    ``tie_rank``, then every other edge by ``tie_rank``."""
    candidates = np.asarray(candidates, dtype=np.int64)
    s = np.asarray(scores, dtype=np.float64)
    if s.shape != candidates.shape:
        raise ValueError(f"one score per candidate: {candidates.size} candidates, {s.size} scores")
    if not np.isfinite(s).all():
        raise ValueError("an entry's scores must be finite")
    added = [int(e) for e in added]
    if not set(added) <= set(candidates.tolist()) or len(set(added)) != len(added):
        raise ValueError("the added edges must be distinct candidates")
    key = np.abs(s) if absolute else s
    rest = np.array([i for i, e in enumerate(candidates.tolist()) if e not in set(added)], dtype=np.int64)
    ranked = candidates[rest[np.lexsort((tie_rank[candidates[rest]], -key[rest]))]] if rest.size else rest
    offered = np.zeros(n_edges, dtype=bool)
    offered[candidates] = True
    others = np.flatnonzero(~offered)
    others = others[np.argsort(tie_rank[others], kind="stable")]
    return np.concatenate([np.asarray(added, dtype=np.int64), ranked, others])


def ranking_of_order(
    order: np.ndarray, graph: EdgeGraph, method: str, passes: dict | None = None
) -> EdgeRanking:
    """An :class:`EdgeRanking` whose signed and absolute orders are both ``order`` (scores
    ``N - position``, all positive)."""
    scores = np.empty(graph.n_edges, dtype=np.float64)
    scores[np.asarray(order, dtype=np.int64)] = graph.n_edges - np.arange(graph.n_edges, dtype=np.float64)
    return EdgeRanking.from_array(scores, method, graph, passes)


def entry_rankings(graph: EdgeGraph, candidates: Sequence[int] | np.ndarray, added: Sequence[int],
                   scores: Sequence[float] | np.ndarray, tie_rank: np.ndarray,
                   method: str = "entry", passes: dict | None = None) -> tuple[EdgeRanking, EdgeRanking]:  # fmt: skip
    """The entry's signed ranking (for CPR) and absolute ranking (for CMD) of every edge."""
    if len(set(np.asarray(candidates).tolist())) != len(candidates):
        raise ValueError("candidates must be distinct")
    signed = entry_order(graph.n_edges, candidates, added, scores, tie_rank, absolute=False)
    absolute = entry_order(graph.n_edges, candidates, added, scores, tie_rank, absolute=True)
    return ranking_of_order(signed, graph, method, passes), ranking_of_order(absolute, graph, method, passes)
