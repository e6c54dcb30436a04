"""The probing ledger: every private scoring, counted per submitter and per policy.

Each run on private material (private seeds, a private model, secret planted models) tells its
submitter something about that material: the private scores themselves, and, where a run fails,
that it failed. Repeated often enough, that maps what the private part holds, so a real board
limits how often one may ask (MIB: two submissions per user per week, on a private test set
scored only by its maintainers). This module keeps the count.

The ledger is a JSON-lines file **beside the private seed file** (:data:`LEDGER_NAME`), with the
private material and never in the repository: one line per private scoring, written before the
run starts (a run that crashes or fails counted too), holding the time, the track, the
submitter's name (the entry name) and a weights-free digest of the policy's source files
(:func:`policy_digest`: a new checkpoint of the same code is the same policy). A result scored on
private material records the counts (``probing``) and the board shows them; the rule itself
(:data:`SCORINGS_PER_WEEK`) is the maintainers' to apply, stated in docs/leaderboard.md, and an
entry over it is marked.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from circuit_gym.leaderboard.paths import REPO_ROOT
from circuit_gym.leaderboard.provenance import files_hash

LEDGER_NAME = "private_scorings.jsonl"
SCORINGS_PER_WEEK = 2  # MIB's rule for its private test set
WEEK_S = 7 * 24 * 3600


def ledger_path(private_seeds: str | Path) -> Path:
    """Where the ledger of the private material ``private_seeds`` belongs: beside it; a seed file
    inside the repository is refused (the ledger, like the seeds, must stay out of it)."""
    folder = Path(private_seeds).resolve().parent
    if folder == REPO_ROOT.resolve() or REPO_ROOT.resolve() in folder.parents:
        raise ValueError(
            f"private seed file {private_seeds} lies in the repository: keep private material (and its "
            "probing ledger) outside it"
        )
    return folder / LEDGER_NAME


def policy_digest(policy: str) -> str:
    """SHA-256 of the policy's source files, no checkpoint (``builtin:NAME`` is its own digest)."""
    if policy.startswith("builtin:"):
        return policy
    return files_hash(policy, None)


def _entries(path: Path) -> list[dict]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


def record_private_scoring(
    private_seeds: str | Path | None, name: str, policy: str, track: str, now: float | None = None
) -> dict:
    """Append this scoring to the ledger of ``private_seeds`` and return the result's
    ``{"probing": counts}``; ``{}`` when nothing private is scored (``private_seeds`` None)."""
    if private_seeds is None:
        return {}
    path = ledger_path(private_seeds)
    now = round(time.time() if now is None else now, 3)
    digest = policy_digest(policy)
    line = {"time": now, "track": track, "submitter": name, "policy_digest": digest}
    # One write of one line with O_APPEND: concurrent scorings never interleave within a line.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(line, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)
    mine = [e for e in _entries(path) if e["submitter"] == name]
    week = [e for e in mine if now - WEEK_S < e["time"] <= now]
    return {
        "probing": {
            "submitter_scorings": len(mine),
            "submitter_scorings_7d": len(week),
            "policy_scorings": sum(e["policy_digest"] == digest for e in _entries(path)),
            "rule_per_week": SCORINGS_PER_WEEK,
        }
    }


def over_rule(result: dict) -> bool:
    """Whether ``result`` was scored past the week's allowance of its submitter."""
    probing = result.get("probing") or {}
    return probing.get("submitter_scorings_7d", 0) > probing.get("rule_per_week", SCORINGS_PER_WEEK)


def probing_note(result: dict) -> str:
    """The board's words for a result's count (empty for a result without private scoring)."""
    probing = result.get("probing")
    if not probing:
        return ""
    note = f"private scoring {probing['submitter_scorings_7d']} of the submitter's week"
    return note + (f" (over the rule of {probing['rule_per_week']})" if over_rule(result) else "")


def probing_markdown(results: list[dict]) -> str:
    """The board's lines on private scorings: each entry scored on private material with its
    count (empty when no result records one, as for results scored before the ledger)."""
    noted = [(r["name"], r["track"], probing_note(r)) for r in results if r.get("probing")]
    if not noted:
        return ""
    lines = [f"\nPrivate scorings (the maintainers' probing ledger; the rule: at most {SCORINGS_PER_WEEK} a "
             "week per submitter):"] + [f"- {name} ({track}): {note}" for name, track, note in noted]  # fmt: skip
    return "\n".join(lines) + "\n"
