"""Issue 34's robustness check: tasks outside training and the board whose bottleneck is a head the
training tasks use often, and whether PPO finds it at least as well as the fixed memoriser.

    python scripts/robustness_tasks.py --ppo docs/results/transfer/ppo --ppo docs/results/transfer/ppo_causal

Stage 1 (choice, train and eval splits only), per training model of zoo v1 (zoo1, zoo3) and
robustness task (``circuit_gym.tasks.robustness``):

- **training frequency**: the oracle head of every train-split episode of the training tasks
  (PPO's training pool, batches ``0..--train-episodes - 1``), counted per model;
- **gate** (``circuit_gym.suite.gate``, the model cards' inclusion rule) on the eval split: clean
  accuracy (``circuit_gym.models.behaviour.task_metrics``) and the oracle tables of eval batches
  ``0..--gate-episodes - 1``; the task's **bottleneck** is the modal oracle head of those;
- a (task, model) cell is **kept** when the gate passes and the bottleneck is among the
  ``circuit_gym.suite.OTHER_TOP`` (5) heads most often oracle in training on that model.

Stage 2 (scoring, test split batches ``0..--episodes - 1``, the transfer settings of
``baselines.transfer_envs.transfer_env``): best-of-1 and best-of-5 oracle recovery
(``circuit_gym.evaluation``) of every PPO seed of each ``--ppo`` directory (each in an
environment of its own ``config.features``; mean over seeds with a t-interval), the fixed
memoriser, random rankings (5 seeds) and attribution patching (white box, one backward pass).
Writes ``--out``/robustness.json and robustness.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from circuit_gym import benchmark as B
from circuit_gym.baselines.fixed_policy import FixedPolicy
from circuit_gym.baselines.ppo import PPOPolicy
from circuit_gym.baselines.random_policy import RandomPolicy
from circuit_gym.baselines.transfer_envs import transfer_env
from circuit_gym.evaluation import evaluate, summarize
from circuit_gym.heads import head_name
from circuit_gym.models.behaviour import task_metrics
from circuit_gym.progress import progress_iter
from circuit_gym.solvers.contrastive import attribution_scores
from circuit_gym.stats import mean_ci95
from circuit_gym.suite import MIN_ACCURACY, OTHER_TOP, gate
from circuit_gym.tasks.robustness import BASE_TASK, register_robustness_tasks

ROOT = Path(__file__).resolve().parents[2]  # the repository: the committed runs and results
FIXED = ROOT / "docs/results/transfer/fixed_policy.json"
RANDOM_SEEDS = (0, 1, 2, 3, 4)
FIXED_LABEL = "fixed_memoriser"
RankFn = Callable[[np.ndarray, object], np.ndarray]


# ------------------------------------------------------------------------------ stage 1: choice
def oracle_heads(
    model: str, tasks: Sequence[str], split: str, episodes: int
) -> dict[str, list[tuple[int, float]]]:
    """(oracle head, oracle reward) of batches ``0..episodes-1`` per task, from the env's tables."""
    env = transfer_env(model, tasks, split, episodes)
    base = env.unwrapped
    out: dict[str, list[tuple[int, float]]] = {}
    for task in tasks:
        pool = base.pool(task)
        for i in progress_iter(range(episodes), f"oracle tables {model}/{task}/{split}", unit="batch"):
            table = pool.episode(i).table
            out.setdefault(task, []).append((int(table.oracle_head), float(table.oracle_reward)))
    env.close()
    return out


def training_frequency(model: str, episodes: int) -> Counter:
    """How often each head is the oracle head of a train-split episode of the training tasks."""
    per_task = oracle_heads(model, B.TRANSFER_TRAIN_TASKS, "train", episodes)
    return Counter(h for rows in per_task.values() for h, _ in rows)


def choose_cells(models: Sequence[str], tasks: Sequence[str], train_episodes: int, gate_episodes: int,
                 accuracy_batches: int, tabled: Sequence[str] | None = None) -> dict:  # fmt: skip
    """Stage 1 for every (model, task): the gate, the bottleneck and its training frequency. Oracle
    tables (the costly part) only for the tasks in ``tabled`` (default: all) whose eval accuracy
    reaches the gate's minimum; the others get their accuracy and a reason."""
    tabled = tasks if tabled is None else tabled
    from circuit_gym.envs.pool import shared_model

    out: dict = {"models": {}, "cells": {}}
    for model in models:
        print(f"choice on {model}: training frequency, eval accuracy, eval oracle tables", flush=True)
        freq = training_frequency(model, train_episodes)
        n_heads = shared_model(model).circuit_gym_info.n_heads
        total = sum(freq.values())
        ranked = [h for h, _ in freq.most_common()]
        out["models"][model] = {
            "training_episodes": total,
            "top_heads": [
                {"head": head_name(h, n_heads), "share": freq[h] / total} for h in ranked[:OTHER_TOP]
            ],
        }
        accuracy = {
            t: task_metrics(shared_model(model), t, "eval", n_batches=accuracy_batches) for t in tasks
        }
        performed = [t for t in tasks if accuracy[t]["accuracy"] >= MIN_ACCURACY and t in tabled]
        tables = oracle_heads(model, performed, "eval", gate_episodes) if performed else {}
        for task in tasks:
            cell: dict = {"model": model, "task": task, "base_task": BASE_TASK[task],
                          "accuracy": accuracy[task]["accuracy"], "accuracy_prompts": accuracy[task]["prompts"]}  # fmt: skip
            if task in tables:
                g = gate(
                    accuracy[task]["accuracy"], [r for _, r in tables[task]], [h for h, _ in tables[task]]
                )
                bottleneck = g["modal_head"]
                cell.update(gate=g, bottleneck=head_name(bottleneck, n_heads),
                            bottleneck_training_share=freq[bottleneck] / total,
                            bottleneck_training_rank=ranked.index(bottleneck) + 1 if bottleneck in freq else None,
                            frequent_in_training=bottleneck in ranked[:OTHER_TOP],
                            kept=bool(g["included"] and bottleneck in ranked[:OTHER_TOP]))  # fmt: skip
            elif task in tabled:
                cell.update(gate=None, kept=False, why=f"eval accuracy below the gate's {MIN_ACCURACY}")
            else:
                cell.update(gate=None, kept=False, why="accuracy only: not in --tasks")
            out["cells"][f"{model}/{task}"] = cell
    return out


# ----------------------------------------------------------------------------- stage 2: scores
def cell_recovery(env, rank: RankFn, solver: str, tasks: Sequence[str], episodes: Sequence[int]) -> dict:
    """Best-of-1 and best-of-5 recovery per task (``circuit_gym.evaluation.summarize``)."""
    rows = summarize(evaluate(env, rank, solver, tasks, episodes, ks=B.KS))
    out: dict = {}
    for row in rows:
        out.setdefault(row["task"], {})[f"k{row['k']}"] = row
    return out


def ppo_seed_dirs(directory: Path) -> list[Path]:
    seeds = sorted(p for p in directory.glob("seed*") if (p / "policy.pt").is_file())
    if not seeds:
        raise ValueError(f"{directory} holds no seed*/policy.pt")
    return seeds


def checkpoint_hashes(ppo_dirs: Sequence[Path]) -> dict[str, dict[str, str]]:
    """The first 16 hex digits of each scored ``policy.pt``'s SHA-256: which checkpoints a report scored."""
    return {d.name: {s.name: hashlib.sha256((s / "policy.pt").read_bytes()).hexdigest()[:16] for s in ppo_seed_dirs(d)}
            for d in ppo_dirs}  # fmt: skip


def solvers(ppo_dirs: Sequence[Path]) -> dict[str, list[tuple[str, str, RankFn]]]:
    """Solver label -> its runs: (run name, observation features, rank function)."""
    fixed = FixedPolicy.load(FIXED)
    out: dict[str, list[tuple[str, str, RankFn]]] = {}
    for directory in ppo_dirs:
        runs = []
        for seed_dir in ppo_seed_dirs(directory):
            features = json.loads((seed_dir / "config.json").read_text())["features"]
            policy = PPOPolicy.load(seed_dir)
            runs.append((seed_dir.name, features, lambda obs, _env, p=policy: p.rank_heads(obs)))
        label = "ppo_" + "_".join(sorted({features for _, features, _ in runs}))  # named by what it observes
        if label in out:
            raise ValueError(f"two --ppo directories observe the same features ({label}); pass one")
        out[label] = runs
    out[FIXED_LABEL] = [("fixed", "attention", lambda obs, _env: fixed.rank_heads(obs))]
    randoms = {s: RandomPolicy(s) for s in RANDOM_SEEDS}
    out["random"] = [
        (f"seed{s}", "attention", lambda obs, _env, p=p: p.rank_heads(obs)) for s, p in randoms.items()
    ]
    # white box: one forward and one backward pass on the episode's prompts
    out["attribution"] = [("attribution", "attention", lambda _obs, env: attribution_scores(env))]
    return out


def score_cells(kept: dict[str, list[str]], all_solvers: dict, episodes: int) -> dict:
    """Per (model, task) cell and solver: each run's recovery and the mean over runs."""
    indices = range(episodes)
    runs_out: dict = {}
    for model, tasks in kept.items():
        if not tasks:
            continue
        print(f"scores on {model}: {', '.join(tasks)} (test batches 0-{episodes - 1})", flush=True)
        envs: dict[str, object] = {}
        for label, runs in all_solvers.items():
            for run, features, rank in runs:
                if features not in envs:
                    envs[features] = transfer_env(model, tasks, "test", episodes, features=features)
                t0 = time.time()
                per_task = cell_recovery(envs[features], rank, f"{label}/{run}", tasks, indices)
                print(f"  {model} {label} {run}: {time.time() - t0:.1f} s", flush=True)
                for task, ks in per_task.items():
                    runs_out.setdefault(f"{model}/{task}", {}).setdefault(label, {})[run] = ks
        for env in envs.values():
            env.close()
    table: dict = {}
    for cell, by_solver in runs_out.items():
        for label, by_run in by_solver.items():
            row = {}
            for k in B.KS:
                values = [by_run[r][f"k{k}"]["recovery"] for r in by_run]
                mean, ci = mean_ci95(values)
                row[f"k{k}"] = {"mean": mean, "ci95": ci, "runs": dict(zip(by_run, values, strict=True))}
            row["top1_rate"] = float(np.mean([by_run[r]["k1"]["top1_rate"] for r in by_run]))
            row["episodes_with_positive_oracle"] = [
                by_run[r]["k1"]["episodes_with_positive_oracle"] for r in by_run
            ]
            table.setdefault(cell, {})[label] = row
    return table


def targets(table: dict, fixed: str = FIXED_LABEL) -> dict:
    """Per cell and PPO design: mean best-of-1 over seeds >= the fixed memoriser's best-of-1."""
    out: dict = {}
    for cell, by_solver in table.items():
        for label, row in by_solver.items():
            if label.startswith("ppo_"):
                ppo, memo = row["k1"]["mean"], by_solver[fixed]["k1"]["mean"]
                met = bool(ppo >= memo)
                out.setdefault(label, {})[cell] = {"ppo_k1": ppo, "fixed_k1": memo, "met": met,
                                                   "verdict": "met" if met else "missed"}  # fmt: skip
    return out


# -------------------------------------------------------------------------------------- report
def _fmt(row: dict | None, k: int) -> str:
    if row is None:
        return "-"
    v = row[f"k{k}"]
    lo, hi = v["ci95"]
    return f"{v['mean']:.3f}" + (f" [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else "")


def markdown(report: dict) -> str:
    s = report["settings"]
    lines = [
        "# Robustness tasks (issue 34, item 3)", "",
        f"`{report['command']}`", "",
        f"Choice: train split ({s['train_episodes']} batches per training task) and eval split "
        f"({s['gate_episodes']} oracle tables, {s['accuracy_batches']} x 16 prompts for accuracy). "
        f"Scores: test split, batches 0-{s['episodes'] - 1}, {s['benchmark_version']}'s settings.", "",
        "## Choice", "",
        "| model | task | eval accuracy | gate | bottleneck (modal share) | training share (rank) | kept |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for cell in report["choice"]["cells"].values():
        g = cell["gate"]
        if g is None:
            why = "fail (accuracy)" if "below" in cell["why"] else "not gated (--tasks)"
            lines.append(
                f"| {cell['model']} | {cell['task']} | {cell['accuracy']:.3f} | {why} | - | - | no |"
            )
            continue
        lines.append(
            f"| {cell['model']} | {cell['task']} | {cell['accuracy']:.3f} | {'pass' if g['included'] else 'fail'} | "
            f"{cell['bottleneck']} ({g['modal_share']:.2f}) | {cell['bottleneck_training_share']:.3f} "
            f"({cell['bottleneck_training_rank']}) | {'yes' if cell['kept'] else 'no'} |"
        )
    for model, m in report["choice"]["models"].items():
        top = ", ".join(f"{h['head']} ({h['share']:.2f})" for h in m["top_heads"])
        lines.append(f"\n{model}: training tasks' most frequent oracle heads (share of {m['training_episodes']} "
                     f"train episodes): {top}.")  # fmt: skip
    labels = sorted({label for row in report["table"].values() for label in row})
    lines += ["", "## Oracle recovery (test split; mean over runs, 95% t-interval)", "",
              "| cell | " + " | ".join(f"{lab} best-of-1 | {lab} best-of-5" for lab in labels) + " |",
              "|---|" + "---|" * (2 * len(labels))]  # fmt: skip
    for cell, row in report["table"].items():
        vals = " | ".join(f"{_fmt(row.get(lab), 1)} | {_fmt(row.get(lab), 5)}" for lab in labels)
        lines.append(f"| {cell} | {vals} |")
    lines += ["", "## Target: PPO best-of-1 >= the fixed memoriser's, per cell", ""]
    for label, cells in report["targets"].items():
        met = sum(c["met"] for c in cells.values())
        lines.append(f"- {label}: met in {met} of {len(cells)} cells: " + "; ".join(
            f"{cell} {c['ppo_k1']:.3f} vs {c['fixed_k1']:.3f} ({'met' if c['met'] else 'missed'})"
            for cell, c in cells.items()))  # fmt: skip
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> dict:
    """Both stages with ``scripts/robustness_tasks.py``'s options; writes ``args.out``/robustness.json
    and robustness.md and returns the report."""
    for name in ("episodes", "gate_episodes", "accuracy_batches", "train_episodes"):
        if getattr(args, name) < 2:
            raise SystemExit(f"--{name.replace('_', '-')} must be at least 2")
    shown = [
        str(d.resolve().relative_to(ROOT)) if d.resolve().is_relative_to(ROOT) else str(d) for d in args.ppo
    ]
    tasks = register_robustness_tasks()
    tabled = tasks if args.tasks is None else tuple(args.tasks.split(","))
    if unknown := set(tabled) - set(tasks):
        raise SystemExit(f"--tasks: unknown robustness tasks {sorted(unknown)}; choose from {list(tasks)}")
    all_solvers = solvers(args.ppo)
    choice = choose_cells(
        B.TRAIN_MODELS, tasks, args.train_episodes, args.gate_episodes, args.accuracy_batches, tabled
    )
    kept = {
        m: [c["task"] for c in choice["cells"].values() if c["model"] == m and c["kept"]]
        for m in B.TRAIN_MODELS
    }
    table = score_cells(kept, all_solvers, args.episodes)
    report = {
        "command": "python scripts/robustness_tasks.py " + " ".join(f"--ppo {d}" for d in shown)
        + (f" --tasks {args.tasks}" if args.tasks else "")
        + f" --episodes {args.episodes} --gate-episodes {args.gate_episodes}"
        f" --accuracy-batches {args.accuracy_batches} --train-episodes {args.train_episodes}",
        "settings": {"episodes": args.episodes, "gate_episodes": args.gate_episodes,
                     "accuracy_batches": args.accuracy_batches, "train_episodes": args.train_episodes,
                     "benchmark_version": B.TRANSFER_BENCHMARK_VERSION, "models": list(B.TRAIN_MODELS),
                     "ppo_dirs": shown, "ppo_checkpoints": checkpoint_hashes(args.ppo), "fixed_memoriser": str(FIXED.relative_to(ROOT)),
                     "random_seeds": list(RANDOM_SEEDS), "tabled_tasks": list(tabled)},
        "choice": choice, "table": table, "targets": targets(table),
    }  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "robustness.json").write_text(json.dumps(report, indent=1))
    (args.out / "robustness.md").write_text(markdown(report))
    print(markdown(report))
    return report
