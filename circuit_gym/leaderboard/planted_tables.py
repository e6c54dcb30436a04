"""The Planted track's tables (Markdown), from its result files (``circuit_gym/leaderboard/planted_scorer.py``).

Two tables, public seeds and secret models, one row per entry and one column per circuit kind
(and all kinds): precision / recall of the proposed circuit and AUC of the ranking against the
planted ground truth. A result whose content hash does not match its body, or that was scored
under another track definition, is refused with the file named.
"""

from __future__ import annotations

import json
from pathlib import Path

from circuit_gym.leaderboard import paths
from circuit_gym.leaderboard.planted_scorer import definition
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.tasks.planted import KINDS

RESULTS = paths.RESULTS_DIR / "planted"
COLUMNS = (*KINDS, "all")


def load_results(paths: list[Path] | None = None) -> list[dict]:
    """The scored results of ``paths`` (default: every file of ``results/planted/``), by name."""
    results = []
    for path in sorted(paths if paths is not None else RESULTS.glob("*.json")):
        result = json.loads(Path(path).read_text())
        if result.get("content_hash") != content_hash(result):
            raise ValueError(f"{path}: the content hash does not match the result (edited after scoring?)")
        if result.get("track") != "planted":
            raise ValueError(f"{path}: not a planted-track result")
        defined = {k: result["provenance"].get(k) for k in definition()}
        if defined != definition():
            raise ValueError(f"{path}: scored under another planted-track definition")
        if result["status"] == "scored":
            results.append(result)
    return sorted(results, key=lambda r: r["name"])


def _cell(summary: dict, column: str) -> str:
    row = summary.get(column)
    if row is None:
        return "-"
    return f"{row['precision']:.2f} / {row['recall']:.2f} / {row['auc']:.2f}"


def planted_table(results: list[dict], secret: bool = False) -> str:
    """The Markdown table of ``results`` on the public seeds, or (``secret``) on the secret
    models (entries scored without them are left out)."""
    header = "| entry | " + " | ".join(COLUMNS) + " |"
    lines = [header, "|---|" + "---|" * len(COLUMNS)]
    for r in results:
        scores = r.get("private", {}).get("scores") if secret else r["scores"]
        if scores is None:
            continue
        cells = " | ".join(_cell(scores["summary"], c) for c in COLUMNS)
        lines.append(f"| {r['name']} | {cells} |")
    return "\n".join(lines) + "\n"


def planted_tables(paths: list[Path] | None = None) -> str:
    """Both tables with their headings (what the board shows)."""
    results = load_results(paths)
    n_secret = {r["private"]["n_models"] for r in results if "private" in r}
    secret = f"### Secret models ({', '.join(map(str, sorted(n_secret)))} per kind, drawn from the maintainers' seed)"
    return "\n".join([
        "Cells: precision / recall of the proposed circuit, AUC of the ranking, against the planted truth.", "",
        f"### Public seeds ({len(definition()['public_seeds'])} per kind)", "", planted_table(results),
        secret, "", planted_table(results, secret=True),
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
