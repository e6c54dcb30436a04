"""Leave-one-training-task-out cross-validation of the reference PPO: how to choose anything
about it (its observation features, its settings) without looking at the held-out tasks.

Run by ``scripts/loo_cv.py`` (:func:`run`):

    python scripts/loo_cv.py --out runs/loo --features attention prediction --seeds 0 1

For every training task T of the benchmark, PPO (the main job's settings) is trained on the
other training tasks (train split) and evaluated on T's eval split, which it never saw:
recovery at best-of-1 and best-of-5 (sum of chosen rewards / sum of oracle rewards over
episodes with a positive oracle). Each fold is a small transfer benchmark made only of
training tasks. Writes ``OUT/FEATURES/seed_S/T/`` (the policy and ``episodes.json``) and
``OUT/loo_cv.json`` / ``OUT/loo_cv.md`` (per fold, and the mean over folds, for every
feature set and seed). Resumable: a fold whose ``episodes.json`` exists is read, not rerun.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np

from circuit_gym.baselines.ppo import PPOConfig, PPOPolicy, train
from circuit_gym.benchmark import TRAIN_TASKS, multi_env_id
from circuit_gym.evaluation import evaluate, results_as_dicts, results_summary

KS = (1, 5)


def run_fold(directory: Path, features: str, seed: int, held: str, episodes: int) -> list[dict]:
    """Train on the training tasks other than ``held``; evaluate on ``held``'s eval split."""
    done = directory / "episodes.json"
    others = ",".join(t for t in TRAIN_TASKS if t != held)
    if done.exists():  # resumable, but only a fold trained on today's other training tasks
        trained_on = json.loads((directory / "ppo" / "config.json").read_text()).get("tasks")
        if trained_on != others:
            raise ValueError(
                f"{directory} was trained on {trained_on!r}, not {others!r}: delete it to rerun the fold"
            )
        return json.loads(done.read_text())
    config = PPOConfig(env_id=multi_env_id(), seed=seed, tasks=others, features=features)
    train(config, directory / "ppo")
    policy = PPOPolicy.load(directory / "ppo")
    env = gym.make(config.env_id, split="eval", pool_size=episodes, batch_size=config.batch_size_prompts,
                   tasks=(held,), features=features)  # fmt: skip
    rows = results_as_dicts(evaluate(env, lambda obs, e: policy.rank_heads(obs), "ppo", (held,),
                                     range(episodes), KS, progress=True))  # fmt: skip
    done.write_text(json.dumps(rows))
    return rows


def recovery(rows: list[dict], k: int) -> float:
    """Best-of-``k`` recovery over a fold's episodes (:func:`results_summary`)."""
    rows = [r for r in rows if r["k"] == k]
    return results_summary(rows)["recovery"]


def report(table: dict, out: Path) -> None:
    """``table[features][seed][fold] = {k: recovery}`` -> JSON and a markdown table."""
    lines = ["| features | seed | " + " | ".join(f"{t} k1 / k5" for t in TRAIN_TASKS) + " | mean k1 / k5 |",
             "|---" * (len(TRAIN_TASKS) + 3) + "|"]  # fmt: skip
    summary: dict = {}
    for features, seeds in table.items():
        for seed, folds in seeds.items():
            cells = [
                f"{folds[t]['k1']:.3f} / {folds[t]['k5']:.3f}" if t in folds else "-" for t in TRAIN_TASKS
            ]
            done = [folds[t] for t in TRAIN_TASKS if t in folds]
            means = {f"k{k}": float(np.mean([f[f"k{k}"] for f in done])) for k in KS} if done else {}
            summary.setdefault(features, {})[seed] = {
                "folds": folds,
                "mean": means,
                "complete": len(done) == len(TRAIN_TASKS),
            }
            mean = f"{means['k1']:.3f} / {means['k5']:.3f}" if done else "-"
            lines.append(f"| {features} | {seed} | " + " | ".join(cells) + f" | {mean} |")
    (out / "loo_cv.json").write_text(json.dumps(summary, indent=1))
    (out / "loo_cv.md").write_text(
        "Leave-one-training-task-out CV of PPO (`python scripts/loo_cv.py`): trained on the other "
        "training tasks (train split), recovery on the left-out task's eval split, best-of-1 / best-of-5.\n\n"
        + "\n".join(lines)
        + "\n"
    )


def run(out: Path, features: Sequence[str], seeds: Sequence[int], episodes: int = 48) -> dict:
    """Every fold of every feature set and seed (resumable); the table is rewritten after every
    fold, so a stopped run leaves its partial table. Returns ``table[features][seed][fold]``."""
    table: dict = {}
    for seed in seeds:
        for feature_set in features:
            for held in TRAIN_TASKS:
                rows = run_fold(out / feature_set / f"seed_{seed}" / held, feature_set, seed, held, episodes)
                table.setdefault(feature_set, {}).setdefault(seed, {})[held] = {
                    f"k{k}": recovery(rows, k) for k in KS
                }
                report(table, out)
    return table
