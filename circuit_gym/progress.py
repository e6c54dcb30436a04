"""Progress bars for long computations, and the line that says what is computed once.

A bar (tqdm, with its ETA) is shown only where a person can see it: ``stderr`` is a
terminal and nothing turned bars off. Switches, from strongest to weakest:

- ``CIRCUIT_GYM_PROGRESS=0`` (or tqdm's own ``TQDM_DISABLE=1``, or ``circuit-gym
  --no-progress``): no bar and no announcement anywhere;
- ``CIRCUIT_GYM_PROGRESS=1``: bars even when ``stderr`` is not a terminal (logs of a batch job);
- otherwise: bars when ``stderr`` is a terminal, nothing when it is a pipe or a file.

A bar appears only after ``CIRCUIT_GYM_PROGRESS_DELAY`` seconds (default 2), so the many
sub-second sweeps of a training run stay silent and only the slow ones say so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TypeVar

from tqdm.auto import tqdm

PROGRESS_ENV_VAR = "CIRCUIT_GYM_PROGRESS"
DELAY_ENV_VAR = "CIRCUIT_GYM_PROGRESS_DELAY"
DEFAULT_DELAY_S = 2.0
_OFF = {"0", "false", "no", "off"}
_ON = {"1", "true", "yes", "on"}
_announced: set[str] = set()
T = TypeVar("T")


def progress_enabled(requested: bool | None = None) -> bool:
    """Whether to show progress: ``requested=False`` never; otherwise the switches above."""
    if requested is False:
        return False
    setting = os.environ.get(PROGRESS_ENV_VAR, "").strip().lower()
    if setting in _OFF or os.environ.get("TQDM_DISABLE", "").strip().lower() in _ON:
        return False
    if setting in _ON:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def progress_delay() -> float:
    """Seconds before a bar appears (``$CIRCUIT_GYM_PROGRESS_DELAY``, default 2)."""
    raw = os.environ.get(DELAY_ENV_VAR)
    if raw is None:
        return DEFAULT_DELAY_S
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise ValueError(f"{DELAY_ENV_VAR} must be a number of seconds, got {raw!r}") from None


def progress_bar(total: int, desc: str, *, unit: str = "it", requested: bool | None = None) -> tqdm:
    """A tqdm bar with an ETA, disabled unless :func:`progress_enabled` (update it yourself)."""
    return tqdm(total=total, desc=desc, unit=unit, leave=False, delay=progress_delay(),
                disable=not progress_enabled(requested), file=sys.stderr)  # fmt: skip


def progress_iter(
    iterable: Iterable[T], desc: str, *, unit: str = "it", requested: bool | None = None
) -> Iterable[T]:
    """``iterable`` behind a tqdm bar (with an ETA when its length is known) that obeys the
    switches above: the one way code outside this module draws a bar over a loop."""
    return tqdm(iterable, desc=desc, unit=unit, leave=False, delay=progress_delay(),
                disable=not progress_enabled(requested), file=sys.stderr)  # fmt: skip


def announce_once(key: str, message: str, *, requested: bool | None = None) -> bool:
    """Print ``message`` on stderr the first time ``key`` is announced in this process, if
    progress is shown at all; returns whether it was printed."""
    if key in _announced or not progress_enabled(requested):
        return False
    _announced.add(key)
    tqdm.write(f"circuit_gym: {message}", file=sys.stderr)
    return True
