"""Random: rank the heads uniformly at random (seeded), ablate the first (the board's floor).

    python baselines/random.py                          # the benchmark in force's held-out tasks and models
    python baselines/random.py --models zoo6 --tasks brackets --episodes 2 --seed 1 --json random.json

The same ``--seed`` gives the same heads on the same episodes. The policy is the package's
(``circuit_gym.baselines.random_policy.RandomPolicy``: one generator drawn in episode order); the
environment is the board's own (``circuit_gym.track_envs.board_env``, benchmark v7's settings,
test split, batch ``i`` = episode ``i``). The oracle table is read only to score the choice.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, where this "random.py" would stand in
# for the standard library's random module that numpy and torch import: take the folder off first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

from circuit_gym import benchmark as B  # noqa: E402
from circuit_gym.baselines.random_policy import RandomPolicy  # noqa: E402
from circuit_gym.evaluation import evaluate, results_summary  # noqa: E402
from circuit_gym.track_envs import board_env  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    bench = B.transfer_benchmark(B.IN_FORCE)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=list(bench.held_out_models),
                   help=f"zoo members to evaluate on (default: benchmark {bench.version}'s held-out models)")  # fmt: skip
    p.add_argument("--tasks", nargs="+", default=list(bench.held_out_tasks),
                   help="tasks to evaluate (default: the held-out tasks; a model runs those it serves)")  # fmt: skip
    p.add_argument(
        "--episodes", type=int, default=len(bench.seeds), help="episodes (test batches 0..N-1) per task"
    )
    p.add_argument("--seed", type=int, default=0, help="the random generator's seed")
    p.add_argument("--json", metavar="PATH", help="also write the result (and every episode) as JSON")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    bench = B.transfer_benchmark(B.IN_FORCE)
    policy = RandomPolicy(seed=args.seed)
    start, results = time.time(), []
    for model in args.models:
        tasks = bench.tasks_of(model, tuple(args.tasks))
        env = board_env(B.SINGLE_HEAD, model, args.episodes, tasks=tasks, transfer=bench)
        for task in tasks:
            for i in range(args.episodes):
                (r,) = evaluate(env, lambda obs, env: policy.rank_heads(obs), "random", [task], [i], ks=(1,))
                results.append({"model": model, "task": task, "episode": i, "head": r.head, "reward": r.reward,
                                "oracle_head": r.oracle_head, "oracle_reward": r.oracle_reward, "top1": r.top1})  # fmt: skip
                print(f"[random {time.time() - start:6.1f}s] {model} {task} episode {i}: head {r.head}, "
                      f"reward {r.reward:.3f} of the oracle's {r.oracle_reward:.3f}", flush=True)  # fmt: skip
    summary = results_summary(results)
    out = {"solver": "random", "seed": args.seed, "benchmark": bench.benchmark_version(B.SINGLE_HEAD), "k": 1,
           "n_episodes": len(results), "recovery": summary["recovery"], "episodes": results}  # fmt: skip
    print(f"random (seed {args.seed}): best-of-1 oracle recovery {summary['recovery']:.3f} over "
          f"{len(results)} episodes ({', '.join(args.models)}; {time.time() - start:.0f} s)")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
