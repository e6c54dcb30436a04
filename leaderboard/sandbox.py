"""Run a submitted policy in a child process with a time limit and a memory limit.

The parent sends observations, the child answers with ``rank_heads(observation)``. A
child that crashes, hangs past the time limit or allocates past the memory limit is
reported as a :class:`PolicyFailureError` (and killed); the scorer never crashes because of
a policy.

The submitted module is imported **only in the child**. The parent finds its file(s) for
the result's hash and for a clear error on a wrong path with :func:`locate_module`, which
asks the import system's finders where the module is without executing any module code
(not even the ``__init__`` of its parent packages).

Isolation is limited (see leaderboard/README.md): the child runs as the same user as the
scorer, so it can read every file the scorer can read, use the network, and look at
``/proc``. What it does get:

- its own session and process group (``os.setsid``), killed as a whole at the end, and it
  dies with the scorer (``PR_SET_PDEATHSIG``);
- a memory limit set with ``setrlimit(RLIMIT_DATA)`` before the policy is imported;
- a time limit per call, enforced by the parent;
- nothing but observations: no path, seed or task name is passed to it.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.machinery
import multiprocessing as mp
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path

import numpy as np

# RLIMIT_DATA bounds the child's private writable memory (heap and anonymous mmap; measured:
# numpy and torch allocations past it fail with MemoryError / "can't allocate memory").
# RLIMIT_AS would count every mapping, and torch maps far more address space than it uses
# (CUDA builds reserve tens of GB), so it would refuse ordinary policies.
MEMORY_RLIMIT = "RLIMIT_DATA"
_MEMORY_MESSAGES = ("can't allocate memory", "cannot allocate memory", "out of memory", "std::bad_alloc")


class PolicyFailureError(RuntimeError):
    """The policy could not produce scores; ``reason`` says why."""


def split_spec(spec: str) -> tuple[str, str]:
    """``package.module:factory`` -> (module name, factory name); ValueError otherwise."""
    module_name, sep, attr = str(spec).partition(":")
    parts = module_name.split(".")
    if not sep or not attr.isidentifier() or not all(p.isidentifier() for p in parts):
        raise ValueError(f"policy must be 'package.module:factory', got {spec!r}")
    return module_name, attr


def _find_spec(name: str, path: list[str] | None):
    """Ask the meta path finders (as ``import`` would) for ``name``'s spec; nothing is executed."""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__spec__", None) is not None:
        return module.__spec__  # already imported by the scorer itself: nothing new runs
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, path)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            return spec
    return None


def locate_module(module_name: str) -> importlib.machinery.ModuleSpec:
    """The spec of ``module_name``, found component by component without importing anything.

    ``importlib.util.find_spec`` would import (execute) the parent packages; here each
    component is looked up in its parent's ``submodule_search_locations`` instead.
    Raises ModuleNotFoundError naming the missing component.
    """
    parts = module_name.split(".")
    path: list[str] | None = None
    spec = None
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        spec = _find_spec(name, path)
        if spec is None:
            raise ModuleNotFoundError(
                f"No module named {name!r} (looking for the policy module {module_name!r} on the "
                "scorer's sys.path without importing it)",
                name=name,
            )
        if i < len(parts):
            if spec.submodule_search_locations is None:
                raise ModuleNotFoundError(
                    f"{name!r} is not a package, so {module_name!r} cannot exist", name=name
                )
            path = list(spec.submodule_search_locations)
    return spec


def policy_files(spec: str) -> list[Path]:
    """The file(s) the policy module ``spec`` is loaded from: the module's file, or every ``.py``
    file of a package; located without importing (:func:`locate_module`)."""
    module_spec = locate_module(split_spec(spec)[0])
    if module_spec.submodule_search_locations:  # a package (regular or namespace)
        roots = [Path(p) for p in module_spec.submodule_search_locations if Path(p).is_dir()]
        return sorted({f for root in roots for f in root.rglob("*.py") if f.is_file()})
    origin = Path(module_spec.origin) if module_spec.origin and module_spec.has_location else None
    return [origin] if origin is not None and origin.is_file() else []


def load_factory(spec: str):
    """``package.module:factory`` -> the factory callable. Imports (executes) the module: call it
    only in the sandboxed child."""
    module_name, attr = split_spec(spec)
    return getattr(importlib.import_module(module_name), attr)


def build_policy(spec: str, checkpoint: str | None):
    factory = load_factory(spec)
    policy = factory(checkpoint) if checkpoint is not None else factory()
    if not callable(getattr(policy, "rank_heads", None)):
        raise TypeError(
            f"{spec} returned {type(policy).__name__}, which has no rank_heads(observation) method"
        )
    return policy


def _die_with_parent() -> None:
    """Best effort (Linux): SIGKILL this process when the scorer that started it dies."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1


def limit_memory(memory_mb: float) -> None:
    """Cap this process's (and its children's) private writable memory at ``memory_mb``."""
    kind = getattr(resource, MEMORY_RLIMIT)
    limit = int(memory_mb * 2**20)
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(kind, (limit, limit))  # hard limit too: the policy cannot raise it back


def _failure(header: str, what: str, memory_mb: float) -> str:
    """The child's report of the exception being handled; a memory error says so first."""
    err = sys.exc_info()[1]
    text = traceback.format_exc(limit=3)
    if isinstance(err, MemoryError) or any(m in str(err).lower() for m in _MEMORY_MESSAGES):
        return f"memory limit of {memory_mb:g} MB ({MEMORY_RLIMIT}) exceeded while {what}:\n{text}"
    return f"{header}:\n{text}"


def _child(conn, spec: str, checkpoint: str | None, threads: int, memory_mb: float) -> None:
    try:
        with contextlib.suppress(OSError):
            os.setsid()  # own process group: the parent kills it and anything it started
        _die_with_parent()
        limit_memory(memory_mb)  # before the policy's module is imported
        import torch

        torch.set_num_threads(threads)
        policy = build_policy(spec, checkpoint)
        conn.send(("ready", None))
    except BaseException:
        conn.send(("error", _failure("loading the policy failed", "loading the policy", memory_mb)))
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # the scorer is gone
        if msg is None:
            return
        try:
            scores = policy.rank_heads(msg)
            conn.send(("ok", np.asarray(scores).tolist() if scores is not None else None))
        except BaseException:
            conn.send(("error", _failure("rank_heads raised", "ranking heads", memory_mb)))


class SandboxedPolicy:
    """A policy living in a child process; ``rank_heads`` raises :class:`PolicyFailureError`."""

    def __init__(self, spec: str, checkpoint: str | None = None, *, timeout_s: float = 20.0,
                 memory_mb: float = 4096, threads: int = 1) -> None:  # fmt: skip
        split_spec(spec)
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        ctx = mp.get_context("spawn")  # a clean interpreter: no state shared with the scorer
        self.conn, child_conn = ctx.Pipe()
        self.proc = ctx.Process(
            target=_child, args=(child_conn, spec, checkpoint, threads, memory_mb), daemon=True
        )
        self.proc.start()
        child_conn.close()  # the child holds its end; EOF here then means the child is gone
        self._expect("loading the policy", startup=True)

    def _expect(self, what: str, startup: bool = False):
        deadline = time.monotonic() + self.timeout_s * (3 if startup else 1)
        while True:
            if self.conn.poll(max(0.0, min(0.1, deadline - time.monotonic()))):
                try:
                    status, payload = self.conn.recv()
                except (EOFError, OSError):
                    self.close()
                    raise PolicyFailureError(
                        f"the policy process died while {what} (a process at its memory limit of "
                        f"{self.memory_mb:g} MB can die this way)"
                    ) from None
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

    def rank_heads(self, observation: np.ndarray):
        if self.proc is None:
            raise PolicyFailureError("the policy process is no longer running")
        try:
            self.conn.send(np.asarray(observation, dtype=np.float32))
        except OSError:
            self.close()
            raise PolicyFailureError("the policy process is no longer running") from None
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
            with contextlib.suppress(OSError):  # the child's group: whatever it started, too
                os.killpg(self.proc.pid, signal.SIGKILL)
            if self.proc.is_alive():
                with contextlib.suppress(OSError):
                    os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.join(timeout=5)
        finally:
            self.proc = None
            with contextlib.suppress(OSError):
                self.conn.close()

    def __enter__(self) -> SandboxedPolicy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
