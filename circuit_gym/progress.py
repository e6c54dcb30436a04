"""Progress for long computations, and the line that says what is computed once.

Where a person watches (``stderr`` is a terminal) progress is a tqdm bar with its ETA; in a
log (``stderr`` a pipe or a file) it is plain lines, one at least every ``LOG_INTERVAL_S``
seconds while the work goes on, with the count, the elapsed time and the time left, and no
carriage returns or cursor codes (nested tqdm bars once left cursor-up codes in logs).
Switches, from strongest to weakest:

- ``CIRCUIT_GYM_PROGRESS=0`` (or tqdm's own ``TQDM_DISABLE=1``, or ``circuit-gym
  --no-progress``): no bar, no line and no announcement anywhere;
- otherwise (``CIRCUIT_GYM_PROGRESS=1`` included): bars in a terminal, lines in a log.

A bar appears only after ``CIRCUIT_GYM_PROGRESS_DELAY`` seconds (default 2), so the many
sub-second sweeps of a training run stay silent and only the slow ones say so; in a log the
first line comes after ``LOG_INTERVAL_S`` (or that delay, when it is set), so work shorter than
that writes nothing. Code that draws its own tqdm bar asks :func:`progress_enabled`, which is
true only for bars in a terminal.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Generic, Literal, TypeVar

from tqdm.auto import tqdm

PROGRESS_ENV_VAR = "CIRCUIT_GYM_PROGRESS"
DELAY_ENV_VAR = "CIRCUIT_GYM_PROGRESS_DELAY"
DEFAULT_DELAY_S = 2.0
LOG_INTERVAL_S = 30.0  # in a log: a line at least this often while work goes on
CLOCK: Callable[[], float] = time.monotonic  # what log lines time themselves with (a test's clock)
_OFF = {"0", "false", "no", "off"}
_ON = {"1", "true", "yes", "on"}
_announced: set[str] = set()
T = TypeVar("T")


def progress_mode(requested: bool | None = None) -> Literal["off", "bars", "lines"]:
    """How progress is shown: ``"off"`` (``requested=False`` or switched off), ``"bars"`` (tqdm,
    ``stderr`` is a terminal) or ``"lines"`` (plain lines, ``stderr`` is a pipe or a file)."""
    if requested is False:
        return "off"
    setting = os.environ.get(PROGRESS_ENV_VAR, "").strip().lower()
    if setting in _OFF or os.environ.get("TQDM_DISABLE", "").strip().lower() in _ON:
        return "off"
    return "bars" if getattr(sys.stderr, "isatty", lambda: False)() else "lines"


def progress_enabled(requested: bool | None = None) -> bool:
    """Whether a tqdm bar may be drawn: a terminal and nothing switched off (in a log, the
    functions below write plain lines instead; a bar there would leave cursor codes)."""
    return progress_mode(requested) == "bars"


def progress_delay() -> float:
    """Seconds before a bar appears (``$CIRCUIT_GYM_PROGRESS_DELAY``, default 2)."""
    raw = os.environ.get(DELAY_ENV_VAR)
    if raw is None:
        return DEFAULT_DELAY_S
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise ValueError(f"{DELAY_ENV_VAR} must be a number of seconds, got {raw!r}") from None


def _log_delay() -> float:
    """Seconds before a log's first line: ``$CIRCUIT_GYM_PROGRESS_DELAY`` when set, else ``LOG_INTERVAL_S``."""
    return progress_delay() if os.environ.get(DELAY_ENV_VAR) is not None else LOG_INTERVAL_S


class LineProgress(Generic[T]):
    """tqdm's counting interface (``update``, ``close``, iteration, ``with``) writing plain lines
    on ``stderr``: the first once ``delay`` seconds have passed, then one at least every
    ``LOG_INTERVAL_S`` while updates come, and a last one when done if any was written."""

    def __init__(self, iterable: Iterable[T] | None = None, *, total: int | None = None, desc: str = "",
                 unit: str = "it", delay: float = LOG_INTERVAL_S) -> None:  # fmt: skip
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.iterable, self.total, self.desc, self.unit, self.delay = iterable, total, desc, unit, delay
        self.clock = CLOCK
        self.n, self.start = 0, self.clock()
        self.last: float | None = None  # when the last line was written
        self.closed = False

    def _line(self, now: float, done: bool = False) -> str:
        elapsed = now - self.start
        count = f"{self.n}/{self.total} {self.unit}" if self.total else f"{self.n} {self.unit}"
        if done:
            return f"circuit_gym: {self.desc}: done, {count} in {elapsed:.0f} s"
        left = ""
        if self.total and 0 < self.n < self.total:
            left = f", about {elapsed * (self.total - self.n) / self.n:.0f} s left"
        share = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        return f"circuit_gym: {self.desc}: {count}{share}, {elapsed:.0f} s{left}"

    def _write(self, text: str, now: float) -> None:
        print(text, file=sys.stderr, flush=True)
        self.last = now

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self.clock()
        due = now - self.start >= self.delay if self.last is None else now - self.last >= LOG_INTERVAL_S
        if due:
            self._write(self._line(now), now)

    def close(self) -> None:
        if not self.closed and self.last is not None:
            now = self.clock()
            self._write(self._line(now, done=True), now)
        self.closed = True

    def __iter__(self) -> Iterator[T]:
        assert self.iterable is not None, "LineProgress over nothing: pass an iterable"
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> LineProgress[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(
    total: int, desc: str, *, unit: str = "it", requested: bool | None = None
) -> tqdm | LineProgress:
    """A counter to ``update`` yourself: a tqdm bar with an ETA in a terminal, plain lines in a
    log, silent when switched off (:func:`progress_mode`)."""
    mode = progress_mode(requested)
    if mode == "lines":
        return LineProgress(total=total, desc=desc, unit=unit, delay=_log_delay())
    return tqdm(total=total, desc=desc, unit=unit, leave=False, delay=progress_delay(),
                disable=mode == "off", file=sys.stderr)  # fmt: skip


def progress_iter(
    iterable: Iterable[T], desc: str, *, unit: str = "it", requested: bool | None = None
) -> Iterable[T]:
    """``iterable`` behind progress that obeys the switches above (a tqdm bar with an ETA in a
    terminal, plain lines in a log): the one way code outside this module shows progress over a loop."""
    mode = progress_mode(requested)
    if mode == "lines":
        return LineProgress(iterable, desc=desc, unit=unit, delay=_log_delay())
    return tqdm(iterable, desc=desc, unit=unit, leave=False, delay=progress_delay(),
                disable=mode == "off", file=sys.stderr)  # fmt: skip


def announce_once(key: str, message: str, *, requested: bool | None = None) -> bool:
    """Print ``message`` on stderr the first time ``key`` is announced in this process, unless
    progress is switched off; returns whether it was printed."""
    mode = progress_mode(requested)
    if key in _announced or mode == "off":
        return False
    _announced.add(key)
    if mode == "bars":
        tqdm.write(f"circuit_gym: {message}", file=sys.stderr)  # above any bar being drawn
    else:
        print(f"circuit_gym: {message}", file=sys.stderr, flush=True)
    return True


@contextmanager
def library_bars(requested: bool | None = None) -> Iterator[None]:
    """Within the block, the Hugging Face libraries' own tqdm bars (transformers' "Loading
    weights") are drawn only where ours are (a terminal, nothing switched off); their setting is
    restored afterwards. In a log such a bar would leave carriage returns."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    if was and not progress_enabled(requested):
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()
