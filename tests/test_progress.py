"""Long work says so: the first step of a GPT-2-shaped ID shows a bar with an ETA and the line
saying what is computed once, in a terminal; in a log (not a terminal) plain lines with the
time left, at least one every 30 s, and no carriage return or cursor code."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest

from circuit_gym import progress
from circuit_gym.models.random_checkpoint import write_random_gpt2_checkpoint

pexpect = pytest.importorskip("pexpect")

FIRST_STEP = """
import sys
import gymnasium as gym
import circuit_gym  # noqa: F401
env = gym.make("CircuitDiscovery-GPT2-IOI-v2", model_path=sys.argv[1], pool_size=2, batch_size=2)
env.reset(seed=0)
env.step(0)
print("FIRST STEP DONE")
"""
# tqdm's ETA: "n/total [elapsed<remaining" (e.g. "12/24 [00:03<00:03")
ETA = re.compile(r"\d+/\d+ \[\d\d:\d\d<\d\d:\d\d")


@pytest.fixture(scope="module")
def small_gpt2(tmp_path_factory):
    """GPT-2's architecture and tokenizer, random weights, 1 layer (the same code path as 12)."""
    return write_random_gpt2_checkpoint(tmp_path_factory.mktemp("gpt2_2l"), n_layer=1, n_embd=96)


def _env(cache_dir) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (progress.PROGRESS_ENV_VAR, "TQDM_DISABLE")}
    env.update(CIRCUIT_GYM_CACHE=str(cache_dir), CIRCUIT_GYM_THREADS="1", PYTHONWARNINGS="ignore")
    env[progress.DELAY_ENV_VAR] = "0"  # the small model's sweep is faster than the default delay
    return env


@pytest.mark.slow  # two fresh processes, each a model load and a general-damage sweep
def test_first_step_shows_progress_in_a_terminal(small_gpt2, tmp_path):
    child = pexpect.spawn(sys.executable, ["-c", FIRST_STEP, str(small_gpt2)], env=_env(tmp_path / "cache"),
                          encoding="utf-8", timeout=300, dimensions=(40, 200))  # fmt: skip
    child.expect("FIRST STEP DONE")
    shown = child.before
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, shown
    assert "general-damage sweep" in shown and ETA.search(shown), shown  # the bar, with its ETA
    assert "oracle sweep (ioi)" in shown, shown
    announcement = next(line for line in shown.splitlines() if "general-damage sweep of gpt2" in line)
    assert str(tmp_path / "cache") in announcement  # where it is cached
    assert (
        f"circuit-gym precompute --model gpt2 --model-path {small_gpt2}" in announcement
    )  # how to precompute


@pytest.mark.slow
def test_first_step_writes_plain_lines_without_a_terminal(small_gpt2, tmp_path):
    # bytes, decoded here: text mode would turn a bar's carriage returns into newlines
    done = subprocess.run([sys.executable, "-c", FIRST_STEP, str(small_gpt2)], env=_env(tmp_path / "cache"),
                          capture_output=True, timeout=300)  # fmt: skip
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert done.stdout.decode().strip() == "FIRST STEP DONE"
    assert "circuit_gym: computing the general-damage sweep of gpt2" in err, err
    assert "circuit_gym: general-damage sweep: done, 12/12 head in " in err, err
    # no bar anywhere (ours write lines; transformers' "Loading weights" is off in a log) and no
    # escape code but in Gymnasium's own coloured warning for the old ID this script makes
    assert "\r" not in err, repr(err[-2000:])
    codes = [line for line in err.splitlines() if "\x1b[" in line and "WARN: The environment" not in line]
    assert not codes, codes


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_tqdm_disable_switches_it_off(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setattr(sys, "stderr", _Stream(True))
    assert progress.progress_enabled() is False


def test_bad_delay_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(progress.DELAY_ENV_VAR, "soon")
    with pytest.raises(ValueError, match=progress.DELAY_ENV_VAR):
        progress.progress_delay()


@pytest.mark.parametrize(
    ("setting", "tty", "requested", "expected"),
    [
        (None, True, None, "bars"),  # a terminal: bars
        (None, False, None, "lines"),  # a pipe or a file: plain lines
        ("0", True, None, "off"),  # switched off beats a terminal
        ("0", False, None, "off"),
        ("1", False, None, "lines"),  # on, but a bar never goes into a log
        ("1", True, False, "off"),  # the caller's False beats everything
    ],
)
def test_switches(monkeypatch, setting, tty, requested, expected):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    if setting is None:
        monkeypatch.delenv(progress.PROGRESS_ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(progress.PROGRESS_ENV_VAR, setting)
    monkeypatch.setattr(sys, "stderr", _Stream(tty))
    assert progress.progress_mode(requested) == expected
    assert progress.progress_enabled(requested) is (expected == "bars")  # code drawing its own tqdm bar


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_redirected_log_gets_plain_lines_at_least_every_30_s(monkeypatch):
    """Nested progress (scoring episodes, each an oracle sweep over heads) into a stream that is not
    a terminal, on a clock that advances 7 s per head: lines only, no carriage return and no
    ``\x1b[`` code, the first after 30 s and never more than 30 s of work between two lines."""
    monkeypatch.delenv(progress.PROGRESS_ENV_VAR, raising=False)
    monkeypatch.delenv(progress.DELAY_ENV_VAR, raising=False)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    log = _Stream(tty=False)
    monkeypatch.setattr(sys, "stderr", log)
    clock = _Clock()
    stamps: list[float] = []
    real = progress.LineProgress._write

    def write(self, text, now):
        stamps.append(now)
        real(self, text, now)

    monkeypatch.setattr(progress.LineProgress, "_write", write)
    monkeypatch.setattr(progress, "CLOCK", clock)
    assert progress.announce_once("test-log", "computing the oracle tables (about 2 min)") is True
    for _ in progress.progress_iter(range(4), "episodes", unit="episode"):
        with progress.progress_bar(5, "oracle sweep", unit="head") as bar:
            for _ in range(5):
                clock.now += 7.0
                bar.update(1)
    text = log.getvalue()
    assert "\x1b[" not in text and "\r" not in text, repr(text)
    lines = text.splitlines()
    assert lines[0] == "circuit_gym: computing the oracle tables (about 2 min)"
    assert all(line.startswith("circuit_gym: ") for line in lines)
    assert any(line.startswith("circuit_gym: oracle sweep: 5/5 head (100%), 35 s") for line in lines), lines
    assert any(line.startswith("circuit_gym: episodes: done, 4/4 episode in 140 s") for line in lines), lines
    assert "circuit_gym: episodes: 1/4 episode (25%), 35 s, about 105 s left" in lines, lines
    assert stamps[0] <= 35.0 and all(b - a <= 35.0 for a, b in zip(stamps, stamps[1:], strict=False))
    assert max(stamps) == 140.0  # the last work ends with a line


def test_switched_off_writes_nothing(monkeypatch):
    monkeypatch.setenv(progress.PROGRESS_ENV_VAR, "0")
    log = _Stream(tty=False)
    monkeypatch.setattr(sys, "stderr", log)
    assert list(progress.progress_iter(range(3), "x")) == [0, 1, 2]
    assert progress.announce_once("test-off", "nothing") is False and log.getvalue() == ""
