"""An edge circuit: the edges that carry the clean run's output; every other edge is patched.

Frozen, like :class:`circuit_gym.circuits.Circuit` at head level: a set of edge indices of
one :class:`~circuit_gym.edges.graph.EdgeGraph`. :attr:`EdgeCircuit.mask` is a new array on
every call, so no caller can change a circuit through it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from circuit_gym.edges.graph import EdgeGraph


@dataclass(frozen=True)
class EdgeCircuit:
    """A frozen set of edge indices of ``graph``."""

    edges: frozenset[int]
    graph: EdgeGraph

    def __post_init__(self) -> None:
        edges = frozenset(int(e) for e in self.edges)
        bad = sorted(e for e in edges if not 0 <= e < self.graph.n_edges)
        if bad:
            raise ValueError(f"edge indices must be in [0, {self.graph.n_edges}), got {bad[:5]}")
        object.__setattr__(self, "edges", edges)

    @classmethod
    def of(cls, edges: Iterable[int], graph: EdgeGraph) -> EdgeCircuit:
        return cls(frozenset(edges), graph)

    @classmethod
    def from_names(cls, names: Iterable[str], graph: EdgeGraph) -> EdgeCircuit:
        """The circuit of these MIB edge names; ValueError for a name the graph lacks."""
        return cls(frozenset(graph.edge_index(n) for n in names), graph)

    @classmethod
    def from_mask(cls, mask: np.ndarray, graph: EdgeGraph) -> EdgeCircuit:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (graph.n_edges,):
            raise ValueError(f"a mask of this graph has shape ({graph.n_edges},), got {mask.shape}")
        return cls(frozenset(np.flatnonzero(mask).tolist()), graph)

    @classmethod
    def full(cls, graph: EdgeGraph) -> EdgeCircuit:
        return cls(frozenset(range(graph.n_edges)), graph)

    @classmethod
    def empty(cls, graph: EdgeGraph) -> EdgeCircuit:
        return cls(frozenset(), graph)

    @property
    def size(self) -> int:
        return len(self.edges)

    @property
    def is_full(self) -> bool:
        return self.size == self.graph.n_edges

    @property
    def mask(self) -> np.ndarray:
        """``[n_edges]`` bool, True for edges in the circuit (a new array)."""
        out = np.zeros(self.graph.n_edges, dtype=bool)
        out[np.fromiter(self.edges, dtype=np.int64, count=len(self.edges))] = True
        return out

    def names(self) -> list[str]:
        """The circuit's edges as MIB names, in edge order."""
        return [self.graph.names[e] for e in sorted(self.edges)]
