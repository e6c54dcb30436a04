"""An edge ranking: one signed score per edge (higher = more important) and the method.

The edge twin of :class:`circuit_gym.circuits.Ranking`: circuits of size ``n`` are the top
``n`` edges by signed score (MIB's rule for CPR) or by ``|score|`` (for CMD); ties go to the
lower edge index, so a ranking always gives the same circuits. ``+inf`` / ``-inf`` allowed
(ACDC keeps edges at ``+inf``), NaN refused. ``passes`` records what the method cost in
language-model passes (forward, backward), as every reference reports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from circuit_gym.edges.circuit import EdgeCircuit
from circuit_gym.edges.graph import EdgeGraph


@dataclass(frozen=True, eq=False)  # an array field: compared and hashed by identity
class EdgeRanking:
    """Frozen per-edge scores of ``graph`` (a float64 array kept read-only)."""

    scores: np.ndarray
    method: str
    graph: EdgeGraph
    passes: dict[str, int] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        scores = np.array(self.scores, dtype=np.float64).reshape(
            -1
        )  # a copy: the caller's array stays theirs
        if scores.shape != (self.graph.n_edges,):
            raise ValueError(f"a ranking of this graph needs {self.graph.n_edges} scores, got {scores.size}")
        if np.isnan(scores).any():
            raise ValueError(
                f"ranking {self.method!r} has NaN scores; give every edge a number (inf allowed)"
            )
        scores.flags.writeable = False
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "passes", dict(self.passes))

    @classmethod
    def from_array(cls, scores: Sequence[float] | np.ndarray, method: str, graph: EdgeGraph,
                   passes: dict[str, int] | None = None) -> EdgeRanking:  # fmt: skip
        return cls(np.asarray(scores, dtype=np.float64), method, graph, dict(passes or {}))

    def order(self, absolute: bool = False) -> np.ndarray:
        """Edge indices from most to least important (by ``|score|`` when ``absolute``), ties by index."""
        key = np.abs(self.scores) if absolute else self.scores
        return np.lexsort((np.arange(len(key)), -key))

    def top(self, n: int, absolute: bool = False) -> EdgeCircuit:
        """The circuit of the ``n`` most important edges."""
        if not 0 <= int(n) <= self.graph.n_edges:
            raise ValueError(f"n must be in [0, {self.graph.n_edges}], got {n}")
        return EdgeCircuit(frozenset(self.order(absolute)[: int(n)].tolist()), self.graph)

    def candidates(self, k: int) -> np.ndarray:
        """The ``k`` edges of largest signed score (what an edge-building environment acts on,
        as MechRL's agent acts on the top 3,000 EAP-IG edges), most important first."""
        return self.order()[: int(k)].copy()


def random_edge_ranking(graph: EdgeGraph, seed: int) -> EdgeRanking:
    """A uniformly random order of the edges (scores a permutation of ``1..N``, all positive,
    so the signed and absolute orders agree), reproducible from ``seed``; it costs no pass."""
    rng = np.random.default_rng([seed, graph.n_layers, graph.n_heads, int(graph.has_mlp)])
    return EdgeRanking.from_array(
        rng.permutation(graph.n_edges) + 1.0, "random", graph, {"forward": 0, "backward": 0}
    )
