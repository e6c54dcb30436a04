"""The transfer tracks' tables on the board: the core's rows and columns
(:mod:`circuit_gym.reporting.transfer_tables`, shared with the main job), ranked the board's way,
with the board's two columns more: a submitted policy's own CPU time per episode beside its LM
passes, and the marker of an entry that awaits its private score; an entry whose policy ran without
the complete sandbox is marked "(not isolated)" and listed with what was missing under the table.

An entry scored without the private model (any newcomer: only the maintainers hold it) is not
ranked last. It is placed on what it has: directly above the highest-ranked entry whose public
unseen-task-unseen-model score it beats, so no entry above it scores below it on that column
(it is never below an entry it beats on every column it has), and it is marked "awaiting the
maintainers' private score" until they score it.
"""

from __future__ import annotations

from circuit_gym import benchmark as B
from circuit_gym.leaderboard import costs
from circuit_gym.leaderboard.tables import isolation_note
from circuit_gym.reporting import transfer_tables as T
from circuit_gym.reporting.transfer_tables import SHORT, number, quadrant_cell, transfer_heading

__all__ = [
    "AWAITING",
    "SHORT",
    "board_note",
    "policy_cpu_per_episode",
    "rank_transfer_rows",
    "transfer_about",
    "transfer_markdown",
    "transfer_row",
]

AWAITING = "awaiting the maintainers' private score"
# The public column an entry without a private score is placed by: the public analogue of the
# ranking column (held-out tasks on models the policy never trained on).
PLACING = "unseen_task_unseen_model"


def board_note() -> str:
    """The board's sentence on what its compute columns count (every track's caption)."""
    return (
        "A submitted policy's own computing in its sandbox is no LM pass: its CPU time is the "
        "column policy CPU s / episode (its calls' CPU time over the public episodes, from the result's "
        "diagnostics.policy_cpu; '-' for the package's white-box references, which run in the scorer). "
        "The time limits of a call: leaderboard/README.md, 'Limits of a submitted policy'."
    )


def _public_episodes(entry: dict) -> int:
    """The public episodes of a transfer result (its quadrants' episode counts)."""
    total = 0
    for summary in (entry.get("scores") or {}).get("quadrants", {}).values():
        if summary:
            total += int(summary["k1"]["episodes"] if "k1" in summary else summary.get("episodes", 0))
    return total


def policy_cpu_per_episode(entry: dict) -> float | None:
    """A submitted policy's CPU seconds per public episode (``costs.policy_cpu_per_episode``)."""
    return costs.policy_cpu_per_episode(entry, _public_episodes(entry))


def transfer_row(entry: dict) -> dict:
    """The core's row of a verified transfer entry, with its policy CPU time per episode and
    what the board says of its isolation (None: complete)."""
    return {
        **T.transfer_row(entry),
        "policy_cpu": policy_cpu_per_episode(entry),
        "isolation": isolation_note(entry),
    }


def rank_transfer_rows(rows: list[dict]) -> list[dict]:
    """Entries with a private score by it (then the public unseen-unseen column, as the core
    ranks them); each entry without one placed above the first entry whose public unseen-unseen
    score it beats (strictly), and marked ``awaiting``. Rows are copied, never changed."""
    key = "" if rows and B.is_transfer_circuit(rows[0]["track"]) else "_k1"
    scored = T.rank_transfer_rows(
        [dict(r, awaiting=False) for r in rows if r.get(f"private{key}") is not None]
    )
    waiting = [dict(r, awaiting=True) for r in rows if r.get(f"private{key}") is None]
    waiting.sort(
        key=lambda r: (r.get(f"{PLACING}{key}") is None, -(r.get(f"{PLACING}{key}") or 0.0), r["name"])
    )
    out = list(scored)
    for r in waiting:
        mine = r.get(f"{PLACING}{key}")
        beaten = (
            i for i, s in enumerate(out) if mine is not None and (s.get(f"{PLACING}{key}") is None or s[f"{PLACING}{key}"] < mine)
        )  # fmt: skip
        out.insert(next(beaten, len(out)), r)
    return out


def transfer_about(track: str) -> str:
    """What a transfer track's columns mean, with the board's note."""
    return T.transfer_about(track, board_note())


_cpu = costs.cpu_cell


def transfer_markdown(rows: list[dict], track: str) -> str:
    """The Markdown table of one transfer track on the board (rows ranked by :func:`rank_transfer_rows`)."""
    circuit = B.is_transfer_circuit(track)
    cols = [
        "private model",
        *(SHORT[q] for q in B.QUADRANTS),
        "LM passes / episode",
        "policy CPU s / episode",
    ]
    lines = [f"### {transfer_heading(track)}", "", transfer_about(track), ""]
    lines.append("| # | entry | check | " + " | ".join(cols) + " |")
    lines.append("|---" * (3 + len(cols)) + "|")
    for i, r in enumerate(rows, 1):
        cells = []
        for q in ("private", *B.QUADRANTS):
            awaiting = q == "private" and r.get("awaiting")
            cells.append(AWAITING if awaiting else quadrant_cell(r, q, circuit))
        name = f"**{r['name']}**" if r["reference"] else r["name"]
        if r.get("awaiting"):
            name += f" ({AWAITING}; placed on its public scores)"
        cells += [number(r.get("passes"), 0), _cpu(r.get("policy_cpu"))]
        check = f"{r['check']}{' (not isolated)' if r.get('isolation') else ''}"
        lines.append(f"| {i} | {name} | {check} | " + " | ".join(cells) + " |")
    unisolated = [r for r in rows if r.get("isolation")]
    if unisolated:
        lines += ["", "Not isolated: these entries' policies ran without the complete sandbox (trust them as you "
                  "trust their code):", *(f"- {r['name']}: {r['isolation']}" for r in unisolated)]  # fmt: skip
    return "\n".join(lines)
