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
The child may read exactly the policy's own module file or regular package
(:func:`policy_location`); a namespace package is refused.

The child is started by :mod:`circuit_gym.leaderboard.isolation` (bubblewrap namespaces:
no view of the scorer's files, processes or network, nor of the package's models:
:func:`hidden_paths`) and, before it imports the policy,
its bootstrap (:mod:`circuit_gym.leaderboard.policy_child`, trusted code, run as a script so
that it imports nothing of circuit_gym) sets hard resource limits (memory as
``RLIMIT_DATA``, CPU time, file size, open files) and loads a seccomp filter
(:mod:`circuit_gym.leaderboard.syscall_filter`: no new processes, no ptrace, no memory the
data limit does not count). Its environment is rebuilt from nothing, and its only file
descriptors are stdin (``/dev/null``), stdout and stderr (a log file the scorer quotes in
failure messages) and its end of a socket pair.

What leaves the sandbox is checked twice over. Once the scorer starts the private part
(:func:`seal`), a failure is recorded in fixed words only (:func:`failure_record`: the check that
failed and the public part's episode count, never the policy's message, output or a value it
returned), so failing cannot carry what the policy saw there. The policy's CPU time is read by
the parent from ``/proc`` (:mod:`circuit_gym.leaderboard.process_cpu`), charged to each answer
from the previous one, capped (:data:`CALL_CPU_LIMIT_S`) and recorded (:func:`sandbox_usage`).

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
from dataclasses import dataclass
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
from circuit_gym.leaderboard.process_cpu import cpu_seconds, process_tree


class PolicyFailureError(RuntimeError):
    """The policy could not produce scores; the message says why, ``check`` names the check it
    failed (one of :data:`CHECKS`)."""

    def __init__(self, message: str, check: str = "reply") -> None:
        super().__init__(message)
        self.check = check


# The checks a policy can fail, by the sandbox's name for them: the only thing a failure in the
# private part reports (with the public part's episode count), since every message of that part
# may carry what the policy saw there.
CHECKS = {
    "start": "its process starting", "load": "loading the policy", "time": "the time limit per call",
    "cpu": "the CPU time limit per call", "exit": "its process staying alive (it exited)",
    "reply": "its reply's form", "raised": "its method returning (it raised)",
    "scores": "the scores check", "action": "the action check",
}  # fmt: skip
# The scorer's own checks of what the policy answered (circuit_gym.policy), by exception type.
_CHECK_OF_TYPE = {"InvalidScoresError": "scores", "InvalidActionError": "action"}


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


class NamespacePackageError(ModuleNotFoundError):
    """The policy's top-level package is a namespace package (a folder without ``__init__.py``)."""


def policy_location(spec: str) -> tuple[Path, Path]:
    """``(what the sandbox binds, the import root)`` of the policy module ``spec``: its own file
    when its top-level module is a single file, else its top-level *regular* package's own
    directory; the root is the folder holding either. Located without importing
    (:func:`locate_module`).

    A namespace package (a folder without ``__init__.py``) is refused: it spans every folder of
    its name beside any ``sys.path`` entry (the working directory's ``cache/`` among them), so
    binding it would show the policy whatever such folders hold."""
    module_name = split_spec(spec)[0]
    locate_module(module_name)  # the whole path exists (a clear error naming the missing part)
    top_name = module_name.split(".")[0]
    top = locate_module(top_name)
    if top.submodule_search_locations is not None:  # a package
        if top.origin is None or not top.has_location or Path(top.origin).name != "__init__.py":
            portions = ", ".join(str(p) for p in top.submodule_search_locations)
            raise NamespacePackageError(
                f"the policy's top-level package {top_name!r} is a namespace package (no __init__.py; "
                f"folders of that name found: {portions}). Submit a regular package (a folder "
                f"{top_name}/ with an __init__.py, holding every file the policy imports) or a single "
                "module file; the sandbox gives the policy exactly that package's folder or that file",
                name=top_name,
            )
        package = Path(top.origin).parent
        return package, package.parent
    if top.origin is None or not top.has_location:
        raise ModuleNotFoundError(
            f"the policy's module {top_name!r} has no file to load it from", name=top_name
        )
    return Path(top.origin), Path(top.origin).parent


def policy_files(spec: str) -> list[Path]:
    """The file(s) the policy module ``spec`` is loaded from: the module's file, or every ``.py``
    file of a (regular) package; located without importing. A policy in a namespace package is
    refused here (:func:`policy_location`), before anything is scored."""
    policy_location(spec)
    module_spec = locate_module(split_spec(spec)[0])
    if module_spec.submodule_search_locations:  # a package
        roots = [Path(p) for p in module_spec.submodule_search_locations if Path(p).is_dir()]
        return sorted({f for root in roots for f in root.rglob("*.py") if f.is_file()})
    origin = Path(module_spec.origin) if module_spec.origin and module_spec.has_location else None
    return [origin] if origin is not None and origin.is_file() else []


def child_sys_path(spec: str) -> list[str]:
    """The child's ``sys.path``: the scorer's, less the working directory unless it is the
    policy's own import root. The working directory is no implicit import root: inside the
    sandbox nothing of it but the policy's own file or package is bound anyway, and without
    namespaces (trusted scoring) it would let the policy import the neighbours of its package."""
    root = str(policy_location(spec)[1].resolve())
    cwd = os.path.realpath(os.getcwd())
    out: list[str] = []
    for p in sys.path:
        if not p:
            continue
        full = os.path.abspath(p)
        if os.path.realpath(full) == cwd and os.path.realpath(full) != root:
            continue
        if full not in out:
            out.append(full)
    return out


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
# CPU seconds the policy's processes may use per answer (rank_heads or act), counted from its
# previous answer: work a background thread does between calls is charged to the next one. What
# the policy computes itself (its own model passes) costs CPU, never an LM pass of the board's
# count; this limit caps it and the result records it (``diagnostics.policy_cpu``).
CALL_CPU_LIMIT_S = 60.0


def passes_note() -> str:
    """The board's sentence on what its passes count (the tables' captions use it)."""
    return (
        "A submitted policy's own computing in its sandbox is no LM pass here: its CPU time per call is "
        f"recorded in its result (diagnostics.policy_cpu) and capped at {CALL_CPU_LIMIT_S:g} s per call."
    )


def readable_paths(spec: str, checkpoint: str | None) -> list[Path]:
    """What the child may read: the interpreter, circuit_gym's source (less :func:`hidden_paths`),
    the policy's own file or regular package (:func:`policy_location`, never other folders of its
    name) and its checkpoint. Located without importing anything."""
    paths = interpreter_paths()
    for name in ("circuit_gym", "circuit_gym.baselines", "circuit_gym.leaderboard"):
        module_spec = locate_module(name)
        paths += [Path(p) for p in module_spec.submodule_search_locations or ()]
    paths.append(policy_location(spec)[0])
    if checkpoint is not None:
        paths.append(Path(checkpoint))
    return paths


# What of the package a policy does not see (issue 58): the weights of the language models it
# ships, and the planted generator, which writes a planted model's weights and truth from a seed.
# With either, a policy computes in its sandbox what the scorer computes outside it (the greedy
# reference's circuits, the public seeds' planted truth) at no LM pass of the board's count. The
# scorer, outside the sandbox, still loads both; a policy may bring a model as its checkpoint,
# whose hash its result records.
WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin", ".ckpt")
HIDDEN_PACKAGES = ("circuit_gym.models.planted",)


def hidden_paths() -> list[Path]:
    """Paths of circuit_gym's source the child must not see (absent in its sandbox): every weight
    file the package holds (:data:`WEIGHT_SUFFIXES`) and the folders of :data:`HIDDEN_PACKAGES`.
    Located without importing anything."""
    out: list[Path] = []
    for folder in locate_module("circuit_gym").submodule_search_locations or ():
        out += sorted(p for p in Path(folder).rglob("*") if p.suffix in WEIGHT_SUFFIXES and p.is_file())
    for name in HIDDEN_PACKAGES:
        out += [Path(p) for p in locate_module(name).submodule_search_locations or ()]
    return out


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
        self.episodes_answered = 0  # rank_heads answers: one per played episode, on every track
        self.sealed: _Sealed | None = None
        self._cpu = _CpuAccount(CALL_CPU_LIMIT_S)
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
                  "sys_path": child_sys_path(spec)}  # fmt: skip
        argv = [sys.executable, "-I", str(Path(__file__).with_name("policy_child.py")), json.dumps(config)]
        if found.bwrap is not None:
            cmd, env, cwd = (
                bwrap_command(found.bwrap, argv, readable_paths(spec, checkpoint), hidden_paths()),
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
        self._expect("starting the policy's process", BOOT_TIMEOUT_S, "booted", check="start")
        self._expect("loading the policy", 3 * timeout_s, "ready", check="load")
        self._cpu.start(process_tree(self.proc.pid))

    def seal(self) -> None:
        """The private part begins: from now on a failure reports only which check failed and
        the public part's episode count (:data:`CHECKS`), never a message or output of the
        policy's, and the CPU record stays the public part's."""
        if self.sealed is None:
            self.sealed = _Sealed(self.episodes_answered, self._log_tail(), self._cpu.record())

    def sealed_reason(self, check: str) -> str:
        """The whole reason of a failure in the private part: fixed text, the check, the count."""
        assert self.sealed is not None
        return (
            f"the policy failed {CHECKS.get(check, check)} in the private part, after "
            f"{self.sealed.public_episodes} public episodes (what it said or printed in the private "
            "part is not recorded)" + self.sealed.public_tail
        )

    def usage(self) -> dict:
        """The policy's CPU record (:class:`_CpuAccount`); the public part's once sealed."""
        return self.sealed.cpu if self.sealed is not None else self._cpu.record()

    def _log_tail(self) -> str:
        try:
            text = self._log_path.read_bytes()[-2000:].decode(errors="replace").strip()
        except OSError:
            return ""
        return f"\nlast output of the policy's process:\n{text}" if text else ""

    def _fail(self, message: str, check: str):
        tail = self._log_tail()
        self.close()
        if self.sealed is not None:
            raise PolicyFailureError(self.sealed_reason(check), check)
        raise PolicyFailureError(message + tail, check)

    def _expect(
        self, what: str, timeout_s: float, status: str = "ok", field: str = "scores", check: str = "reply"
    ):
        deadline = time.monotonic() + timeout_s
        try:
            frame = recv_frame(self.conn, deadline)
        except TimeoutError:
            self._fail(
                f"time limit of {timeout_s:g} s exceeded while {what}", "time" if check == "reply" else check
            )
        except ValueError as err:
            self._fail(f"the policy's process sent {err} while {what}", check)
        except OSError:
            frame = None
        if frame is None:
            code = self.proc.wait(timeout=5) if self.proc is not None else None
            self._fail(
                f"the policy process exited (code {code}) while {what} (a process at its memory limit of "
                f"{self.memory_mb:g} MB can die this way)",
                "exit" if check == "reply" else check,
            )
        try:
            reply = json.loads(frame)
            got = reply["status"]
        except (ValueError, KeyError, TypeError):
            self._fail(f"the policy's process sent something that is not a reply while {what}", check)
        if got == "error":
            self._fail(str(reply.get("message")), "raised" if check == "reply" else check)
        if got != status:
            self._fail(f"the policy's process sent {got!r} instead of {status!r} while {what}", check)
        if status == "ok":
            used = self._cpu.charge()
            if used is not None and used > self._cpu.limit_s:
                self._fail(
                    f"CPU time limit of {self._cpu.limit_s:g} s per call exceeded while {what} ({used:.1f} s "
                    "of CPU since the previous answer)",
                    "cpu",
                )
        return reply.get(field)

    def _request(self, kind: bytes, *arrays: np.ndarray) -> None:
        if self.proc is None:
            raise PolicyFailureError("the policy process is no longer running", "exit")
        buffer = io.BytesIO(kind)
        buffer.seek(len(kind))
        for array in arrays:
            np.save(buffer, array, allow_pickle=False)
        try:
            send_frame(self.conn, buffer.getvalue())
        except OSError:
            self._fail("the policy process is no longer running", "exit")

    def act(self, observation: np.ndarray, action_mask: np.ndarray):
        """What the policy's ``act`` returned, as a JSON number or boolean (or None): validated by
        the scorer (``circuit_gym.policy.check_action``), never trusted here."""
        self._request(ACT, np.asarray(observation, dtype=np.float32), np.asarray(action_mask, dtype=np.int8))
        return self._expect("choosing an action", self.timeout_s, field="action")

    def rank_heads(self, observation: np.ndarray):
        self._request(RANK, np.asarray(observation, dtype=np.float32))
        scores = self._expect("ranking heads", self.timeout_s)
        if scores is None:
            raise PolicyFailureError("rank_heads returned None", "scores")
        self.episodes_answered += 1
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


@dataclass(frozen=True)
class _Sealed:
    """What the sandbox kept at the start of the private part."""

    public_episodes: int
    public_tail: str
    cpu: dict


class _CpuAccount:
    """The policy's CPU time, read from ``/proc`` by the parent (:mod:`process_cpu`): loading
    (everything before its first answer), then per answer since the previous one."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.pids: tuple[int, ...] = ()
        self.mark: float | None = None
        self.loading_s: float | None = None
        self.calls, self.total_s, self.max_s = 0, 0.0, 0.0

    def start(self, pids: tuple[int, ...]) -> None:
        self.pids = pids
        self.mark = cpu_seconds(pids)
        self.loading_s = self.mark

    def charge(self) -> float | None:
        """CPU seconds since the previous answer (None where it cannot be read), recorded."""
        now = cpu_seconds(self.pids)
        if now is None or self.mark is None:
            return None
        used, self.mark = max(now - self.mark, 0.0), now
        self.calls += 1
        self.total_s += used
        self.max_s = max(self.max_s, used)
        return used

    def record(self) -> dict:
        """The result's ``policy_cpu``: seconds of CPU (``None`` where ``/proc`` is missing)."""
        measured = self.loading_s is not None
        return {
            "measured": measured, "limit_per_call_s": self.limit_s, "calls": self.calls,
            "loading_s": round(self.loading_s, 2) if self.loading_s is not None else None,
            "calls_s": round(self.total_s, 2) if measured else None,
            "per_call_mean_s": round(self.total_s / self.calls, 4) if measured and self.calls else None,
            "per_call_max_s": round(self.max_s, 2) if measured else None,
        }  # fmt: skip


def seal(sandbox: SandboxedPolicy | None, private: bool = True) -> None:
    """Mark the start of the private part (``private``) on ``sandbox`` (None: a builtin, trusted)."""
    if sandbox is not None and private:
        sandbox.seal()


def failure_record(err: BaseException, sandbox: SandboxedPolicy | None) -> dict:
    """A result's ``failure`` for ``err``. Before the private part: its type and message. Once
    the private part has begun (:meth:`SandboxedPolicy.seal`): its type, the check it failed and
    the public part's episode count, in fixed words; nothing the policy chose to say (a message,
    a value it returned, its output) reaches the record."""
    if sandbox is None or sandbox.sealed is None:
        return {"type": type(err).__name__, "reason": str(err)}
    check = getattr(err, "check", None) or _CHECK_OF_TYPE.get(type(err).__name__, "reply")
    return {"type": type(err).__name__, "check": check, "public_episodes": sandbox.sealed.public_episodes,
            "reason": sandbox.sealed_reason(check)}  # fmt: skip


def sandbox_usage(sandbox: SandboxedPolicy | None) -> dict:
    """``{"policy_cpu": ...}`` for a result's diagnostics, ``{}`` for a builtin."""
    return {} if sandbox is None else {"policy_cpu": sandbox.usage()}
