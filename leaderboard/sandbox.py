"""Run a submitted policy in a child process with a time limit and a memory limit.

The parent sends observations, the child answers with ``rank_heads(observation)``. A
child that crashes, hangs past the time limit or grows past the memory limit is killed
and reported as a :class:`PolicyFailureError`; the scorer never crashes because of a policy.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing as mp
import os
import time
import traceback
from pathlib import Path

import numpy as np


class PolicyFailureError(RuntimeError):
    """The policy could not produce scores; ``reason`` says why."""


def load_factory(spec: str):
    """``package.module:factory`` -> the factory callable."""
    if ":" not in spec:
        raise ValueError(f"policy must be 'package.module:factory', got {spec!r}")
    module_name, attr = spec.split(":", 1)
    return getattr(importlib.import_module(module_name), attr)


def build_policy(spec: str, checkpoint: str | None):
    factory = load_factory(spec)
    policy = factory(checkpoint) if checkpoint is not None else factory()
    if not callable(getattr(policy, "rank_heads", None)):
        raise TypeError(
            f"{spec} returned {type(policy).__name__}, which has no rank_heads(observation) method"
        )
    return policy


def _child(conn, spec: str, checkpoint: str | None, threads: int) -> None:
    try:
        import torch

        torch.set_num_threads(threads)
        policy = build_policy(spec, checkpoint)
        conn.send(("ready", None))
    except BaseException:
        conn.send(("error", "loading the policy failed:\n" + traceback.format_exc(limit=3)))
        return
    while True:
        msg = conn.recv()
        if msg is None:
            return
        try:
            scores = policy.rank_heads(msg)
            conn.send(("ok", np.asarray(scores).tolist() if scores is not None else None))
        except BaseException:
            conn.send(("error", "rank_heads raised:\n" + traceback.format_exc(limit=3)))


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class SandboxedPolicy:
    """A policy living in a child process; ``rank_heads`` raises :class:`PolicyFailureError`."""

    def __init__(self, spec: str, checkpoint: str | None = None, *, timeout_s: float = 20.0,
                 memory_mb: float = 4096, threads: int = 1) -> None:  # fmt: skip
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        ctx = mp.get_context("spawn")  # a clean interpreter: no state shared with the scorer
        self.conn, child_conn = ctx.Pipe()
        self.proc = ctx.Process(target=_child, args=(child_conn, spec, checkpoint, threads), daemon=True)
        self.proc.start()
        self._expect("loading the policy", startup=True)

    def _expect(self, what: str, startup: bool = False):
        deadline = time.monotonic() + self.timeout_s * (3 if startup else 1)
        while True:
            if self.conn.poll(0.02):
                try:
                    status, payload = self.conn.recv()
                except (EOFError, OSError):
                    self.close()
                    raise PolicyFailureError(f"the policy process died while {what}") from None
                if status == "error":
                    self.close()
                    raise PolicyFailureError(payload)
                return payload
            if not self.proc.is_alive():
                code = self.proc.exitcode
                self.close()
                raise PolicyFailureError(f"the policy process exited (code {code}) while {what}")
            if time.monotonic() > deadline:
                self.close()
                raise PolicyFailureError(f"time limit of {self.timeout_s:g} s exceeded while {what}")
            if _rss_mb(self.proc.pid) > self.memory_mb:
                self.close()
                raise PolicyFailureError(f"memory limit of {self.memory_mb:g} MB exceeded while {what}")

    def rank_heads(self, observation: np.ndarray):
        if self.proc is None:
            raise PolicyFailureError("the policy process is no longer running")
        self.conn.send(np.asarray(observation, dtype=np.float32))
        scores = self._expect("ranking heads")
        if scores is None:
            raise PolicyFailureError("rank_heads returned None")
        return scores  # validated by the scorer (circuit_gym.policy.check_scores)

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.is_alive():
                with contextlib.suppress(OSError):
                    self.conn.send(None)
                self.proc.join(timeout=1)
            if self.proc.is_alive():
                os.kill(self.proc.pid, 9)
                self.proc.join(timeout=5)
        finally:
            self.proc = None

    def __enter__(self) -> SandboxedPolicy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
