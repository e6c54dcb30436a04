"""The evaluation every script in the top-level ``baselines/`` folder ends with: a head-ranking
policy played best-of-1 on the held-out tasks of the benchmark in force's held-out models.

The environment is the board's own (``circuit_gym.track_envs.board_env``: the benchmark's pinned
ablation, reference text and test split; episode ``i`` is test batch ``i``), so an episode here is
the episode the leaderboard scores. A model plays only the tasks its card's gate admits. The
recovery is the ratio of sums of the chosen heads' rewards to the oracle's
(``circuit_gym.evaluation.results_summary``); the oracle table is read only to score the choice.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

from circuit_gym import benchmark as B
from circuit_gym.evaluation import RankFn, evaluate, results_summary
from circuit_gym.track_envs import board_env


def add_held_out_arguments(parser: argparse.ArgumentParser, prefix: str = "") -> argparse._ArgumentGroup:
    """An "evaluation" group of ``parser`` with ``--{prefix}models``, ``--{prefix}tasks``, ``--episodes``
    and ``--json``, returned for a script's own evaluation flags; each left None means the benchmark
    in force's own (what :func:`evaluate_held_out` fills in). ``prefix`` keeps them apart from a
    script's training flags (``ppo.py``: ``--eval-models``)."""
    bench = B.transfer_benchmark(B.IN_FORCE)
    group = parser.add_argument_group(
        "evaluation (best-of-1 on the benchmark in force's held-out tasks and models)"
    )
    group.add_argument(f"--{prefix}models", nargs="+",
                        help=f"zoo members to evaluate on (default: benchmark {bench.version}'s held-out "
                             f"models, {' '.join(bench.held_out_models)})")  # fmt: skip
    group.add_argument(f"--{prefix}tasks", nargs="+",
                        help=f"tasks to evaluate (default: the held-out tasks, {' '.join(bench.held_out_tasks)}; "
                             "a model runs those it serves)")  # fmt: skip
    group.add_argument("--episodes", type=int,
                        help=f"episodes (test batches 0..N-1) per model and task (default {len(bench.seeds)})")  # fmt: skip
    group.add_argument("--json", metavar="PATH", help="also write the result (and every episode) as JSON")
    return group


def evaluate_held_out(solver: str, rank: RankFn, models: Sequence[str] | None = None,
                      tasks: Sequence[str] | None = None, episodes: int | None = None, *,
                      label: str | None = None, log: Callable[[str], None] | None = None) -> dict:  # fmt: skip
    """Play ``rank`` (``(observation, env) -> one score per head``) on ``episodes`` test batches of
    every task of ``tasks`` that each of ``models`` serves, best-of-1; None: the benchmark in
    force's held-out models, held-out tasks and episode count.

    ``log`` (default: print at once, for a log file) gets a line per episode and a last line with the
    recovery (``label`` names the solver there, ``solver`` by default). Returns ``solver``, ``benchmark``, ``k``, ``n_episodes``,
    ``recovery`` and ``episodes`` (one dict per episode: model, task, episode, head, reward,
    oracle_head, oracle_reward, top1), which a script extends with its own settings.
    """
    log = log or _print_now
    bench = B.transfer_benchmark(B.IN_FORCE)
    models = list(models or bench.held_out_models)
    tasks = tuple(tasks or bench.held_out_tasks)
    episodes = episodes or len(bench.seeds)
    start, results = time.time(), []
    for model in models:
        served = bench.tasks_of(model, tasks)
        env = board_env(B.SINGLE_HEAD, model, episodes, tasks=served, transfer=bench)
        try:
            for task in served:
                for i in range(episodes):
                    (r,) = evaluate(env, rank, solver, [task], [i], ks=(1,))
                    results.append({"model": model, "task": task, "episode": i, "head": r.head, "reward": r.reward,
                                    "oracle_head": r.oracle_head, "oracle_reward": r.oracle_reward,
                                    "top1": r.top1})  # fmt: skip
                    log(f"[{solver} {time.time() - start:6.1f}s] {model} {task} episode {i}: head {r.head}, "
                        f"reward {r.reward:.3f} of the oracle's {r.oracle_reward:.3f}")  # fmt: skip
        finally:
            env.close()
    recovery = results_summary(results)["recovery"]
    log(f"{label or solver}: best-of-1 oracle recovery {recovery:.3f} over {len(results)} episodes "
        f"({', '.join(models)}; {time.time() - start:.0f} s)")  # fmt: skip
    return {"solver": solver, "benchmark": bench.benchmark_version(B.SINGLE_HEAD), "k": 1,
            "n_episodes": len(results), "recovery": recovery, "episodes": results}  # fmt: skip


def _print_now(line: str) -> None:
    print(line, flush=True)
