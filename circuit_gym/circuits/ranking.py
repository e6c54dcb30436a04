"""A ranking: one signed score per head (higher = more important) and the method that made it.

Every solver returns one. Circuits of size ``k`` are its top ``k`` heads, either by the
signed score (MIB's rule for CPR) or by its absolute value (MIB's rule for CMD; MIB issue
19). Ties are broken by the lower head id, so a ranking always gives the same circuits.
Scores may be ``+inf`` / ``-inf`` (ACDC gives ``+inf`` to the heads it never removes), never NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from circuit_gym.circuits.circuit import Circuit


@dataclass(frozen=True)
class Ranking:
    """Frozen per-head scores of an ``n_layers x n_heads`` model, flat head ids."""

    scores: tuple[float, ...]
    method: str
    n_layers: int
    n_heads: int

    def __post_init__(self) -> None:
        scores = tuple(float(s) for s in np.asarray(self.scores, dtype=np.float64).reshape(-1))
        if len(scores) != int(self.n_layers) * int(self.n_heads):
            raise ValueError(
                f"a ranking of a {self.n_layers} x {self.n_heads} model needs "
                f"{int(self.n_layers) * int(self.n_heads)} scores, got {len(scores)}"
            )
        if any(np.isnan(scores)):
            raise ValueError(
                f"ranking {self.method!r} has NaN scores; give every head a number (inf allowed)"
            )
        object.__setattr__(self, "scores", scores)

    @classmethod
    def from_array(
        cls, scores: Sequence[float] | np.ndarray, method: str, n_layers: int, n_heads: int
    ) -> Ranking:
        return cls(tuple(np.asarray(scores, dtype=np.float64).reshape(-1)), method, n_layers, n_heads)

    @property
    def array(self) -> np.ndarray:
        """The scores as a new float64 array."""
        return np.array(self.scores, dtype=np.float64)

    def order(self, absolute: bool = False) -> np.ndarray:
        """Head ids from most to least important (by ``|score|`` when ``absolute``), ties by id."""
        key = np.abs(self.array) if absolute else self.array
        return np.lexsort((np.arange(len(key)), -key))

    def top(self, k: int, absolute: bool = False) -> Circuit:
        """The circuit of the ``k`` most important heads."""
        if not 0 <= int(k) <= len(self.scores):
            raise ValueError(f"k must be in [0, {len(self.scores)}], got {k}")
        return Circuit(frozenset(self.order(absolute)[: int(k)].tolist()), self.n_layers, self.n_heads)
