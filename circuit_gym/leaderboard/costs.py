"""What an entry's episodes cost beside its score, one formula for every track's table: a submitted
policy's own CPU time per episode (it computes in its sandbox, which no LM pass count shows)."""

from __future__ import annotations


def policy_cpu_per_episode(entry: dict, episodes: int) -> float | None:
    """CPU seconds of the policy's calls (``diagnostics.policy_cpu.calls_s``) per public episode, or
    None where the result has no measurement (a builtin reference runs in the scorer; no ``/proc``)."""
    cpu = (entry.get("diagnostics") or {}).get("policy_cpu") or {}
    if not cpu.get("measured") or cpu.get("calls_s") is None or episodes <= 0:
        return None
    return float(cpu["calls_s"]) / episodes


def cpu_cell(seconds: float | None) -> str:
    """The table cell: '-' without a measurement, else two significant digits."""
    return "-" if seconds is None else f"{seconds:.2g}"
