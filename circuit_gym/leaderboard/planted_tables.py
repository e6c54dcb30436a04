"""The Planted track's tables (Markdown), from its result files (``circuit_gym/leaderboard/planted_scorer.py``).

Every function takes the track (a row of ``planted_scorer.PLANTED_BENCHMARKS``: ``planted``, the
default, ``v8-planted``). Two tables, public seeds and secret models, one row per entry and one
column per circuit kind of the track (and all kinds): precision / recall of the proposed circuit and AUC of the ranking against the
planted ground truth. A result whose content hash does not match its body, or that was scored
under another track definition, is refused with the file named.
"""

from __future__ import annotations

import json
from pathlib import Path

from circuit_gym.leaderboard import costs
from circuit_gym.leaderboard.planted_scorer import TRACK, definition, planted_benchmark
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.tracks import track as track_row


def columns(track: str = TRACK) -> tuple[str, ...]:
    return (*planted_benchmark(track).kinds, "all")


def load_results(paths: list[Path] | None = None, track: str = TRACK) -> list[dict]:
    """The scored results of ``paths`` (default: every file of the track's results folder), by name."""
    results = []
    for path in sorted(paths if paths is not None else track_row(track).results_dir.glob("*.json")):
        result = json.loads(Path(path).read_text())
        if result.get("content_hash") != content_hash(result):
            raise ValueError(f"{path}: the content hash does not match the result (edited after scoring?)")
        if result.get("track") != track:
            raise ValueError(f"{path}: not a {track}-track result")
        defined = {k: result["provenance"].get(k) for k in definition(track)}
        if defined != definition(track):
            raise ValueError(f"{path}: scored under another {track}-track definition")
        if result["status"] == "scored":
            results.append(result)
    return sorted(results, key=lambda r: r["name"])


def _cell(summary: dict, column: str) -> str:
    row = summary.get(column)
    if row is None:
        return "-"
    return f"{row['precision']:.2f} / {row['recall']:.2f} / {row['auc']:.2f}"


def _costs(result: dict) -> list[str]:
    """LM passes and the policy's own CPU seconds per public episode (the public table's last columns)."""
    episodes = result["scores"].get("episodes") or []
    passes = [e["forward_passes"] for e in episodes if e.get("forward_passes") is not None]
    mean_passes = f"{sum(passes) / len(passes):.0f}" if passes else "-"
    return [mean_passes, costs.cpu_cell(costs.policy_cpu_per_episode(result, len(episodes)))]


def planted_table(results: list[dict], secret: bool = False, track: str = TRACK) -> str:
    """The Markdown table of ``results`` on the public seeds, or (``secret``) on the secret
    models (entries scored without them are left out). The public table adds what each entry's
    episodes cost: LM passes and the policy's own CPU seconds per episode."""
    shown = columns(track)
    extra = [] if secret else ["LM passes / episode", "policy CPU s / episode"]
    header = "| entry | " + " | ".join([*shown, *extra]) + " |"
    lines = [header, "|---|" + "---|" * (len(shown) + len(extra))]
    for r in results:
        scores = r.get("private", {}).get("scores") if secret else r["scores"]
        if scores is None:
            continue
        cells = [_cell(scores["summary"], c) for c in shown] + ([] if secret else _costs(r))
        lines.append(f"| {r['name']} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def planted_tables(paths: list[Path] | None = None, track: str = TRACK) -> str:
    """Both tables with their headings (what the board shows)."""
    results = load_results(paths, track)
    n_secret = {r["private"]["n_models"] for r in results if "private" in r}
    secret = f"### Secret models ({', '.join(map(str, sorted(n_secret)))} per kind, drawn from the maintainers' seed)"
    return "\n".join([
        "Cells: precision / recall of the proposed circuit, AUC of the ranking, against the planted truth.", "",
        f"### Public seeds ({len(planted_benchmark(track).public_seeds)} per kind)", "",
        planted_table(results, track=track), secret, "", planted_table(results, secret=True, track=track),
    ])  # fmt: skip


def planted_headline(result: dict) -> list[str]:
    """A scored Planted result, for the terminal: precision / recall / AUC over all kinds."""
    lines = [
        "public seeds, all kinds: "
        + _cell(result["scores"]["summary"], "all")
        + " (precision / recall / AUC)"
    ]
    if "private" in result:
        lines.append("secret models, all kinds: " + _cell(result["private"]["scores"]["summary"], "all"))
    return lines
