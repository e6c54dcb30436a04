"""Benchmark v6's reference baselines of issue 35 items 5 and 6, measured in the four quadrants.

Run by ``scripts/measure_transfer_entries.py`` (:func:`run`):

    python scripts/measure_transfer_entries.py --out-dir docs/results/transfer

Plays every entry in process on the episodes the transfer board scores on the public models
(test split, batches ``benchmark.TRANSFER_SEEDS``, every task on every public zoo member, the
board's environment settings) and writes ``entries.json`` / ``entries.md``: pooled best-of-1 and
best-of-5 recovery per quadrant (the board's ratio of sums with its bootstrap interval), per
(held-out model, held-out task), and for the test-set memorisers how often they recognise the
episode's task (and model). The private model is not here: only the maintainer can score it.

Entries (checkpoints written by ``scripts/fit_transfer_baselines.py`` and
``scripts/fit_testset_memoriser.py``; the ceiling rule by ``scripts/feature_ceiling.py
--benchmark v6``): the v6 fixed memoriser, the fair single column, the ceiling column (chosen on
the held-out tasks: a reported ceiling, not an entry), both test-set memorisers, and random.
"""

from __future__ import annotations

import json
from pathlib import Path

from circuit_gym import benchmark as B
from circuit_gym.baselines import column_policy, fixed_policy, random_policy, testset_memoriser
from circuit_gym.baselines.transfer_envs import transfer_env
from circuit_gym.evaluation import episode_results, results_summary
from circuit_gym.policy import check_scores
from circuit_gym.progress import progress_iter

ROOT = Path(__file__).resolve().parents[2]
TRANSFER = ROOT / "docs" / "results" / "transfer"
CEILING_REPORT = ROOT / "docs" / "results" / "feature_ceiling" / "v6.json"
LABELS = {"fixed_v6": "fixed memoriser (v6)", "column_fair": "single column, fair",
          "testset_memoriser": "test-set memoriser (pooled tables)",
          "testset_memoriser_per_model": "test-set memoriser (per-model tables)", "random": "random",
          "column_ceiling": "single column, ceiling (chosen on held-out tasks; not an entry)"}  # fmt: skip


def entries(transfer: Path, ceiling_report: Path) -> dict:
    """Entry name -> (policy factory, its checkpoint or None): fresh policies for each model."""
    out = {
        "fixed_v6": (fixed_policy.make_policy, transfer / "fixed_policy.json"),
        "column_fair": (column_policy.make_policy, transfer / "column_policy.json"),
        "testset_memoriser": (testset_memoriser.make_policy, transfer / "testset_memoriser.json"),
        "testset_memoriser_per_model": (
            testset_memoriser.make_policy,
            transfer / "testset_memoriser_per_model.json",
        ),
        "random": (random_policy.make_policy, None),
    }
    if ceiling_report.is_file():
        rule = json.loads(ceiling_report.read_text())["ceiling_rule"]
        out["column_ceiling"] = (
            lambda: column_policy.ColumnPolicy(*column_policy.parse_rule(rule)),
            None,
        )
    return out


def summary(rows: list[dict], k: int) -> dict:
    rs = [r for r in rows if r["k"] == k]
    s = results_summary(rs)
    return {"recovery": s["recovery"], "ci95": s["recovery_ci95"], "episodes": s["episodes"]}


def measure(transfer_dir: Path = TRANSFER, ceiling_report: Path = CEILING_REPORT) -> dict:
    """Every entry of :func:`entries` played on the board's public episodes (every public model,
    every task, test split, batches ``TRANSFER_SEEDS``): per quadrant and per held-out cell."""
    models, tasks = B.TRAIN_MODELS + B.HELD_OUT_MODELS, B.TRANSFER_TRAIN_TASKS + B.TRANSFER_HELD_OUT_TASKS
    plan = entries(transfer_dir, ceiling_report)
    rows: dict[str, list[dict]] = {name: [] for name in plan}
    for model in models:
        env = transfer_env(model, tasks, B.SPLIT, max(B.TRANSFER_SEEDS) + 1)
        policies = {name: factory(str(ckpt)) if ckpt else factory() for name, (factory, ckpt) in plan.items()}
        jobs = [(t, s) for t in tasks for s in B.TRANSFER_SEEDS]
        for task, seed in progress_iter(jobs, f"entries on {model}", unit="episode"):
            obs, _ = env.reset(options={"task": task, "batch_index": seed})
            for name, policy in policies.items():
                scores = check_scores(policy.rank_heads(obs.copy()), env.unwrapped.n_total)
                recognised = policy.recognise(obs) if hasattr(policy, "recognise") else None
                for r in episode_results(env, scores, name, B.KS):
                    rows[name].append({"model": model, "task": task, "seed": seed, "k": r.k, "reward": r.reward,
                                       "oracle_reward": r.oracle_reward, "top1": r.top1,
                                       "recognised": recognised})  # fmt: skip
        env.close()
    report: dict = {"benchmark_version": B.TRANSFER_BENCHMARK_VERSION, "split": B.SPLIT,
                    "seeds": list(B.TRANSFER_SEEDS), "entries": {}}  # fmt: skip
    for name, rs in rows.items():
        entry: dict = {"quadrants": {}, "held_out_cells": {}}
        for q in B.QUADRANTS:
            qr = [r for r in rs if B.quadrant(r["task"], r["model"], "v6") == q]
            entry["quadrants"][q] = {f"best_of_{k}": summary(qr, k) for k in B.KS}
            if qr[0]["recognised"] is not None:
                ones = [r for r in qr if r["k"] == B.KS[0]]
                entry["quadrants"][q]["task_recognised"] = sum(
                    r["recognised"][0] == r["task"] for r in ones
                ) / len(ones)
                entry["quadrants"][q]["model_recognised"] = sum(
                    r["recognised"][1] == r["model"] for r in ones
                ) / len(ones)
        for m in B.HELD_OUT_MODELS:
            for t in B.TRANSFER_HELD_OUT_TASKS:
                cell = [r for r in rs if r["model"] == m and r["task"] == t]
                entry["held_out_cells"][f"{m}/{t}"] = {
                    f"best_of_{k}": summary(cell, k)["recovery"] for k in B.KS
                }
        report["entries"][name] = entry
    return report


def run(
    transfer_dir: Path = TRANSFER, ceiling_report: Path = CEILING_REPORT, out_dir: Path = TRANSFER
) -> dict:
    """:func:`measure`, written to ``out_dir/entries.json`` and ``out_dir/entries.md``."""
    report = measure(transfer_dir, ceiling_report)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "entries.json").write_text(json.dumps(report, indent=1) + "\n")
    (out_dir / "entries.md").write_text(markdown(report))
    return report


def markdown(report: dict) -> str:
    def cell(s: dict) -> str:
        lo, hi = s["ci95"]
        return f"{s['recovery']:.3f} [{lo:.2f}, {hi:.2f}]"

    q = "unseen_task_unseen_model"
    lines = [f"# Transfer baselines on the public zoo ({report['benchmark_version']})", "",
             "Generated by `scripts/measure_transfer_entries.py`: test split, batches "
             f"{report['seeds'][0]}-{report['seeds'][-1]} (the board's public episodes), pooled recovery [95% CI]. "
             "Unseen tasks x unseen models: the held-out tasks on the public held-out models.", "",
             "| entry | unseen task, unseen model: best-of-1 | best-of-5 | seen task, unseen model: best-of-1 "
             "| unseen task, seen model: best-of-1 | task recognised (unseen, unseen) |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for name, e in report["entries"].items():
        u = e["quadrants"][q]
        rec = f"{u['task_recognised']:.3f}" if "task_recognised" in u else "-"
        lines.append(f"| {LABELS[name]} | {cell(u['best_of_1'])} | {cell(u['best_of_5'])} | "
                     f"{cell(e['quadrants']['seen_task_unseen_model']['best_of_1'])} | "
                     f"{cell(e['quadrants']['unseen_task_seen_model']['best_of_1'])} | {rec} |")  # fmt: skip
    return "\n".join(lines) + "\n"
