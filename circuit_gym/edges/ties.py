"""Choices between near-equal values that do not flip with float noise (issue 58, item 5).

float32 kernels round differently from one CPU to another (AVX-512 vs AVX2 vs the portable
ones): two circuits whose metrics are mathematically equal come out a few 1e-7 apart, in either
order. On the embedded ``tiny`` model every single-edge addition to the empty circuit gives the
same logit difference, 1.3742062 +- 1e-6 (measured on this checkout), so a plain ``argmax``
chose a different edge on another machine. :func:`best_up_to_ties` treats values within
``NEAR_TIE_ATOL + NEAR_TIE_RTOL * |best|`` of the best as tied and gives the choice to the lowest
key (an edge index), a rule every machine applies alike.

The tolerance, 1e-4 logits (plus 1e-5 relative), is the canary's float tolerance
(:mod:`circuit_gym.leaderboard.compare`), some 100 times the float noise seen between CPUs
(3e-6); a real difference between two edges' contributions that a bug would erase or invent (an
edge patched from the wrong sender, a lost head) moves the metric by 1e-2 or more.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NEAR_TIE_ATOL = 1e-4
NEAR_TIE_RTOL = 1e-5


def near_tie_tolerance(best: float) -> float:
    """How far below ``best`` a value still ties with it."""
    return NEAR_TIE_ATOL + NEAR_TIE_RTOL * abs(float(best))


def best_up_to_ties(values: Sequence[float] | np.ndarray, keys: Sequence[int] | np.ndarray) -> int:
    """Position of the chosen value: among those within :func:`near_tie_tolerance` of the largest,
    the one of lowest key (keys distinct). NaN refused: it has no place in an order."""
    v = np.asarray(values, dtype=np.float64)
    k = np.asarray(keys, dtype=np.int64)
    if v.ndim != 1 or v.shape != k.shape or not v.size:
        raise ValueError("values and keys must be equal-length, non-empty vectors")
    if np.isnan(v).any():
        raise ValueError("a NaN value cannot be ranked")
    best = float(v.max())
    tied = np.flatnonzero(v >= best - near_tie_tolerance(best))
    return int(tied[np.argmin(k[tied])])
