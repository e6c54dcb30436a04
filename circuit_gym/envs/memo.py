"""Memoised circuit metrics: an episode runs each circuit once, and the ones it has not run yet
together, in one stacked pass (the head and edge circuit-building environments)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)


def memoised(
    memo: dict[K, float], keys: Sequence[K], compute: Callable[[list[K]], Sequence[float] | np.ndarray]
) -> np.ndarray:
    """The value of each key, float64: from ``memo``, or from one call ``compute(todo)`` on the keys
    it lacks (each once, in the order first seen), whose values are then added to ``memo`` (the
    episode's cache, meant to grow; pass a fresh dict to memoise nothing)."""
    todo = list(dict.fromkeys(k for k in keys if k not in memo))
    if todo:
        memo.update(zip(todo, np.asarray(compute(todo), dtype=np.float64).tolist(), strict=True))
    return np.array([memo[k] for k in keys], dtype=np.float64)
