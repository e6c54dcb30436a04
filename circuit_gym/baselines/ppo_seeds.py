"""PPO against the benchmark's transfer targets, over training seeds (default 0-4).

Run by ``scripts/ppo_seeds.py`` (:func:`run`):

    python scripts/ppo_seeds.py --out docs/results/seeds --first-dir docs/results [--seeds 0 1 2 3 4]

Seed ``S`` of PPO is trained and evaluated into ``OUT/seed_S`` (the main job's PPO settings;
the first seed may be the main job's own directory, ``--first-dir docs/results``); random,
fixed and greedy do not depend on PPO's seed and are taken from the first seed's job. Then
every solver's episodes are pooled per seed:
recovery (sum of chosen rewards / sum of oracle rewards over episodes with a positive
oracle) on the held-out tasks (test split) and on the training tasks (eval split), at
best-of-1 and best-of-5. The targets (the issues', on the current benchmark): PPO's mean over seeds on the held-out
tasks at best-of-5 >= 0.96 and at best-of-1 >= 0.75; at best-of-1 and best-of-5, its 95% interval over seeds above
and not overlapping the fixed memoriser's and random's (their paired-bootstrap intervals,
seed 0); on the training tasks (eval split) recovery >= 0.98. Writes ``OUT/seeds.json`` and
``OUT/seeds.md``. Nothing here is chosen on the held-out tasks: the seeds are fixed in advance.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np

from circuit_gym.baselines.ppo import PPOConfig, PPOPolicy, train
from circuit_gym.benchmark import (
    BENCHMARK_VERSION,
    HELD_OUT_TASKS,
    TRAIN_TASKS,
    multi_env_id,
)
from circuit_gym.envs import HideOracleInfo
from circuit_gym.evaluation import evaluate, results_as_dicts, results_summary
from circuit_gym.stats import mean_ci95

TARGET_HELD_OUT_K5 = 0.96
TARGET_HELD_OUT_K1 = 0.75  # issue 22's second target (checkpoints chosen on held-back training batches)
TARGET_TRAIN = 0.98
SOLVERS = ("random", "fixed", "greedy", "ppo")


def ppo_seed(directory: Path, seed: int, episodes: int = 48) -> None:
    """Train PPO with ``seed`` (the main job's settings) and evaluate it as the main job does."""
    config = PPOConfig(env_id=multi_env_id(), seed=seed)
    train(config, directory / "ppo")
    policy = PPOPolicy.load(directory / "ppo")
    kwargs = dict(batch_size=config.batch_size_prompts, pool_size=episodes)
    results = evaluate(gym.make(config.env_id, split="eval", **kwargs), lambda obs, env: policy.rank_heads(obs),
                       "ppo", TRAIN_TASKS, range(episodes), progress=True)  # fmt: skip
    results += evaluate(HideOracleInfo(gym.make(config.env_id, split="test", **kwargs)),
                        lambda obs, env: policy.rank_heads(obs), "ppo", HELD_OUT_TASKS, range(episodes), progress=True)  # fmt: skip
    (directory / "results.json").write_text(json.dumps({"seed": seed, "benchmark_version": BENCHMARK_VERSION,
                                                        "episodes": results_as_dicts(results)}))  # fmt: skip


def check_episodes(path: Path, episodes: list[dict]) -> None:
    """Refuse a results file that does not cover the current benchmark's tasks (e.g. a seed
    kept from an earlier benchmark version): pooling it would silently drop or mix tasks."""
    have = {(e["task"], e["split"]) for e in episodes}
    want = {(t, "test") for t in HELD_OUT_TASKS} | {(t, "eval") for t in TRAIN_TASKS}
    extra = {t for t, _ in have} - set(HELD_OUT_TASKS) - set(TRAIN_TASKS)
    if not want <= have or extra:
        raise ValueError(
            f"{path} was made for other tasks (missing {sorted(want - have)}, extra {sorted(extra)}) than "
            f"{BENCHMARK_VERSION}: delete its directory to retrain that seed, or rerun the main job"
        )


def pooled(episodes: list[dict], solver: str, tasks: tuple[str, ...], split: str, k: int) -> dict:
    """Recovery of one solver pooled over the given tasks' episodes (:func:`results_summary`:
    ratio of sums over episodes with a positive oracle), with its interval."""
    rows = [e for e in episodes if e["solver"] == solver and e["task"] in tasks and e["split"] == split
            and e["k"] == k]  # fmt: skip
    s = results_summary(rows)
    return {
        "recovery": s["recovery"],
        "ci95": s["recovery_ci95"],
        "episodes": s["episodes_with_positive_oracle"],
    }


def summarise(per_seed: dict[int, dict]) -> dict:
    first = per_seed[min(per_seed)]
    out: dict = {"per_seed": per_seed, "targets": {}}
    for k in (1, 5):
        values = [per_seed[s]["ppo"][f"held_out_k{k}"]["recovery"] for s in sorted(per_seed)]
        mean, ci = mean_ci95(values)
        out[f"ppo_held_out_k{k}"] = {"mean": mean, "ci95_over_seeds": ci, "values": values}
        for ref in ("fixed", "random"):
            ref_ci = first[ref][f"held_out_k{k}"]["ci95"]
            out["targets"][f"held_out_k{k}_above_{ref}"] = bool(ci[0] > ref_ci[1])
    out["targets"]["held_out_k5_mean_at_least_0.96"] = out["ppo_held_out_k5"]["mean"] >= TARGET_HELD_OUT_K5
    out["targets"]["held_out_k1_mean_at_least_0.75"] = out["ppo_held_out_k1"]["mean"] >= TARGET_HELD_OUT_K1
    train = [per_seed[s]["ppo"]["train_k1"]["recovery"] for s in sorted(per_seed)]
    out["ppo_train_k1"] = {"mean": float(np.mean(train)), "values": train}
    out["targets"]["train_k1_mean_at_least_0.98"] = float(np.mean(train)) >= TARGET_TRAIN
    return out


def markdown(summary: dict) -> str:
    lines = ["| seed | solver | held-out k=1 | held-out k=5 | training (eval) k=1 | training (eval) k=5 |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for seed, solvers in summary["per_seed"].items():
        for solver, r in solvers.items():
            cells = [f"{r[key]['recovery']:.3f} [{r[key]['ci95'][0]:.2f}, {r[key]['ci95'][1]:.2f}]"
                     for key in ("held_out_k1", "held_out_k5", "train_k1", "train_k5")]  # fmt: skip
            lines.append(f"| {seed} | {solver} | " + " | ".join(cells) + " |")
    for k in (1, 5):
        p = summary[f"ppo_held_out_k{k}"]
        lines.append(f"\nPPO held-out best-of-{k}, mean over seeds: {p['mean']:.3f} "
                     f"[{p['ci95_over_seeds'][0]:.3f}, {p['ci95_over_seeds'][1]:.3f}]")  # fmt: skip
    lines.append(
        f"\nPPO training tasks (eval split) best-of-1, mean over seeds: {summary['ppo_train_k1']['mean']:.3f}"
    )
    lines.append(
        "\nTargets: " + ", ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in summary["targets"].items())
    )
    return "\n".join(lines)


def run(out: Path, seeds: Sequence[int], first_dir: Path | None = None) -> dict:
    """Train and evaluate PPO for every seed not yet in ``out`` (``out/seed_S``; the first seed's
    job may be ``first_dir``, the main job's output, which must exist), pool every solver's
    episodes per seed, write ``out/seeds.json`` and ``out/seeds.md`` and return the summary."""
    first = first_dir or out / f"seed_{seeds[0]}"
    if not (first / "results.json").exists():
        raise FileNotFoundError(
            f"run the main job for seed {seeds[0]} first: circuit-gym run --seed {seeds[0]} --out {first}"
        )
    reference = json.loads((first / "results.json").read_text())["episodes"]
    check_episodes(first / "results.json", reference)
    per_seed = {}
    for seed in seeds:
        directory = first if seed == seeds[0] else out / f"seed_{seed}"
        if not (directory / "results.json").exists():  # resumable: a finished seed is kept
            ppo_seed(directory, seed)
        own = json.loads((directory / "results.json").read_text())["episodes"]
        check_episodes(directory / "results.json", own)
        episodes = [e for e in reference if e["solver"] != "ppo"] + [e for e in own if e["solver"] == "ppo"]
        per_seed[seed] = {
            solver: {
                f"{name}_k{k}": pooled(episodes, solver, tasks, split, k)
                for name, tasks, split in (("held_out", HELD_OUT_TASKS, "test"), ("train", TRAIN_TASKS, "eval"))
                for k in (1, 5)
            }
            for solver in SOLVERS
        }  # fmt: skip
    summary = summarise(per_seed)
    (out / "seeds.json").write_text(json.dumps(summary, indent=1))
    (out / "seeds.md").write_text(markdown(summary) + "\n")
    return summary
