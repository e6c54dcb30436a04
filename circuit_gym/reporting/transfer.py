"""The transfer boards' tables as Markdown: each entry's quadrants and private column per track
(``table``, from a report's ``references``: the hard-circuits report's of the benchmark in force,
``docs/results/v8/report.json``, and zoo v1's archived report, ``docs/results/transfer/report.json``).
``scripts/gen_docs_numbers.py`` renders them into the docs."""

from __future__ import annotations

from circuit_gym import benchmark as B

UNSEEN = "unseen_task_unseen_model"


def _fmt(v: dict | None) -> str:
    if not v or v.get("value") is None:
        return "-"
    ci = v.get("ci95")
    ok = ci and all(isinstance(c, int | float) for c in ci)
    return f"{v['value']:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ok else "")


NAMES = {"private": "private model", "seen_task_seen_model": "seen task, seen model",
         "unseen_task_seen_model": "unseen task, seen model", "seen_task_unseen_model": "seen task, unseen model",
         UNSEEN: "unseen task, unseen model"}  # fmt: skip


def table(rep: dict, track: str, key: str, cols: tuple[str, ...] = ("private", *B.QUADRANTS)) -> str:
    """One Markdown table: every reference of ``track`` by its ``key`` ("k1", "k5" or "cpr") on the
    private model and in the four quadrants (or the columns ``cols`` names), best private value first."""
    lines = ["| entry | " + " | ".join(NAMES[c] for c in cols) + " | LM passes / episode |",
             "|---" * (2 + len(cols)) + "|"]  # fmt: skip
    entries = rep["references"][track]
    order = sorted(entries, key=lambda n: -((entries[n][key]["private"] or {}).get("value") or -9))
    for name in order:
        passes = entries[name].get("passes_per_episode")
        lines.append(f"| {name} | " + " | ".join(_fmt(entries[name][key][c]) for c in cols)
                     + f" | {'-' if passes is None else f'{passes:,.0f}'} |")  # fmt: skip
    return "\n".join(lines)
