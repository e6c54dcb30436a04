"""Build the leaderboard from scorer-written result files only.

Each file is verified before it is shown: its content hash must match its content, and
its provenance must match the current benchmark (version, tasks, split, seeds, ablation,
lambda, package version, model weights). A refused file is named with the reason and
never shown. The reference entries (random, greedy, PPO) must be present.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

import circuit_gym
from circuit_gym.leaderboard import benchmark as B
from circuit_gym.leaderboard.scorer import content_hash
from circuit_gym.plots import _pyplot

RESULTS_DIR = Path(__file__).resolve().parent / "results"
MARK_BEGIN, MARK_END = "<!-- board:begin -->", "<!-- board:end -->"


class RefusedResultError(ValueError):
    pass


def verify(path: Path, weights_hash: str | None) -> dict:
    """The result in ``path`` if it is authentic and current; else :class:`RefusedResultError`."""
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise RefusedResultError(f"{path}: not a readable JSON result ({type(err).__name__})") from None
    if not isinstance(result, dict) or "content_hash" not in result:
        raise RefusedResultError(
            f"{path}: no content hash; only files written by `circuit-gym leaderboard score` count"
        )
    if content_hash(result) != result["content_hash"]:
        raise RefusedResultError(f"{path}: content hash mismatch: the file was edited after scoring")
    prov = result.get("provenance", {})
    for key, expected in B.definition().items():
        if prov.get(key) != expected:
            raise RefusedResultError(
                f"{path}: scored under a different benchmark ({key}: {prov.get(key)!r} != {expected!r})"
            )
    if prov.get("package_version") != circuit_gym.__version__:
        raise RefusedResultError(
            f"{path}: scored with circuit_gym {prov.get('package_version')}, not {circuit_gym.__version__}"
        )
    if weights_hash is not None and prov.get("weights_hash") != weights_hash:
        raise RefusedResultError(f"{path}: scored on other model weights ({prov.get('weights_hash')})")
    return result


def rescore_matches(path: Path, result: dict) -> None:
    """Re-run the scorer on the recorded policy; refuse unless the scores are identical.

    A content hash proves a file was not edited by accident, but anyone can recompute
    it; re-scoring is what makes hand-edited numbers impossible to slip in.
    """
    from circuit_gym.leaderboard.scorer import canonical_json, score

    prov = result["provenance"]
    policy = prov["policy"]
    builtin = policy.split(":", 1)[1] if policy.startswith("builtin:") else None
    fresh = score(result["name"], policy_spec=None if builtin else policy, checkpoint=prov.get("checkpoint"),
                  builtin=builtin, model=prov["model"])  # fmt: skip
    if fresh.get("status") != result.get("status") or canonical_json(fresh.get("scores")) != canonical_json(
        result.get("scores")
    ):
        raise RefusedResultError(f"{path}: re-scoring {policy} gives different scores than the file claims")
    if fresh["provenance"]["policy_files_hash"] != prov["policy_files_hash"]:
        raise RefusedResultError(f"{path}: the policy's files changed since it was scored")


def collect(
    paths: list[Path], weights_hash: str | None, rescore: bool = False
) -> tuple[list[dict], list[str], list[dict]]:
    """(scored entries, refusal messages, failure records)."""
    entries, refused, failed = [], [], []
    for path in paths:
        try:
            result = verify(path, weights_hash)
            if rescore:
                rescore_matches(path, result)
        except RefusedResultError as err:
            refused.append(str(err))
            continue
        (entries if result.get("status") == "scored" else failed).append(result)
    return entries, refused, failed


def _row(e: dict) -> dict:
    s = e["scores"]
    return {
        "name": e["name"], "k5": s["overall"]["k5"]["recovery_mean"], "k5_ci": s["overall"]["k5"]["recovery_ci95"],
        "k1": s["overall"]["k1"]["recovery_mean"], "top1": s["overall"]["k1"]["top1_rate"],
        "spread": s["reproducibility"]["k5_recovery_spread"],
        "consistency": float(np.mean(list(s["consistency_top5_jaccard"].values()))),
        "white_box": e["provenance"]["white_box"], "policy": e["provenance"]["policy"],
        "episodes": s["overall"]["k5"]["episodes"],
    }  # fmt: skip


def rank_rows(rows: list[dict]) -> list[dict]:
    """Best-of-5 recovery first; ties (common with 16 heads) go to best-of-1, then top-1 hits."""
    return sorted(rows, key=lambda r: (-r["k5"], -r["k1"], -r["top1"]))


def markdown(rows: list[dict], refused: list[str], failed: list[dict]) -> str:
    lines = [
        f"Benchmark `{B.BENCHMARK_VERSION}`: held-out tasks {', '.join(B.HELD_OUT_TASKS)} ({B.SPLIT} split), "
        f"seeds 0-{len(B.EVAL_SEEDS) - 1}, {B.ABLATION} ablation, lambda {B.LAM}.",
        "",
        "| rank | entry | best-of-5 recovery (95% CI) | best-of-1 recovery | top-1 hit | reproducibility spread | top-5 consistency | policy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows, 1):
        wb = " (white-box: reads the task metric)" if r["white_box"] else ""
        lines.append(
            f"| {i} | {r['name']}{wb} | {r['k5']:.3f} [{r['k5_ci'][0]:.3f}, {r['k5_ci'][1]:.3f}] | {r['k1']:.3f} "
            f"| {r['top1']:.2f} | {r['spread']:.3f} | {r['consistency']:.2f} | `{r['policy']}` |"
        )
    if failed:
        lines += ["", "Failed submissions (no score):"]
        lines += [
            f"- {f['name']}: {f['failure']['type']}: {f['failure']['reason'].splitlines()[0]}" for f in failed
        ]
    if refused:
        lines += ["", "Refused result files:"] + [f"- {r}" for r in refused]
    return "\n".join(lines)


def _bar_chart(rows: list[dict], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * len(rows)))
    names = [r["name"] for r in rows][::-1]
    vals = [r["k5"] for r in rows][::-1]
    errs = np.array([[r["k5"] - r["k5_ci"][0], r["k5_ci"][1] - r["k5"]] for r in rows][::-1]).T
    ax.barh(names, vals, xerr=errs, color=["#c44" if r["white_box"] else "#48a" for r in rows][::-1])
    ax.axvline(0.96, ls="--", c="gray", lw=1)
    ax.set_xlabel("held-out best-of-5 oracle recovery")
    ax.set_title(B.BENCHMARK_VERSION, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _radar(row: dict, path: Path) -> None:
    plt = _pyplot()
    axes = [
        "best-of-5\nrecovery",
        "best-of-1\nrecovery",
        "top-1 hit",
        "reproducibility\n(1 - spread)",
        "top-5\nconsistency",
    ]
    vals = [row["k5"], row["k1"], row["top1"], 1 - min(1.0, row["spread"]), row["consistency"]]
    vals = [float(np.clip(v, 0, 1)) for v in vals]
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False).tolist()
    fig = plt.figure(figsize=(3.6, 3.6))
    ax = fig.add_subplot(polar=True)
    ax.plot(angles + angles[:1], vals + vals[:1], c="#48a")
    ax.fill(angles + angles[:1], vals + vals[:1], alpha=0.25, c="#48a")
    ax.set_xticks(angles)
    ax.set_xticklabels(axes, fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_title(row["name"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(result_paths: list[Path] | None = None, out: Path | None = None, model: str = "toy",
           model_path: str | None = None, rescore: bool = False) -> dict:  # fmt: skip
    """Verify results and write the Markdown table, HTML page, bar chart and radar charts."""
    out = out or Path(__file__).resolve().parent
    paths = sorted(result_paths or RESULTS_DIR.glob("*.json"))
    weights = circuit_gym.load_model(model, path=model_path).circuit_gym_info.weights_hash
    entries, refused, failed = collect(paths, weights, rescore)
    present = {e["name"] for e in entries}
    missing = [r for r in B.REFERENCE_ENTRIES if r not in present]
    if missing:
        raise RefusedResultError(
            f"reference entries missing from the board: {missing}. Score them first, e.g. "
            "`circuit-gym leaderboard score --name random --policy circuit_gym.baselines.random_policy:make_policy "
            "--out leaderboard/results/random.json`"
        )
    rows = rank_rows([_row(e) for e in entries])
    table = markdown(rows, refused, failed)
    out.mkdir(parents=True, exist_ok=True)
    _bar_chart(rows, out / "board.png")
    radar_dir = out / "radar"
    radar_dir.mkdir(exist_ok=True)
    for r in rows:
        _radar(r, radar_dir / f"{r['name']}.png")
    readme = out / "README.md"
    text = readme.read_text() if readme.exists() else f"# Leaderboard\n\n{MARK_BEGIN}\n{MARK_END}\n"
    if MARK_BEGIN not in text:
        text += f"\n{MARK_BEGIN}\n{MARK_END}\n"
    head, rest = text.split(MARK_BEGIN, 1)
    tail = rest.split(MARK_END, 1)[1]
    readme.write_text(f"{head}{MARK_BEGIN}\n{table}\n\n![board](board.png)\n{MARK_END}{tail}")
    cells = "".join(
        f"<tr><td>{i}</td><td>{html.escape(r['name'])}</td><td>{r['k5']:.3f}</td><td>{r['k1']:.3f}</td>"
        f"<td>{r['top1']:.2f}</td><td>{r['spread']:.3f}</td><td>{r['consistency']:.2f}</td>"
        f"<td><img src='radar/{html.escape(r['name'])}.png' width='160'></td></tr>"
        for i, r in enumerate(rows, 1)
    )
    notes = "".join(f"<li>{html.escape(m)}</li>" for m in refused)
    (out / "index.html").write_text(
        f"<!doctype html><meta charset='utf-8'><title>circuit_gym leaderboard</title>"
        f"<h1>circuit_gym leaderboard</h1><p>{html.escape(B.BENCHMARK_VERSION)}: held-out "
        f"{', '.join(B.HELD_OUT_TASKS)}, {len(B.EVAL_SEEDS)} seeds</p><img src='board.png'>"
        f"<table border='1' cellpadding='4'><tr><th>rank</th><th>entry</th><th>best-of-5</th><th>best-of-1</th>"
        f"<th>top-1</th><th>spread</th><th>consistency</th><th>profile</th></tr>{cells}</table>"
        f"{'<h2>Refused</h2><ul>' + notes + '</ul>' if notes else ''}"
    )
    return {"rows": rows, "refused": refused, "failed": [f["name"] for f in failed]}
