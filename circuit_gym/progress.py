"""Progress for long computations, and the line that says what is computed once.

Where a person watches (``stderr`` is a terminal) progress is a tqdm bar with its ETA; in a
log (``stderr`` a pipe or a file) it is plain lines, one at least every ``LOG_INTERVAL_S``
seconds while the work goes on, with the count, the elapsed time and the time left, and no
carriage returns or cursor codes (nested tqdm bars once left cursor-up codes in logs).
Switches, from strongest to weakest:

- ``CIRCUIT_GYM_PROGRESS=0`` (or tqdm's own ``TQDM_DISABLE=1``, or ``circuit-gym
  --no-progress``): no bar, no line and no announcement anywhere;
- otherwise (``CIRCUIT_GYM_PROGRESS=1`` included): bars in a terminal, lines in a log.

No silent stage: in a log, while any counter of this module is open or was updated in the last
interval, or a :func:`stage` block runs, a watcher thread writes a line whenever no progress line
was written for ``LOG_INTERVAL_S`` seconds (``CIRCUIT_GYM_PROGRESS_INTERVAL`` sets another
interval; tests use a small one). So many short computations (an environment's first oracle
tables: one sweep each) and one long step without a counter (a PPO update) are never silent
for longer than that in a log; in a terminal a :func:`stage` is a bar with its elapsed time.

A bar appears only after ``CIRCUIT_GYM_PROGRESS_DELAY`` seconds (default 2), so the many
sub-second sweeps of a training run stay silent and only the slow ones say so; in a log the
first line comes after ``LOG_INTERVAL_S`` (or that delay, when it is set), so work shorter than
that writes nothing. Code that draws its own tqdm bar asks :func:`progress_enabled`, which is
true only for bars in a terminal.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Generic, Literal, TypeVar

from tqdm.auto import tqdm

PROGRESS_ENV_VAR = "CIRCUIT_GYM_PROGRESS"
DELAY_ENV_VAR = "CIRCUIT_GYM_PROGRESS_DELAY"
INTERVAL_ENV_VAR = "CIRCUIT_GYM_PROGRESS_INTERVAL"
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


def log_interval() -> float:
    """Seconds a log may go without a progress line while work goes on (``$CIRCUIT_GYM_PROGRESS_INTERVAL``,
    default ``LOG_INTERVAL_S``)."""
    raw = os.environ.get(INTERVAL_ENV_VAR)
    if raw is None:
        return LOG_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{INTERVAL_ENV_VAR} must be a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{INTERVAL_ENV_VAR} must be positive, got {raw!r}")
    return value


def _log_delay() -> float:
    """Seconds before a log's first line: ``$CIRCUIT_GYM_PROGRESS_DELAY`` when set, else the log interval."""
    return progress_delay() if os.environ.get(DELAY_ENV_VAR) is not None else log_interval()


class _Watcher:
    """The process's one watcher thread (lines mode only): it writes a line when work is going on
    (an open counter or stage, or a counter updated within the interval) and no progress line was
    written for the interval. It keeps real time (``time.monotonic``), not :data:`CLOCK`, so a
    test's clock never makes it write."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: list[str] = []  # descriptions of the open counters and stages, innermost last
        self.last_line = time.monotonic()
        self.last_activity = float("-inf")
        self.since = time.monotonic()  # when the current stretch of work began
        self.finished = 0  # counters finished in the current stretch
        self.thread: threading.Thread | None = None

    def busy(self, now: float, interval: float) -> bool:
        return bool(self.open) or now - self.last_activity < interval

    def activity(self, desc: str | None = None, opened: bool = False, closed: bool = False,
                 ended: bool = False) -> None:  # fmt: skip
        """Work was done (a counter updated or opened), ``desc`` opened or closed; ``ended``: a stage
        ended, which is no sign of more work to come."""
        now = time.monotonic()
        with self.lock:
            if not self.busy(now, log_interval()):
                self.since, self.finished, self.last_line = now, 0, now
            if not ended:
                self.last_activity = now
            if opened and desc is not None:
                self.open.append(desc)
            if closed and desc is not None:
                if desc in self.open:
                    self.open.reverse()
                    self.open.remove(desc)  # the innermost of that name
                    self.open.reverse()
                self.finished += 1
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.run, name="circuit_gym progress", daemon=True)
                self.thread.start()

    def wrote(self) -> None:
        with self.lock:
            self.last_line = time.monotonic()

    def run(self) -> None:
        while True:
            interval = log_interval()
            time.sleep(min(1.0, interval / 5))
            now = time.monotonic()
            with self.lock:
                if not self.busy(now, interval) or now - self.last_line < interval:
                    continue
                what = self.open[-1] if self.open else "the last counter"
                done = (
                    f", {self.finished} counted step{'s' * (self.finished != 1)} finished"
                    if self.finished
                    else ""
                )
                text = f"circuit_gym: still working ({what}{done}), {now - self.since:.0f} s"
                self.last_line = now
            if progress_mode() == "lines":
                print(text, file=sys.stderr, flush=True)


_WATCHER = _Watcher()


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
        _WATCHER.activity(desc, opened=True)

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
        _WATCHER.wrote()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self.clock()
        due = now - self.start >= self.delay if self.last is None else now - self.last >= log_interval()
        _WATCHER.activity()
        if due:
            self._write(self._line(now), now)

    def close(self) -> None:
        if not self.closed and self.last is not None:
            now = self.clock()
            self._write(self._line(now, done=True), now)
        if not self.closed:
            _WATCHER.activity(self.desc, closed=True)
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


class _StageBar:
    """A terminal's bar for a :func:`stage`: tqdm's elapsed time, refreshed each second by a thread."""

    def __init__(self, desc: str) -> None:
        self.bar = tqdm(total=None, desc=desc, bar_format="{desc}: {elapsed}", leave=False,
                        delay=progress_delay(), file=sys.stderr)  # fmt: skip
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._tick, daemon=True)
        self.thread.start()

    def _tick(self) -> None:
        while not self.done.wait(1.0):
            self.bar.refresh()

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        self.bar.close()


@contextmanager
def stage(desc: str, *, requested: bool | None = None) -> Iterator[None]:
    """A stage a person waits for (``with stage("PPO warm-up and training"): ...``): in a log, a
    line at least every interval while it runs (the watcher, naming the innermost stage or
    counter), in a terminal a bar with its elapsed time, nothing when switched off."""
    mode = progress_mode(requested)
    bar = _StageBar(desc) if mode == "bars" else None
    if mode == "lines":
        _WATCHER.activity(desc, opened=True)
    try:
        yield
    finally:
        if mode == "lines":
            _WATCHER.activity(desc, closed=True, ended=True)
        if bar is not None:
            bar.close()


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
        _WATCHER.wrote()
        _WATCHER.activity()  # the work it announces starts now: the watcher covers it
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
