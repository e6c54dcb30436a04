"""The committed ledger of private scorings (issue 58): MIB's "two private scorings a week",
enforced by code.

``circuit_gym/leaderboard/probing.py`` counts every private scoring in a ledger beside the private
seed file, outside the repository, and the board only printed the count. This ledger is
committed (``leaderboard/private_ledger.json``): one row per private scoring of an entry that goes
on the board, with its date (UTC), track, entry name, the seed file's SHA-256 and the result's
content hash. ``circuit-gym leaderboard score`` refuses, before anything runs, a private scoring
that would be the third of one name within 7 days, and appends the row of each one it writes
into the board's folders; ``render`` refuses an entry whose private part is on a seed file the
ledger governs (:data:`seed_files` or any row's) but has no row, or whose row is such a third
scoring. Reference entries (reviewed in ``leaderboard/references.json``, rescored by the
maintainers after a protocol bump) are not counted.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

from circuit_gym.leaderboard.paths import REPO_ROOT
from circuit_gym.leaderboard.probing import SCORINGS_PER_WEEK

LEDGER = REPO_ROOT / "leaderboard" / "private_ledger.json"
WINDOW_DAYS = 7


@dataclass(frozen=True)
class Ledger:
    """The ledger's rows in file order and the seed files (SHA-256) it governs."""

    scorings: tuple[dict, ...]
    seed_files: frozenset[str]
    rule_per_week: int = SCORINGS_PER_WEEK

    def governs(self, seed_sha: str | None) -> bool:
        return seed_sha is not None and (
            seed_sha in self.seed_files or any(r["seed_file_sha256"] == seed_sha for r in self.scorings)
        )


def load_ledger(path: Path = LEDGER) -> Ledger:
    """The ledger in ``path`` (an empty one where the file does not exist)."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return Ledger((), frozenset())
    return Ledger(tuple(data.get("scorings", ())), frozenset(data.get("seed_files", ())),
                  int(data.get("rule_per_week", SCORINGS_PER_WEEK)))  # fmt: skip


def _date(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def earlier_in_window(ledger: Ledger, name: str, day: dt.date, before: int | None = None) -> list[dict]:
    """The rows of ``name`` dated within the 7 days ending on ``day`` (``before``: only rows
    earlier in the file than that index)."""
    rows = ledger.scorings if before is None else ledger.scorings[:before]
    return [r for r in rows if r["name"] == name and 0 <= (day - _date(r["date"])).days < WINDOW_DAYS]


def week_refusal(ledger: Ledger, name: str, day: dt.date, before: int | None = None) -> str | None:
    """Why a private scoring of ``name`` on ``day`` breaks the weekly rule, or None."""
    earlier = earlier_in_window(ledger, name, day, before)
    if len(earlier) < ledger.rule_per_week:
        return None
    dates = ", ".join(f"{r['date']} ({r['track']})" for r in earlier)
    return (
        f"{name!r} would have {len(earlier) + 1} private scorings within {WINDOW_DAYS} days (the rule: at most "
        f"{ledger.rule_per_week}; the committed ledger leaderboard/private_ledger.json lists {dates})"
    )


def entry_refusal(ledger: Ledger, result: dict) -> str | None:
    """Why the board refuses the non-reference ``result``'s private part, or None: a private part
    on a seed file the ledger governs without a ledger row (same track, name and content hash),
    or a row that was a scoring past the weekly rule."""
    private = result.get("private")
    if not isinstance(private, dict) or not ledger.governs(private.get("seed_file_sha256")):
        return None
    track = result["track"]
    index = next((i for i, r in enumerate(ledger.scorings) if r["content_hash"] == result["content_hash"]
                  and r["name"] == result["name"] and r["track"] == track), None)  # fmt: skip
    if index is None:
        return (
            "its private scores are on the maintainers' seed file but the committed ledger of private scorings "
            "(leaderboard/private_ledger.json) has no row for this result: only a private scoring the "
            "maintainers ran and recorded goes on the board"
        )
    row = ledger.scorings[index]
    return week_refusal(ledger, row["name"], _date(row["date"]), before=index)


def append_scoring(result: dict, seed_sha: str, path: Path = LEDGER, day: dt.date | None = None) -> dict:
    """Append ``result``'s private scoring (today, UTC, unless ``day``) to the ledger in ``path``; the row."""
    day = day or dt.datetime.now(dt.UTC).date()
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        data = {"rule_per_week": SCORINGS_PER_WEEK, "seed_files": [], "scorings": []}
    row = {"date": day.isoformat(), "track": result["track"], "name": result["name"],
           "seed_file_sha256": seed_sha, "content_hash": result["content_hash"]}  # fmt: skip
    data["scorings"].append(row)
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
    return row
