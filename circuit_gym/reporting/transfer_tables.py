"""The transfer tracks' tables: one row per entry, ranked on the private model.

Columns anyone can reproduce come from the public zoo (four quadrants: seen / unseen task x
seen / unseen model); the ranking column, the held-out tasks on the maintainers' private model,
only the maintainers can (its weights are never committed). An entry scored without the private
model ranks below every entry that has it, by its unseen-task-unseen-model column.

In the core, below both apps: the board (``circuit_gym.leaderboard.board``) renders its transfer
sections with these functions and the main job (``circuit-gym run``,
``circuit_gym.baselines.main_job``) its own tables, so the two show the same columns.
"""

from __future__ import annotations

import math
import numbers

from circuit_gym import benchmark as B


def number(x, digits: int = 3) -> str:
    """A table cell's number, ``-`` where missing."""
    return "-" if x is None else f"{x:.{digits}f}"


def interval(ci) -> str:
    """`` [lo, hi]`` of a 95% interval, or nothing where it is missing or not two finite numbers
    (a result file stores a NaN bound as null)."""
    ok = ci is not None and len(ci) == 2 and all(isinstance(v, numbers.Real) and math.isfinite(v) for v in ci)
    return f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ok else ""


SHORT = {"seen_task_seen_model": "seen task, seen model", "unseen_task_seen_model": "unseen task, seen model",
         "seen_task_unseen_model": "seen task, unseen model", "unseen_task_unseen_model": "unseen task, unseen model"}  # fmt: skip


def _value(summary: dict | None, track: str, k: int = 1) -> tuple[float | None, list | None]:
    """(value, 95% interval) of one summary: best-of-``k`` recovery, or CPR on the circuit track."""
    if not summary:
        return None, None
    if B.is_transfer_circuit(track):
        return summary.get("cpr"), summary.get("cpr_ci95")
    s = summary[f"k{k}"]
    return s.get("recovery"), s.get("recovery_ci95")


def transfer_row(entry: dict) -> dict:
    """The table's fields of one verified transfer entry (both tracks)."""
    track, scores = entry["track"], entry["scores"]
    private = (entry.get("private") or {}).get("scores", {}).get("overall")
    row = {"name": entry["name"], "track": track, "check": entry["board"]["check"],
           "reference": entry["board"]["reference"], "policy": entry["provenance"]["policy"],
           "white_box": bool(entry["provenance"].get("white_box")),
           "private_weights": (entry.get("private") or {}).get("weights_hash")}  # fmt: skip
    ks = (1,) if B.is_transfer_circuit(track) else B.KS
    for k in ks:
        suffix = "" if B.is_transfer_circuit(track) else f"_k{k}"
        row[f"private{suffix}"], row[f"private{suffix}_ci"] = _value(private, track, k)
        for q in B.QUADRANTS:
            row[f"{q}{suffix}"], row[f"{q}{suffix}_ci"] = _value(scores["quadrants"].get(q), track, k)
    if B.is_transfer_circuit(track):
        unseen = scores["quadrants"].get("unseen_task_unseen_model") or {}
        row["passes"] = unseen.get("forward_passes")
    else:  # the language-model passes the solver ran in its rank call, per episode
        compute = scores.get("compute") or {}
        row["passes"] = sum(
            compute.get(f"{kind}_passes_per_episode", 0.0) for kind in ("forward", "partial", "backward")
        )
    return row


def rank_transfer_rows(rows: list[dict]) -> list[dict]:
    """Private model first (entries without it after), then the public unseen-unseen column."""
    key = "" if rows and B.is_transfer_circuit(rows[0]["track"]) else "_k1"

    def order(r: dict) -> tuple:
        private, public = r.get(f"private{key}"), r.get(f"unseen_task_unseen_model{key}")
        return (private is None, -(private or 0.0), -(public or 0.0), r["name"])

    return sorted(rows, key=order)


def transfer_about(track: str, note: str = "") -> str:
    """What a transfer track's columns mean (plain text, for the Markdown and the HTML page);
    ``note``: a last sentence (the board's: what its passes count)."""
    bench, kind = B.transfer_track(track)
    what = "CPR (higher is better)" if kind == B.CIRCUIT else "best-of-1 oracle recovery [95% CI] (best-of-5)"
    gated = (
        ""
        if bench.zoo_generation is None
        else " (each public model: the tasks its card's inclusion gate admits)"
    )
    return (
        f"{bench.benchmark_version(kind)}: {what}. Training models {', '.join(bench.train_models)}; held-out models "
        f"{', '.join(bench.held_out_models)} (public); training tasks {', '.join(bench.train_tasks)}; held-out tasks "
        f"{', '.join(bench.held_out_tasks)}{gated}; test split, {len(bench.seeds_of(kind))} batches per (model, task). "
        + (
            "Private model (the ranking column): the held-out tasks it performs (its inclusion gate) on a model "
            "trained by the zoo's public recipe with a secret seed; only the maintainers can reproduce it"
            if bench.private_models == 1
            else f"Private models (the ranking column, pooled): the held-out tasks each performs (its inclusion gate) "
            f"on {bench.private_models} models trained by the zoo's public recipe with secret seeds; only the "
            "maintainers can reproduce them"
        )
        + ". The four quadrant columns anyone can "
        "reproduce from the package. LM passes / episode: the passes the environment made for the policy's "
        "observation, and a white-box reference's own." + (f" {note}" if note else "")
    )


def transfer_heading(track: str) -> str:
    """A transfer track's heading: its benchmark version and kind (``Benchmark v8, transfer track, single head``)."""
    bench, kind = B.transfer_track(track)
    return f"Benchmark {bench.version}, transfer track, {'circuit building' if kind == B.CIRCUIT else 'single head'}"


def quadrant_cell(row: dict, quadrant: str, circuit: bool) -> str:
    """One quadrant's cell of a transfer table: the circuit track's score with its interval, or the
    single-head track's best-of-1 with its interval and best-of-5 in brackets."""
    q = quadrant
    if circuit:
        return f"{number(row.get(q))}{interval(row.get(f'{q}_ci'))}"
    return f"{number(row.get(f'{q}_k1'))}{interval(row.get(f'{q}_k1_ci'))} ({number(row.get(f'{q}_k5'))})"


def transfer_markdown(rows: list[dict], track: str, note: str = "") -> str:
    """The Markdown table of one transfer track, with what its columns mean (``note``: see
    :func:`transfer_about`)."""
    circuit = B.is_transfer_circuit(track)
    lines = [
        f"### {transfer_heading(track)}",
        "",
        transfer_about(track, note),
        "",
    ]
    cols = ["private model", *(SHORT[q] for q in B.QUADRANTS)]
    lines.append("| # | entry | check | " + " | ".join(cols) + " | LM passes / episode |")
    lines.append("|---" * (4 + len(cols)) + "|")
    for i, r in enumerate(rows, 1):
        cells = []
        for q in ("private", *B.QUADRANTS):
            cells.append(quadrant_cell(r, q, circuit))
        name = f"**{r['name']}**" if r["reference"] else r["name"]
        extra = f" {number(r.get('passes'), 0)} |"
        lines.append(f"| {i} | {name} | {r['check']} | " + " | ".join(cells) + f" |{extra}")
    return "\n".join(lines)
