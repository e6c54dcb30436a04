"""What every table of the board says the same way: an entry's isolation, and the failed
submissions and refused result files."""

from __future__ import annotations

from circuit_gym.leaderboard.verification import track


def isolation_note(result: dict) -> str | None:
    """None if the policy was scored with complete isolation, else what the board says about it."""
    iso = result.get("isolation")
    if not isinstance(iso, dict):
        return "scored without isolation (not recorded)"
    if iso.get("complete") is True:
        return None
    missing = iso.get("missing") if isinstance(iso.get("missing"), list) else []
    return "scored without isolation" + (f" ({'; '.join(str(m) for m in missing)})" if missing else "")


def failures_markdown(failed: list[dict], refused: list[str], with_track: bool = False) -> list[str]:
    """The board's lines on failed submissions (each a failure, never an entry; ``with_track``: each
    names its track, where the list is not under its track's table) and refused files."""
    lines = []
    if failed:
        lines += ["", f"Failed submissions ({len(failed)}, no score):"]
        lines += [
            f"- {f['name']}{f' ({track(f)})' if with_track else ''}, {f['board']['check']}: "
            f"{f['failure']['type']}: {(str(f['failure'].get('reason') or '').splitlines() or [''])[0]}"
            for f in failed
        ]
    if refused:
        lines += ["", "Refused result files:"] + [f"- {r}" for r in refused]
    return lines
