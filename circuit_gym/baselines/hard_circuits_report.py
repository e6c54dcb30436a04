"""Issue 41's targets on every transfer benchmark row, side by side (v8: zoo v3).

    python -m circuit_gym.baselines.hard_circuits_report   # -> docs/results/v8/report.json, report.md

Reads only scorer-written result files of the board (each row's ``results_folder`` under
``leaderboard/results/``) and the PPO trainings' selection scores (``training.json`` of the row's
docs folder). Nothing here chooses anything: the targets are issue 41's, fixed before zoo v2 was
trained, and the PPO entry is the run with the best training-side selection score.

- **cheap single head**: attribution patching's (``greedy``) best-of-1 on the held-out tasks of the
  public held-out models is at most :data:`MAX_CHEAP_BEST_OF_1` (a board that one backward pass
  solves cannot rank better methods);
- **circuit gap**: on the circuit track, the best CPR of the references of at most
  :data:`CHEAP_PASSES` passes (:data:`CHEAP` at their published defaults; random excluded) trails
  the best of any cost (:data:`ANY_COST`) by at least :data:`MIN_CPR_GAP`.
"""

from __future__ import annotations

import json
from pathlib import Path

from circuit_gym import benchmark as B
from circuit_gym.reporting.transfer import UNSEEN, table

ROOT = Path(__file__).resolve().parents[2]  # the repository: the board's and the docs' result files

MAX_CHEAP_BEST_OF_1 = 0.85
MIN_CPR_GAP = 0.10
CHEAP_PASSES = 50
CHEAP = ("attribution", "eap_ig", "gim")  # the circuit track's one-pass-ish references
ANY_COST = ("acdc", "greedy_search")
OUT = ROOT / "docs" / "results" / B.transfer_benchmark(B.IN_FORCE).results_folder
PLACES = (UNSEEN, "private")


def _value(summary: dict | None, track: str, k: int) -> dict | None:
    if not summary:
        return None
    if B.is_transfer_circuit(track):
        return {"value": summary["cpr"], "ci95": summary.get("cpr_ci95"), "episodes": summary.get("episodes")}
    s = summary[f"k{k}"]
    return {"value": s["recovery"], "ci95": s["recovery_ci95"], "episodes": s["episodes"]}


def entry_summary(result: dict) -> dict:
    """Per k (single-head: 1, 5; circuit: CPR), every quadrant and the private model, with the
    entry's LM passes per episode."""
    track = result["track"]
    ks = (1,) if B.is_transfer_circuit(track) else B.KS
    private = (result.get("private") or {}).get("scores", {}).get("overall")
    out = {}
    for k in ks:
        key = "cpr" if B.is_transfer_circuit(track) else f"k{k}"
        out[key] = {q: _value(result["scores"]["quadrants"].get(q), track, k) for q in B.QUADRANTS}
        out[key]["private"] = _value(private, track, k)
    out["private_tasks"] = (result.get("private") or {}).get("tasks")
    if B.is_transfer_circuit(track):
        out["passes_per_episode"] = (result["scores"]["quadrants"].get(UNSEEN) or {}).get("forward_passes")
    else:  # forward + backward passes the solver ran in its rank call (partial passes counted as forward)
        c = result["scores"]["compute"]
        out["passes_per_episode"] = sum(
            c[f"{kind}_passes_per_episode"] for kind in ("forward", "partial", "backward")
        )
    return out


def load(directory: Path, track: str) -> dict[str, dict]:
    """The scored results of ``track`` in ``directory``, by entry name."""
    results = {}
    for path in sorted(directory.glob("*.json")):
        result = json.loads(path.read_text())
        if result.get("track") == track and result.get("status") == "scored":
            results[result["name"]] = result
    return results


def target(value: float, goal: float, at_most: bool = False) -> dict:
    """A target's record: the goal, the measured value, and whether it is met (``value >= goal``,
    or ``value <= goal`` for a gap or a cost)."""
    return {"target": goal, "value": value, "met": value <= goal if at_most else value >= goal}


def results(version: str) -> dict[str, dict[str, dict]]:
    """Every scored board entry of ``version``'s transfer tracks, summarised (``entry_summary``)."""
    bench = B.transfer_benchmark(version)
    base = ROOT / "leaderboard" / "results" / bench.results_folder
    dirs = {bench.track(B.SINGLE_HEAD): base, bench.track(B.CIRCUIT): base / "circuit"}
    return {track: {n: entry_summary(r) for n, r in load(d, track).items()} for track, d in dirs.items()}


def cheap_single_head(refs: dict, bench: B.TransferBenchmark) -> dict:
    greedy = refs[bench.track(B.SINGLE_HEAD)].get("greedy")
    out = {}
    for where in PLACES:
        value = ((greedy or {}).get("k1") or {}).get(where)
        if value:
            out[where] = target(value["value"], MAX_CHEAP_BEST_OF_1, at_most=True)
    return out


def circuit_gap(refs: dict, bench: B.TransferBenchmark) -> dict:
    """Per place: the best cheap and the best any-cost reference (name, CPR, passes) and the gap."""
    entries = refs[bench.track(B.CIRCUIT)]

    def best(where: str, names: tuple[str, ...], max_passes: float | None = None) -> dict | None:
        scored = [{"name": n, "cpr": entries[n]["cpr"][where]["value"], "passes": entries[n].get("passes_per_episode")}
                  for n in names if n in entries and entries[n]["cpr"].get(where)]  # fmt: skip
        if max_passes is not None:  # the published defaults' cost, checked on what they ran
            scored = [s for s in scored if s["passes"] is not None and s["passes"] <= max_passes]
        return max(scored, key=lambda s: s["cpr"]) if scored else None

    out = {}
    for where in PLACES:
        cheap, costly = best(where, CHEAP, CHEAP_PASSES), best(where, ANY_COST)
        if cheap and costly:
            out[where] = {
                "cheap": cheap,
                "any_cost": costly,
                **target(costly["cpr"] - cheap["cpr"], MIN_CPR_GAP),
            }
    return out


def chosen_ppo(version: str) -> dict:
    """The PPO runs of ``version`` (``training.json``) and the one each track keeps: the best
    selection score (training models' training tasks, held-back train-split batches)."""
    from circuit_gym.baselines.transfer_training import docs_dir

    path = docs_dir(version, ROOT / "docs" / "results") / "training.json"
    runs = json.loads(path.read_text())["runs"] if path.exists() else {}
    out = {}
    for prefix in ("ppo_", "circuit_ppo_"):
        mine = {n: r["selection_score"] for n, r in runs.items() if n.startswith(prefix)}
        if mine:
            out[prefix.rstrip("_")] = {"runs": mine, "chosen": max(mine, key=mine.get)}
    return out


def report(versions: tuple[str, ...] = tuple(B.TRANSFER_BENCHMARKS)) -> dict:
    out: dict = {"targets_of": "issue 41", "max_cheap_best_of_1": MAX_CHEAP_BEST_OF_1,
                 "min_cpr_gap": MIN_CPR_GAP, "cheap": list(CHEAP), "cheap_passes": CHEAP_PASSES,
                 "any_cost": list(ANY_COST), "versions": {}}  # fmt: skip
    for version in versions:
        bench = B.transfer_benchmark(version)
        refs = results(version)
        out["versions"][version] = {
            "zoo": {"train": list(bench.train_models), "held_out": list(bench.held_out_models)},
            "references": refs,
            "targets": {"cheap_single_head": cheap_single_head(refs, bench), "circuit_gap": circuit_gap(refs, bench)},
            "ppo": chosen_ppo(version),
        }  # fmt: skip
    return out


def _met(t: dict) -> str:
    return f"{t['value']:.3f} ({'met' if t['met'] else 'missed'})"


def markdown(rep: dict) -> str:
    versions = ", ".join(f"{v} (zoo {B.transfer_benchmark(v).zoo_generation})" for v in rep["versions"])
    lines = [f"# Hard circuits: issue 41's targets on benchmark {versions}", "",
             "Generated by `python -m circuit_gym.baselines.hard_circuits_report` from the board's result files.",
             "", "| target | where | " + " | ".join(rep["versions"]) + " |", "|---|---|" + "---|" * len(rep["versions"])]  # fmt: skip
    names = {UNSEEN: "held-out tasks, public held-out models", "private": "private model"}
    for where in PLACES:
        cells = [rep["versions"][v]["targets"]["cheap_single_head"].get(where) for v in rep["versions"]]
        lines.append(f"| attribution best-of-1 <= {rep['max_cheap_best_of_1']} | {names[where]} | "
                     + " | ".join(_met(c) if c else "-" for c in cells) + " |")  # fmt: skip
    for where in PLACES:
        cells = [rep["versions"][v]["targets"]["circuit_gap"].get(where) for v in rep["versions"]]
        lines.append(f"| circuit CPR gap, best of any cost - best of <= {rep['cheap_passes']} passes, >= "
                     f"{rep['min_cpr_gap']} | {names[where]} | "
                     + " | ".join(f"{_met(c)}: {c['any_cost']['name']} {c['any_cost']['cpr']:.3f} vs "
                                  f"{c['cheap']['name']} {c['cheap']['cpr']:.3f}" if c else "-" for c in cells) + " |")  # fmt: skip
    for version, v in rep["versions"].items():
        bench = B.transfer_benchmark(version)
        lines += ["", f"## Benchmark {version} (train {', '.join(v['zoo']['train'])}; held out "
                      f"{', '.join(v['zoo']['held_out'])})", ""]  # fmt: skip
        for kind, key, label in ((B.SINGLE_HEAD, "k1", "best-of-1"), (B.CIRCUIT, "cpr", "CPR")):
            track = bench.track(kind)
            if v["references"][track]:
                lines += [f"### {track}: {label}", "", table({"references": v["references"]}, track, key), ""]
        for agent, runs in v["ppo"].items():
            lines.append(f"- {agent}: kept {runs['chosen']} (selection scores "
                         + ", ".join(f"{n} {s:.3f}" for n, s in sorted(runs["runs"].items())) + ")")  # fmt: skip
    return "\n".join(lines) + "\n"


def write_report(out: Path = OUT) -> dict:
    rep = report()
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(rep, indent=1) + "\n")
    (out / "report.md").write_text(markdown(rep))
    return rep


if __name__ == "__main__":
    print(markdown(write_report()))
