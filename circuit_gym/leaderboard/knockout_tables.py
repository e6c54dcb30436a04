"""The knock-out track's board section (Markdown), from its verified entries (``knockout_scorer``).

One row per entry, ranked on the secret planted models' knock-out area relative to exact greedy's
(the maintainers' column) where every entry has it, else on the public planted episodes'. Columns:
per part (secret planted models, public planted seeds, public trained models) the area relative to
greedy with its 95% t-interval and the backup recall; the entry's paired difference in area against
conditional attribution over the public episodes both played (the scorer's ``versus``); the LM
passes an episode (the environment's count of what the entry read; a reference's own count).
Public means are computed here from the result's episodes, planted and trained apart.
"""

from __future__ import annotations

import numpy as np

from circuit_gym.leaderboard.knockout_benchmark import knockout_benchmark
from circuit_gym.leaderboard.knockout_scorer import TRAINED_KIND
from circuit_gym.stats import mean_ci95

METRIC = "relative_area"
VERSUS = "conditional_attribution"


def _mean(rows: list[dict], metric: str) -> tuple[float, list[float] | None]:
    """Mean and interval of ``metric`` over the rows that have it: a kind without a backup records
    its backup recall as None (not a zero)."""
    values = [float(r[metric]) for r in rows if r.get(metric) is not None and np.isfinite(float(r[metric]))]
    return mean_ci95(values) if values else (float("nan"), None)


def knockout_row(entry: dict) -> dict:
    """One entry's cells: each part's area / greedy, its interval and backup recall; the paired area
    difference against conditional attribution (public); LM passes an episode (public mean)."""
    episodes = entry["scores"]["episodes"]
    planted = [r for r in episodes if r["kind"] != TRAINED_KIND]
    trained = [r for r in episodes if r["kind"] == TRAINED_KIND]
    secret = ((entry.get("private") or {}).get("scores") or {}).get("summary", {}).get("all")
    versus = entry["scores"].get("versus", {}).get(VERSUS, {}).get("all")
    return {
        "name": entry["name"],
        "check": entry.get("board", {}).get("check", ""),
        "secret": None
        if not secret
        else (secret[METRIC], secret.get(f"{METRIC}_ci95"), secret["backup_recall"]),
        "public": (*_mean(planted, METRIC), _mean(planted, "backup_recall")[0]),
        "trained": (*_mean(trained, METRIC), _mean(trained, "backup_recall")[0]) if trained else None,
        "versus": None
        if entry["name"] == VERSUS or not versus
        else (versus[METRIC], versus.get(f"{METRIC}_ci95")),
        "passes": float(np.mean([r["lm_passes"] for r in episodes])),
    }


def rank_knockout_rows(rows: list[dict]) -> list[dict]:
    """Best first: on the secret column when every row has it, else on the public planted one."""
    part = "secret" if rows and all(r["secret"] is not None for r in rows) else "public"

    def key(row: dict) -> tuple:
        value = row[part][0]
        return (-value if np.isfinite(value) else np.inf, row["name"])

    return sorted(rows, key=key)


def _area(cell: tuple | None) -> str:
    if cell is None:
        return "-"
    value, ci, recall = cell
    interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if _finite(ci) else ""  # one episode: no interval
    backup = "-" if recall is None or not np.isfinite(recall) else f"{recall:.2f}"
    return f"{value:.3f}{interval} / {backup}"


def _versus(cell: tuple | None) -> str:
    if cell is None:
        return "-"
    value, ci = cell
    return f"{value:+.3f}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if _finite(ci) else "")


def _finite(ci) -> bool:
    return ci is not None and None not in ci and bool(np.all(np.isfinite(ci)))


def knockout_markdown(rows: list[dict], track: str) -> str:
    """The track's section: its heading, what it measures, the ranked table."""
    bench = knockout_benchmark(track)
    about = (f"circuit-gym-knockout-{bench.version}: up to K = {bench.steps} heads ablated one at a time, the "
             "observation recomputed after each. Cells: knock-out area relative to exact greedy's [95% CI] / backup "
             f"recall. Secret: {bench.private_models} planted models per kind of the maintainers' draw and the "
             "private zoo models on the tasks whose backup pair their cards verify, pooled; public "
             f"planted: seeds {', '.join(map(str, bench.public_seeds))} of every kind; trained: zoo members "
             f"{', '.join(bench.trained_models) or '-'} on the tasks whose backup pair their cards verify. "
             f"vs {VERSUS}: the paired difference in area over the public episodes both played.")  # fmt: skip
    lines = [f"### Knock-out track ({track})", "", about, "",
             f"| # | entry | check | secret (planted, private models) | public planted | trained (public) | vs {VERSUS} | LM passes / episode |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for i, row in enumerate(rank_knockout_rows(rows), 1):
        lines.append(f"| {i} | {row['name']} | {row['check']} | {_area(row['secret'])} | {_area(row['public'])} | "
                     f"{_area(row['trained'])} | {_versus(row['versus'])} | {row['passes']:.0f} |")  # fmt: skip
    return "\n".join(lines) + "\n"
