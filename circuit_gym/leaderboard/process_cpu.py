"""CPU time of a process tree, read by the parent from ``/proc`` (Linux).

The sandbox charges a policy for the CPU its processes use (:mod:`circuit_gym.leaderboard.sandbox`).
The numbers are read from outside: the policy runs in the same process as its bootstrap, so
anything the child reported about itself the policy could rewrite. ``/proc/<pid>/stat`` of a
process counts all its threads (``utime`` + ``stime``, fields 14 and 15); the sandbox's processes
are found once, by their parent pids, since the policy cannot start new ones (the system-call
filter refuses ``fork``). Elsewhere (no ``/proc``) every reading is None and nothing is charged.
"""

from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (which may hold spaces)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def process_tree(pid: int) -> tuple[int, ...]:
    """``pid`` and every descendant of it alive now (empty without ``/proc``)."""
    children: dict[int, list[int]] = {}
    try:
        entries = [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return ()
    for entry in entries:
        fields = _stat_fields(entry)
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(entry)
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return tuple(found)


def cpu_seconds(pids: tuple[int, ...]) -> float | None:
    """User + system CPU seconds of ``pids`` (all threads); a process gone counts 0. None without
    ``/proc``."""
    if not pids or not Path("/proc/self/stat").exists():
        return None
    ticks = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14, 15)
    return ticks / _TICKS
