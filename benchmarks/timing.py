"""Timing a call: once (``timed``) or the best of several (``best_of``), on the wall clock by
default or on this process's CPU time (``clock=time.process_time``: a shared machine's other
jobs then cost less of the figure). The one timing loop of the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T], clock: Callable[[], float] = time.perf_counter) -> tuple[float, T]:
    """(seconds of one call of ``fn``, its result)."""
    start = clock()
    out = fn()
    return clock() - start, out


def best_of(fn: Callable[[], T], repeats: int, clock: Callable[[], float] = time.perf_counter,
            warm_up: bool = False) -> tuple[float, T | None]:  # fmt: skip
    """(the least seconds over ``repeats`` calls of ``fn``, the last call's result); the least,
    not the mean, because a loaded machine only ever adds time. ``warm_up``: one untimed call
    first (lazy kernels, caches)."""
    if warm_up:
        fn()
    best, out = float("inf"), None
    for _ in range(repeats):
        seconds, out = timed(fn, clock)
        best = min(best, seconds)
    return best, out
