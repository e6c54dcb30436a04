"""A circuit: the set of attention heads that keep their clean output.

Every head outside the circuit is ablated when the circuit is run
(:mod:`circuit_gym.circuits.runner`). Heads are flat ids ``layer * n_heads + head``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from circuit_gym.heads import head_name


@dataclass(frozen=True)
class Circuit:
    """A frozen head mask of an ``n_layers x n_heads`` model."""

    heads: frozenset[int]
    n_layers: int
    n_heads: int

    def __post_init__(self) -> None:
        if int(self.n_layers) < 1 or int(self.n_heads) < 1:
            raise ValueError(f"n_layers and n_heads must be >= 1, got {self.n_layers} and {self.n_heads}")
        heads = frozenset(int(h) for h in self.heads)
        bad = sorted(h for h in heads if not 0 <= h < self.n_total)
        if bad:
            raise ValueError(f"head ids must be in [0, {self.n_total}), got {bad[:5]}")
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "n_layers", int(self.n_layers))
        object.__setattr__(self, "n_heads", int(self.n_heads))

    @classmethod
    def of(cls, heads: Iterable[int], n_layers: int, n_heads: int) -> Circuit:
        return cls(frozenset(heads), n_layers, n_heads)

    @classmethod
    def full(cls, n_layers: int, n_heads: int) -> Circuit:
        return cls(frozenset(range(n_layers * n_heads)), n_layers, n_heads)

    @classmethod
    def empty(cls, n_layers: int, n_heads: int) -> Circuit:
        return cls(frozenset(), n_layers, n_heads)

    @property
    def n_total(self) -> int:
        return self.n_layers * self.n_heads

    @property
    def size(self) -> int:
        return len(self.heads)

    @property
    def mask(self) -> np.ndarray:
        """``[n_layers * n_heads]`` bool, True for heads in the circuit (a new array)."""
        out = np.zeros(self.n_total, dtype=bool)
        out[sorted(self.heads)] = True
        return out

    @property
    def ablated(self) -> frozenset[int]:
        """The heads the circuit ablates: every head not in it."""
        return frozenset(range(self.n_total)) - self.heads

    def names(self) -> list[str]:
        """Heads as ``L.H``, in id order."""
        return [head_name(h, self.n_heads) for h in sorted(self.heads)]

    def without(self, head: int) -> Circuit:
        return Circuit(self.heads - {int(head)}, self.n_layers, self.n_heads)
