"""The policy process's bootstrap: limits and a system-call filter, then the policy, then
the request loop. Run as a script (``python -I policy_child.py CONFIG``), so that starting
the child imports nothing of circuit_gym (whose import takes seconds): only the standard
library and numpy, before the policy's own imports.

Also imported by the scorer (:mod:`circuit_gym.leaderboard.sandbox`) for the frame format
and the limits, which both sides share. The socket protocol: length-prefixed frames
(4-byte big-endian length). A request is one byte naming the call, then ``.npy`` bytes
(``allow_pickle=False``): ``r`` + the observation (``rank_heads``), or ``a`` + the observation
+ the action mask (``act``, circuit track). Replies come back as JSON objects
``{"status": "booted" | "ready" | "ok" | "error", ...}``: ``scores`` (a list) for ``r``,
``action`` (a JSON number or boolean, as the policy returned it) for ``a``; the scorer
validates both.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.util
import io
import json
import resource
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

import numpy as np

# RLIMIT_DATA bounds the child's private writable memory (heap and anonymous mmap; measured:
# numpy and torch allocations past it fail with MemoryError / "can't allocate memory").
# RLIMIT_AS would count every mapping, and torch maps far more address space than it uses
# (CUDA builds reserve tens of GB), so it would refuse ordinary policies. What RLIMIT_DATA
# does not count (shared memory) the system-call filter refuses.
MEMORY_RLIMIT = "RLIMIT_DATA"
_MEMORY_MESSAGES = ("can't allocate memory", "cannot allocate memory", "out of memory", "std::bad_alloc")
# Largest frame either side accepts (a reply of one score per head is a few kB).
MAX_REPLY_BYTES = 4 << 20
# Most values the child turns into a reply (a GPT-2-sized model has 144 heads).
MAX_SCORES = 1 << 16
_HEADER = 4  # bytes of big-endian frame length


def split_spec(spec: str) -> tuple[str, str]:
    """``package.module:factory`` -> (module name, factory name); ValueError otherwise."""
    module_name, sep, attr = str(spec).partition(":")
    parts = module_name.split(".")
    if not sep or not attr.isidentifier() or not all(p.isidentifier() for p in parts):
        raise ValueError(f"policy must be 'package.module:factory', got {spec!r}")
    return module_name, attr


def load_factory(spec: str):
    """``package.module:factory`` -> the factory callable. Imports (executes) the module: call it
    only in the sandboxed child."""
    module_name, attr = split_spec(spec)
    return getattr(importlib.import_module(module_name), attr)


# Request kinds: the first byte of a request frame.
RANK, ACT = b"r", b"a"
_SIGNATURES = {"rank_heads": "rank_heads(observation)", "act": "act(observation, action_mask)"}


def build_policy(spec: str, checkpoint: str | None, methods: tuple[str, ...] = ("rank_heads",)):
    """The policy ``spec`` builds; TypeError unless it has every method in ``methods``."""
    factory = load_factory(spec)
    policy = factory(checkpoint) if checkpoint is not None else factory()
    for method in methods:
        if not callable(getattr(policy, method, None)):
            raise TypeError(
                f"{spec} returned {type(policy).__name__}, which has no {_SIGNATURES.get(method, method)} method"
            )
    return policy


def action_reply(action) -> dict:
    """The reply fields for what ``act`` returned: integers, booleans and floats as JSON numbers
    and booleans of the same kind (the scorer's ``check_action`` refuses all but a legal
    integer); anything else is an error here."""
    if isinstance(action, bool | np.bool_):
        return {"status": "ok", "action": bool(action)}
    if isinstance(action, int | np.integer):
        if not -(2**63) <= int(action) < 2**63:  # (and no 5,000-digit integer for json to refuse)
            return {"status": "error", "message": "act returned an integer outside the int64 range"}
        return {"status": "ok", "action": int(action)}
    if isinstance(action, float | np.floating):
        return {"status": "ok", "action": float(action)}
    return {
        "status": "error",
        "message": f"act returned {type(action).__name__} ({action!r:.80}), not an integer",
    }


def limit_memory(memory_mb: float) -> None:
    """Cap this process's (and its children's) private writable memory at ``memory_mb``."""
    _hard_limit(getattr(resource, MEMORY_RLIMIT), int(memory_mb * 2**20))


def _hard_limit(kind: int, limit: int) -> None:
    """Soft and hard limit ``limit`` (or the current hard limit, if lower): the policy cannot
    raise a hard limit back (that needs CAP_SYS_RESOURCE in the initial user namespace)."""
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(kind, (limit, limit))


def _failure(header: str, what: str, memory_mb: float) -> str:
    """The child's report of the exception being handled; a memory error says so first."""
    err = sys.exc_info()[1]
    text = traceback.format_exc(limit=3)
    if isinstance(err, MemoryError) or any(m in str(err).lower() for m in _MEMORY_MESSAGES):
        return f"memory limit of {memory_mb:g} MB ({MEMORY_RLIMIT}) exceeded while {what}:\n{text}"
    return f"{header}:\n{text}"


def send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(len(payload).to_bytes(_HEADER, "big") + payload)


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes | None:
    """``n`` bytes, or None at end of stream; TimeoutError past ``deadline`` (monotonic)."""
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            sock.settimeout(remaining)
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket, deadline: float | None) -> bytes | None:
    """One frame's payload, None at end of stream; ValueError if it is too large."""
    header = _recv_exact(sock, _HEADER, deadline)
    if header is None:
        return None
    size = int.from_bytes(header, "big")
    if size > MAX_REPLY_BYTES:
        raise ValueError(f"a message of {size} bytes, larger than the limit of {MAX_REPLY_BYTES} bytes")
    return _recv_exact(sock, size, deadline)


def _die_with_parent() -> None:
    """SIGKILL this process when the process that started it dies (Linux; best effort)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _reply(sock: socket.socket, status: str, **fields) -> None:
    send_frame(sock, json.dumps({"status": status, **fields}, allow_nan=True).encode())


def child_main() -> None:
    """The child's bootstrap: limits and filter first, then the policy (argv[1]: JSON config)."""
    config = json.loads(sys.argv[1])
    sock = socket.socket(fileno=config["fd"])
    memory_mb = config["memory_mb"]
    try:
        _die_with_parent()
        limit_memory(memory_mb)  # all before the policy's module is imported
        _hard_limit(resource.RLIMIT_CPU, config["cpu_s"])
        _hard_limit(resource.RLIMIT_FSIZE, config["file_mb"] << 20)
        _hard_limit(resource.RLIMIT_NOFILE, config["open_files"])
        _hard_limit(resource.RLIMIT_CORE, 0)
        if config["seccomp"]:
            _load_syscall_filter()
        # The scorer's import path first: circuit_gym may come from a source checkout, not an install.
        sys.path[:] = config["sys_path"]
        for name in config["preload"]:  # trusted packages most policies import (not on their clock)
            importlib.import_module(name)
        _reply(sock, "booted")
    except BaseException:
        _reply(sock, "error", message=_failure("starting the policy's process failed", "starting", memory_mb))
        return
    try:
        policy = build_policy(
            config["spec"], config["checkpoint"], tuple(config.get("methods", ("rank_heads",)))
        )
        _reply(sock, "ready")
    except BaseException:
        _reply(sock, "error", message=_failure("loading the policy failed", "loading the policy", memory_mb))
        return
    while True:
        try:
            frame = recv_frame(sock, None)
        except (OSError, ValueError):
            return
        if not frame:
            return  # the scorer is gone, or said stop
        kind, body = frame[:1], io.BytesIO(frame[1:])
        observation = np.load(body, allow_pickle=False)
        if kind == ACT:
            action_mask = np.load(body, allow_pickle=False)
            try:
                reply = action_reply(policy.act(observation, action_mask))
            except BaseException:
                reply = {
                    "status": "error",
                    "message": _failure("act raised", "choosing an action", memory_mb),
                }
            _reply(sock, **reply)
            continue
        try:
            scores = policy.rank_heads(observation)
            size = np.size(scores) if scores is not None else 0
            if size > MAX_SCORES:
                _reply(sock, "error", message=f"rank_heads returned {size} values, more than {MAX_SCORES}")
                continue
            scores = np.asarray(scores).tolist() if scores is not None else None
            try:
                _reply(sock, "ok", scores=scores)
            except TypeError:  # not JSON: objects, not numbers
                _reply(sock, "error", message=f"rank_heads returned {type(scores).__name__}, not numbers")
        except BaseException:
            _reply(sock, "error", message=_failure("rank_heads raised", "ranking heads", memory_mb))


def _load_syscall_filter() -> None:
    """Load syscall_filter.py beside this file by its path (no package import) and install it."""
    path = Path(__file__).with_name("syscall_filter.py")
    spec = importlib.util.spec_from_file_location("_circuit_gym_syscall_filter", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.load_filter()


if __name__ == "__main__":
    child_main()
