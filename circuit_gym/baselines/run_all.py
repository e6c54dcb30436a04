"""The one-model job: on one model (``toy`` by default; GPT-2 small with ``scripts/reproduce_gpt2.py``)
train PPO, evaluate every solver on the held-out tasks, write results/. The board's main job is
:mod:`circuit_gym.baselines.main_job` (``circuit-gym run``); this one's numbers on ``toy`` are the
retired one-model board's (docs/archive.md). :func:`run_quick` is the whole pipeline on tiny settings.

1. Train PPO (``circuit_gym.baselines.ppo``) on the Multi environment: the benchmark's training
   tasks (``circuit_gym.benchmark.TRAIN_TASKS``), train split; the evaluation
   pools' oracle tables are swept in worker processes meanwhile.
2. Fit the fixed baseline on the same training pools.
3. Evaluate random, fixed, greedy (attribution patching) and PPO, best-of-1 and best-of-5:
   on the training tasks with the eval split (unseen templates and filler combinations),
   and on the benchmark's held-out tasks with the test split, through ``HideOracleInfo``.
4. Circuit scores (``circuit_gym.baselines.circuit_scoring``): MIB's CPR and CMD at head level of
   every solver's ranking, and of ACDC and EAP-IG, on the first ``circuit_episodes`` held-out
   episodes (test split), with a faithfulness-curve figure per task.
5. Circuit building, sequential (``circuit_gym.baselines.circuit_building_track``): PPO on the
   circuit-building Multi ID (seed ``seed``, in ``out/circuit/ppo``: resumed if unfinished,
   reused if finished), then exact greedy search, attribution insertion, random insertion and
   PPO build circuits on the first ``circuit_build_episodes`` held-out episodes per task, scored
   by CPR / CMD and forward passes per episode.
6. Write ``results.json`` (every number), ``results.md`` (the tables), ``learning_curve.png``
   and per-task heatmaps of the mean oracle reward beside PPO's mean preference.
"""

from __future__ import annotations

import json
import multiprocessing
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import circuit_gym
from circuit_gym.baselines import circuit_building_track
from circuit_gym.baselines.circuit_scoring import markdown as circuit_markdown
from circuit_gym.baselines.circuit_scoring import ranking_circuit_scores
from circuit_gym.baselines.fixed_policy import FixedPolicy
from circuit_gym.baselines.greedy import attribution_scores, compare_with_sweep
from circuit_gym.baselines.ppo import PPOConfig, PPOPolicy, train
from circuit_gym.baselines.random_policy import RandomPolicy
from circuit_gym.benchmark import HELD_OUT_TASKS, TRAIN_TASKS, multi_env_id
from circuit_gym.circuits.plot import faithfulness_figure
from circuit_gym.envs import HideOracleInfo
from circuit_gym.evaluation import evaluate, results_as_dicts, summarize
from circuit_gym.plots import head_heatmap_pair
from circuit_gym.precompute import plan, precompute_jobs
from circuit_gym.reporting import learning_curve, markdown_table
from circuit_gym.stats import mean_ci95


def run(out: Path, model: str = "toy", model_path: str | None = None, eval_episodes: int = 48,
        ppo: PPOConfig | None = None, seed: int = 0, device: str = "cpu", workers: int = 2,
        circuit_episodes: int = 8, circuit_build_episodes: int = 2,
        circuit_ppo: dict | None = None) -> dict:  # fmt: skip
    """The main job; ``circuit_ppo``: overrides of the circuit-building PPO's configuration
    (``circuit_building_track.ppo_config``), e.g. fewer epochs for a smoke run."""
    start = time.time()
    out.mkdir(parents=True, exist_ok=True)
    env_id = multi_env_id(model)
    config = replace(
        ppo or PPOConfig(), env_id=env_id, model=model, model_path=model_path, seed=seed, device=device
    )
    # Every pool the job reads is swept in `workers` processes (a disk-cache read later): the
    # training pools first, the evaluation pools in the background while PPO trains (and from the
    # list's other end in this process once PPO is done).
    print(f"[0/6] oracle tables of the training pools ({workers} worker processes)", flush=True)
    sweep = partial(precompute_jobs, model, model_path=model_path, batch_size=config.batch_size_prompts,
                    device=device, workers=workers)  # fmt: skip
    # The training pool and the held-back selection batches after it (checkpoint selection).
    tables = {"train": sweep(plan(TRAIN_TASKS, ["train"], config.pool_size + config.selection_episodes))}
    evaluation_jobs = plan(TRAIN_TASKS, ["eval"], eval_episodes) + plan(
        HELD_OUT_TASKS, ["test"], eval_episodes
    )
    print(
        f"[1/6] training PPO on {env_id} ({config.epochs} epochs x {config.steps_per_epoch} steps); "
        f"the {len(evaluation_jobs)} evaluation pools' tables are swept meanwhile",
        flush=True,
    )
    # In its own process, not a thread: loading a model there would draw from this process's
    # torch RNG while PPO trains, and PPO would no longer be reproducible from its seed.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as background:
        evaluation_tables = background.submit(sweep, evaluation_jobs, progress=False, workers=1)
        ppo_summary = train(config, out / "ppo")
        # PPO's core is free now: sweep the same list from its other end until the two meet
        # (each job is checked in the cache just before it is computed).
        from_the_end = sweep(evaluation_jobs[::-1], progress=False, workers=1)
        tables["evaluation"] = evaluation_tables.result()
        tables["evaluation_from_the_end"] = from_the_end
    ppo_policy = PPOPolicy.load(out / "ppo")

    kwargs = dict(batch_size=config.batch_size_prompts, device=device, model=model)
    if model_path:
        kwargs["model_path"] = model_path
    train_env = gym.make(env_id, split="train", pool_size=config.pool_size, **kwargs)
    print("[2/6] fitting the fixed baseline", flush=True)
    fixed = FixedPolicy.fit(train_env, TRAIN_TASKS, episodes=config.pool_size)
    fixed.save(out / "fixed_policy.json")
    random_policy = RandomPolicy(seed)
    greedy_estimates: dict[tuple[str, str, int], np.ndarray] = {}  # reused by the agreement report

    def greedy(obs, env) -> np.ndarray:
        episode = env.unwrapped.episode
        key = (env.unwrapped.split, episode.pool.task.name, episode.index)
        if key not in greedy_estimates:
            greedy_estimates[key] = attribution_scores(env)
        return greedy_estimates[key]

    solvers = {
        "random": lambda obs, env: random_policy.rank_heads(obs),
        "fixed": lambda obs, env: fixed.rank_heads(obs),
        "greedy": greedy,
        "ppo": lambda obs, env: ppo_policy.rank_heads(obs),
    }

    print(f"[3/6] evaluating {list(solvers)} on {eval_episodes} episodes per task", flush=True)
    eval_env = gym.make(env_id, split="eval", pool_size=eval_episodes, **kwargs)
    test_env = HideOracleInfo(gym.make(env_id, split="test", pool_size=eval_episodes, **kwargs))
    episodes = range(eval_episodes)
    results = []
    for name, rank in solvers.items():
        results += evaluate(eval_env, rank, name, TRAIN_TASKS, episodes, progress=True)
        results += evaluate(test_env, rank, name, HELD_OUT_TASKS, episodes, progress=True)
    rows = summarize(results)

    circuit_episodes = min(circuit_episodes, eval_episodes)  # the first episodes of the test pools
    print(f"[4/6] circuit scores (CPR, CMD) on {circuit_episodes} held-out episodes per task", flush=True)
    circuits = ranking_circuit_scores(
        test_env, solvers, HELD_OUT_TASKS, range(circuit_episodes), progress=True
    )
    for task, by_solver in circuits["tasks"].items():
        faithfulness_figure(by_solver, out / f"faithfulness_{task}.png",
                            title=f"{task} (test split, {circuit_episodes} episodes)")  # fmt: skip

    print(f"[5/6] circuit building: PPO on the circuit-building Multi ID, then four solvers on "
          f"{circuit_build_episodes} held-out episodes per task", flush=True)  # fmt: skip
    building_start = time.time()
    runs = circuit_building_track.train_runs(out / "circuit", model, [seed], model_path=model_path,
                                             **(circuit_ppo or {}))  # fmt: skip
    budget = (circuit_ppo or {}).get("budget", circuit_building_track.BUDGET)
    batch = (circuit_ppo or {}).get("batch_size_prompts", 8)
    building = circuit_building_track.score_runs(model, runs, circuit_build_episodes, budget=budget,
                                                 batch_size=batch, model_path=model_path)  # fmt: skip
    building["seconds_with_training"] = time.time() - building_start
    circuit_building_track.plot_learning_curves(runs, out / "circuit" / "learning_curve.png")

    print("[6/6] writing results", flush=True)
    greedy_agreement = _greedy_agreement(eval_env, test_env, episodes, greedy)
    heatmaps = _heatmaps(out, eval_env, test_env, ppo_policy, episodes)
    curve = json.loads((out / "ppo" / "curve.json").read_text())
    learning_curve(curve, out / "learning_curve.png",
                   title=f"PPO on {', '.join(TRAIN_TASKS)}: held-back train-split batches")  # fmt: skip
    info = eval_env.unwrapped.model.circuit_gym_info
    report = {
        "model": info.name, "weights_hash": info.weights_hash, "n_heads_total": info.n_heads_total,
        "version": circuit_gym.__version__, "command": f"circuit_gym.baselines.run_all.run({str(out)!r}, model={model!r})",
        "rows": rows, "circuits": circuits, "circuit_building": building, "greedy_vs_sweep": greedy_agreement, "ppo": {"config": asdict(config), **ppo_summary},
        "learning_curve": curve, "heatmaps": heatmaps, "episodes": results_as_dicts(results),
        "eval_batch_indices": list(episodes), "wall_seconds": time.time() - start, "oracle_tables": tables,
        "machine": {"python": platform.python_version(), "torch": torch.__version__,
                    "threads": torch.get_num_threads(), "workers": workers},
    }  # fmt: skip
    (out / "results.json").write_text(json.dumps(report, indent=1))
    table = markdown_table(rows)
    (out / "results.md").write_text(
        f"# circuit_gym results ({info.name}, weights {info.weights_hash})\n\n{table}\n\n"
        f"## Circuits: CPR and CMD on held-out tasks (test split)\n\n{circuit_markdown(circuits)}\n\n"
        f"## Circuit building (sequential): circuits built head by head on held-out tasks (test split)\n\n"
        f"{circuit_building_track.markdown(building['rows'])}\n\n"
        f"Targets (issue 22; seed {seed} only, `scripts/circuit_track.py` measures seeds 0-4): "
        f"{json.dumps(building['targets'])}\n\n"
        f"Greedy (attribution patching) vs exact sweep: {json.dumps(greedy_agreement)}\n\n"
        f"Wall time {report['wall_seconds']:.0f} s. Produced by `{report['command']}`.\n"
    )
    print(table)
    print(f"done in {report['wall_seconds']:.0f} s -> {out}")
    return report


def _greedy_agreement(eval_env, test_env, episodes, greedy) -> dict:
    out = {}
    for env, tasks in ((eval_env, TRAIN_TASKS), (test_env, HELD_OUT_TASKS)):
        for task in tasks:
            stats = []
            for i in episodes:
                obs, _ = env.reset(options={"task": task, "batch_index": i})
                stats.append(compare_with_sweep(env, greedy(obs, env)))
            rho, ci = mean_ci95([s["spearman"] for s in stats])
            out[task] = {"spearman_mean": rho, "spearman_ci95": ci,
                         "top1_agreement": float(np.mean([s["top1_agree"] for s in stats]))}  # fmt: skip
    return out


def _heatmaps(out: Path, eval_env, test_env, policy: PPOPolicy, episodes) -> dict:
    files = {}
    base = eval_env.unwrapped
    for env, tasks in ((eval_env, TRAIN_TASKS), (test_env, HELD_OUT_TASKS)):
        for task in tasks:
            rewards, prefs = [], []
            for i in episodes:
                obs, _ = env.reset(options={"task": task, "batch_index": i})
                rewards.append(env.unwrapped.episode.table.reward)
                logits = policy.rank_heads(obs)
                prefs.append(np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum())
            path = head_heatmap_pair(
                np.mean(rewards, 0), np.mean(prefs, 0), base.n_layers, base.n_heads,
                ("mean oracle table (contrastive reward)", "PPO preference (mean probability)"),
                f"{task} ({env.unwrapped.split} split, {len(episodes)} episodes)", out / f"heatmap_{task}.png",
            )  # fmt: skip
            files[task] = path.name
    return files


def run_quick(out: Path, model: str = "toy", seed: int = 0, device: str = "cpu") -> dict:
    """:func:`run` on tiny settings: a smoke run of the whole pipeline (the tests', the profile's quick run)."""
    config = replace(PPOConfig(), epochs=1, steps_per_epoch=256, pool_size=8, n_envs=2, batch_size_prompts=4)
    circuit_ppo = dict(epochs=1, budget=4, steps_per_epoch=64, steps_per_collect=32, pool_size=2, selection_episodes=1,
                       n_envs=2, batch_size_prompts=4, minibatch=16, repeat=1)  # fmt: skip
    return run(out, model=model, eval_episodes=4, ppo=config, seed=seed, device=device, circuit_episodes=1,
               circuit_build_episodes=1, circuit_ppo=circuit_ppo)  # fmt: skip
