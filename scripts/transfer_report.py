"""Benchmark v6's results in one report: the transfer board's four quadrants and private column,
PPO over training seeds, and issue 35's targets, each met or missed.

    python scripts/transfer_report.py      # -> docs/results/transfer/report.json and report.md

Reads only scorer-written result files: the board's references (``leaderboard/results/transfer/``
and ``.../transfer/circuit/``) and the PPO seeds scored with the same scorer
(``docs/results/transfer/seeds/*.json``, ``circuit-gym leaderboard score --track transfer-...``).
Nothing here chooses anything: the targets are issue 35's, fixed before any of these files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym import benchmark as B  # noqa: E402
from circuit_gym.stats import mean_ci95  # noqa: E402

TRACKS = {"transfer-single-head": ROOT / "leaderboard/results/transfer",
          "transfer-circuit": ROOT / "leaderboard/results/transfer/circuit"}  # fmt: skip
SEEDS_DIR = ROOT / "docs/results/transfer/seeds"
OUT = ROOT / "docs/results/transfer"
UNSEEN = "unseen_task_unseen_model"
# Issue 35, item 7 (held-out tasks of held-out models, mean over seeds 0-4).
TARGET_K5, TARGET_K1, TARGET_CPR_GAP = 0.95, 0.70, 0.10


def _value(summary: dict | None, track: str, k: int) -> dict | None:
    if not summary:
        return None
    if track == "transfer-circuit":
        return {"value": summary["cpr"], "ci95": summary.get("cpr_ci95"), "episodes": summary.get("episodes")}
    s = summary[f"k{k}"]
    return {"value": s["recovery"], "ci95": s["recovery_ci95"], "episodes": s["episodes"]}


def entry_summary(result: dict) -> dict:
    """Per k (single-head: 1, 5; circuit: CPR), every quadrant and the private model."""
    track = result["track"]
    ks = (1,) if track == "transfer-circuit" else B.KS
    private = (result.get("private") or {}).get("scores", {}).get("overall")
    out = {}
    for k in ks:
        key = "cpr" if track == "transfer-circuit" else f"k{k}"
        out[key] = {q: _value(result["scores"]["quadrants"].get(q), track, k) for q in B.QUADRANTS}
        out[key]["private"] = _value(private, track, k)
    out["private_tasks"] = (result.get("private") or {}).get("tasks")
    if track == "transfer-circuit":
        out["passes_per_episode"] = (result["scores"]["quadrants"].get(UNSEEN) or {}).get("forward_passes")
    else:  # forward + backward passes the solver ran in its rank call (partial passes counted as forward)
        c = result["scores"]["compute"]
        out["passes_per_episode"] = sum(
            c[f"{kind}_passes_per_episode"] for kind in ("forward", "partial", "backward")
        )
    return out


def load(directory: Path, track: str) -> dict[str, dict]:
    results = {}
    for path in sorted(directory.glob("*.json")):
        result = json.loads(path.read_text())
        if result.get("track") == track and result.get("status") == "scored":
            results[result["name"]] = result
    return results


def _disjoint(a: dict | None, b: dict | None) -> bool | None:
    """Whether a's interval lies wholly above b's (None when either is missing)."""
    if not a or not b or not a.get("ci95") or not b.get("ci95"):
        return None
    return bool(a["ci95"][0] > b["ci95"][1])


def seed_table(seeds: dict[str, dict], key: str, where: str) -> dict:
    """Mean and 95% interval over seeds of one measure; each seed named beside its value."""
    measured = {name: entry_summary(r)[key][where] for name, r in sorted(seeds.items())}
    named = {name: m["value"] for name, m in measured.items() if m}
    if not named:
        return {}
    mean, ci = mean_ci95(list(named.values()))
    return {"seeds": list(named), "values": list(named.values()), "mean": mean, "ci95_over_seeds": list(ci)}


def report() -> dict:
    out: dict = {
        "benchmark": B.transfer_definition("single-head"),
        "circuit_benchmark": B.transfer_definition("circuit"),
    }
    refs = {t: {n: entry_summary(r) for n, r in load(d, t).items()} for t, d in TRACKS.items()}
    out["references"] = refs
    seeds = {t: load(SEEDS_DIR, t) for t in TRACKS}
    single, circuit = seeds["transfer-single-head"], seeds["transfer-circuit"]
    out["ppo_seeds"] = {
        "single_head": {f"{key}_{where}": seed_table(single, key, where)
                        for key in ("k1", "k5") for where in (UNSEEN, "private")},
        "circuit": {f"cpr_{where}": seed_table(circuit, "cpr", where) for where in (UNSEEN, "private")},
    }  # fmt: skip
    targets = {}
    sh = out["ppo_seeds"]["single_head"]
    greedy = refs["transfer-circuit"].get("greedy_search")
    # Held-out models: the public ones (unseen task, unseen model) and the private one.
    for where, label in ((UNSEEN, "public_held_out_models"), ("private", "private_model")):
        for k, target in (("k5", TARGET_K5), ("k1", TARGET_K1)):
            if sh[f"{k}_{where}"]:
                mean = sh[f"{k}_{where}"]["mean"]
                targets[f"best_of_{k[1]}_{label}"] = {"target": target, "value": mean, "met": mean >= target}
        cpr = out["ppo_seeds"]["circuit"][f"cpr_{where}"]
        if greedy and cpr and greedy["cpr"][where]:
            gap = greedy["cpr"][where]["value"] - cpr["mean"]
            targets[f"circuit_cpr_gap_to_greedy_{label}"] = {"target": TARGET_CPR_GAP, "value": gap,
                                                             "met": gap <= TARGET_CPR_GAP}  # fmt: skip
    ppo = refs["transfer-single-head"].get("ppo")
    for memoriser in ("fixed", "testset_memoriser"):
        other = refs["transfer-single-head"].get(memoriser)
        if ppo and other:
            for k in ("k1", "k5"):
                above = _disjoint(ppo[k]["private"], other[k]["private"])
                targets[f"ppo_above_{memoriser}_private_{k}"] = {"target": "non-overlapping 95% intervals",
                                                                "met": above}  # fmt: skip
    out["targets"] = targets
    return out


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


def markdown(rep: dict) -> str:
    lines = ["# Benchmark v6: transfer to held-out models", "",
             "Generated by `python scripts/transfer_report.py` from the scorer's result files. Private model: "
             "the held-out tasks it performs; quadrants: the public zoo.", ""]  # fmt: skip
    for track, key_list in (("transfer-single-head", ("k1", "k5")), ("transfer-circuit", ("cpr",))):
        for key in key_list:
            label = {"k1": "best-of-1 recovery", "k5": "best-of-5 recovery", "cpr": "CPR"}[key]
            lines += [f"## {track}: {label}", "", table(rep, track, key), ""]
    lines += ["## PPO over training seeds", ""]
    for track, by_key in rep["ppo_seeds"].items():
        for key, t in by_key.items():
            if t:
                lines.append(f"- {track} {key}: mean {t['mean']:.3f} [{t['ci95_over_seeds'][0]:.3f}, "
                             f"{t['ci95_over_seeds'][1]:.3f}] over seeds {t['seeds']} ({', '.join(f'{v:.3f}' for v in t['values'])})")  # fmt: skip
    lines += ["", "## Targets (issue 35)", ""]
    for name, t in rep["targets"].items():
        met = {True: "**met**", False: "**missed**", None: "not measured"}[t["met"]]
        value = f" {t['value']:.3f}" if isinstance(t.get("value"), float) else ""
        lines.append(f"- {name}:{value} (target {t['target']}): {met}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)
    rep = report()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "report.json").write_text(json.dumps(rep, indent=1) + "\n")
    (OUT / "report.md").write_text(markdown(rep))
    print(f"wrote {OUT / 'report.json'} and report.md")


if __name__ == "__main__":
    main()
