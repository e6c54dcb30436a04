"""Run a submitted policy in an isolated child process, with time, memory and other limits.

The parent (the scorer) sends observations, the child answers with
``rank_heads(observation)`` (and, for a circuit-building policy, with
``act(observation, action_mask)``). A child that crashes, hangs past the time limit, allocates
past the memory limit or answers nonsense is reported as a :class:`PolicyFailureError`
(and killed); the scorer never crashes because of a policy.

The submitted module is imported **only in the child**. The parent finds its file(s) for
the result's hash, for a clear error on a wrong path and for what the sandbox lets the
child read with :func:`locate_module`, which asks the import system's finders where the
module is without executing any module code (not even its parent packages' ``__init__``).

The child is started by :mod:`circuit_gym.leaderboard.isolation` (bubblewrap namespaces:
no view of the scorer's files, processes or network) and, before it imports the policy,
its bootstrap (:mod:`circuit_gym.leaderboard.policy_child`, trusted code, run as a script so
that it imports nothing of circuit_gym) sets hard resource limits (memory as
``RLIMIT_DATA``, CPU time, file size, open files) and loads a seccomp filter
(:mod:`circuit_gym.leaderboard.syscall_filter`: no new processes, no ptrace, no memory the
data limit does not count). Its environment is rebuilt from nothing, and its only file
descriptors are stdin (``/dev/null``), stdout and stderr (a log file the scorer quotes in
failure messages) and its end of a socket pair.

The protocol on that socket (defined in ``policy_child``) is length-prefixed frames:
observations go down as ``.npy`` bytes, answers come back as JSON (never pickle: the parent would run code a hostile child
put in a pickle), each at most :data:`MAX_REPLY_BYTES`, read against a deadline, so a
child that stalls mid-message is a time-out, not a hung scorer.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from circuit_gym.leaderboard.isolation import (
    Isolation,
    IsolationUnavailableError,
    bwrap_command,
    child_env,
    interpreter_paths,
    probe,
)
from circuit_gym.leaderboard.policy_child import (  # noqa: F401 - re-exported: one definition
    ACT,
    MEMORY_RLIMIT,
    RANK,
    build_policy,
    load_factory,
    recv_frame,
    send_frame,
    split_spec,
)


class PolicyFailureError(RuntimeError):
    """The policy could not produce scores; ``reason`` says why."""


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


# The child's other limits (besides memory and the per-call time the parent enforces).
CPU_LIMIT_S = 3600  # RLIMIT_CPU: CPU seconds over the child's whole life (threads included)
FILE_SIZE_LIMIT_MB = 64  # RLIMIT_FSIZE: largest file it may write (its log, its /tmp)
OPEN_FILES_LIMIT = 1024  # RLIMIT_NOFILE
# Imported by the child's bootstrap (after its limits and filter, before the policy and its
# start-up limit): the package every reference policy imports, which takes seconds to import.
PRELOAD = ("circuit_gym",)
# Seconds the child's bootstrap may take to start the interpreter and import torch, before
# the policy's own start-up limit (3x the call limit) begins.
BOOT_TIMEOUT_S = 120.0


def readable_paths(spec: str, checkpoint: str | None) -> list[Path]:
    """What the child may read: the interpreter, circuit_gym's source, the policy's top-level
    package (or module file) and its checkpoint. Located without importing anything."""
    paths = interpreter_paths()
    for name in ("circuit_gym", "circuit_gym.baselines", "circuit_gym.leaderboard"):
        module_spec = locate_module(name)
        paths += [Path(p) for p in module_spec.submodule_search_locations or ()]
    top = locate_module(split_spec(spec)[0].split(".")[0])
    if top.submodule_search_locations:
        paths += [Path(p) for p in top.submodule_search_locations]
    elif top.origin and top.has_location:
        paths.append(Path(top.origin))
    if checkpoint is not None:
        paths.append(Path(checkpoint))
    return paths


class SandboxedPolicy:
    """A policy living in an isolated child process; ``rank_heads`` raises
    :class:`PolicyFailureError`. ``isolation`` says what was in force; with
    ``require_isolation``, a machine without all of it raises
    :class:`~circuit_gym.leaderboard.isolation.IsolationUnavailableError` instead. ``methods``:
    what the policy must have (``("rank_heads", "act")`` for the circuit track)."""

    def __init__(self, spec: str, checkpoint: str | None = None, *, timeout_s: float = 20.0,
                 memory_mb: float = 4096, threads: int = 1, require_isolation: bool = False,
                 isolate: bool = True, methods: tuple[str, ...] = ("rank_heads",)) -> None:  # fmt: skip
        split_spec(spec)
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        self.proc: subprocess.Popen | None = None
        found = probe()
        if not isolate:  # trusted code only: no namespaces, the limits as this machine gives them
            found = Isolation("setrlimit" + (" + seccomp" if found.limits else ""), False, False, False, True,
                              found.limits, ("namespaces: switched off by the caller",)
                              + tuple(m for m in found.missing if "seccomp" in m))  # fmt: skip
        self.isolation: Isolation = found
        if require_isolation and not found.complete:
            raise IsolationUnavailableError(
                "scoring requires the policy's isolation, and this machine lacks: " + "; ".join(found.missing)
            )
        checkpoint = str(Path(checkpoint).resolve()) if checkpoint is not None else None
        self._tmp = tempfile.TemporaryDirectory(prefix="circuit_gym_policy_")
        self._log_path = Path(self._tmp.name) / "policy.log"
        self.conn, child_sock = socket.socketpair()
        config = {"fd": child_sock.fileno(), "spec": spec, "checkpoint": checkpoint, "threads": threads,
                  "memory_mb": memory_mb, "cpu_s": CPU_LIMIT_S, "file_mb": FILE_SIZE_LIMIT_MB,
                  "open_files": OPEN_FILES_LIMIT, "preload": list(PRELOAD), "methods": list(methods), "seccomp": not any("seccomp" in m for m in found.missing),
                  "sys_path": [os.path.abspath(p) for p in sys.path if p]}  # fmt: skip
        argv = [sys.executable, "-I", str(Path(__file__).with_name("policy_child.py")), json.dumps(config)]
        if found.bwrap is not None:
            cmd, env, cwd = (
                bwrap_command(found.bwrap, argv, readable_paths(spec, checkpoint)),
                child_env(threads),
                None,
            )
        else:
            home = Path(self._tmp.name) / "home"
            home.mkdir()
            cmd, env, cwd = argv, child_env(threads, str(home)), str(home)
        try:
            with open(self._log_path, "wb") as log:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                             env=env, cwd=cwd, pass_fds=(child_sock.fileno(),), close_fds=True,
                                             start_new_session=True)  # fmt: skip
        finally:
            child_sock.close()  # the child holds its end; EOF here then means the child is gone
        self._expect("starting the policy's process", BOOT_TIMEOUT_S, "booted")
        self._expect("loading the policy", 3 * timeout_s, "ready")

    def _log_tail(self) -> str:
        try:
            text = self._log_path.read_bytes()[-2000:].decode(errors="replace").strip()
        except OSError:
            return ""
        return f"\nlast output of the policy's process:\n{text}" if text else ""

    def _fail(self, message: str):
        tail = self._log_tail()
        self.close()
        raise PolicyFailureError(message + tail)

    def _expect(self, what: str, timeout_s: float, status: str = "ok", field: str = "scores"):
        deadline = time.monotonic() + timeout_s
        try:
            frame = recv_frame(self.conn, deadline)
        except TimeoutError:
            self._fail(f"time limit of {timeout_s:g} s exceeded while {what}")
        except ValueError as err:
            self._fail(f"the policy's process sent {err} while {what}")
        except OSError:
            frame = None
        if frame is None:
            code = self.proc.wait(timeout=5) if self.proc is not None else None
            self._fail(
                f"the policy process exited (code {code}) while {what} (a process at its memory limit of "
                f"{self.memory_mb:g} MB can die this way)"
            )
        try:
            reply = json.loads(frame)
            got = reply["status"]
        except (ValueError, KeyError, TypeError):
            self._fail(f"the policy's process sent something that is not a reply while {what}")
        if got == "error":
            self._fail(str(reply.get("message")))
        if got != status:
            self._fail(f"the policy's process sent {got!r} instead of {status!r} while {what}")
        return reply.get(field)

    def _request(self, kind: bytes, *arrays: np.ndarray) -> None:
        if self.proc is None:
            raise PolicyFailureError("the policy process is no longer running")
        buffer = io.BytesIO(kind)
        buffer.seek(len(kind))
        for array in arrays:
            np.save(buffer, array, allow_pickle=False)
        try:
            send_frame(self.conn, buffer.getvalue())
        except OSError:
            self._fail("the policy process is no longer running")

    def act(self, observation: np.ndarray, action_mask: np.ndarray):
        """What the policy's ``act`` returned, as a JSON number or boolean (or None): validated by
        the scorer (``circuit_gym.policy.check_action``), never trusted here."""
        self._request(ACT, np.asarray(observation, dtype=np.float32), np.asarray(action_mask, dtype=np.int8))
        return self._expect("choosing an action", self.timeout_s, field="action")

    def rank_heads(self, observation: np.ndarray):
        self._request(RANK, np.asarray(observation, dtype=np.float32))
        scores = self._expect("ranking heads", self.timeout_s)
        if scores is None:
            raise PolicyFailureError("rank_heads returned None")
        return scores  # validated by the scorer (circuit_gym.policy.check_scores)

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            with contextlib.suppress(OSError):
                self.conn.shutdown(socket.SHUT_RDWR)  # the child reads end of stream and returns
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1)
            with contextlib.suppress(OSError):  # the whole session: bwrap (its sandbox dies with it)
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait(timeout=5)
        finally:
            self.proc = None
            with contextlib.suppress(OSError):
                self.conn.close()
            self._tmp.cleanup()

    def __enter__(self) -> SandboxedPolicy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
