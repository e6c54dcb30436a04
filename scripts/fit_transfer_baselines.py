"""Fit a transfer benchmark's fair reference entry (the one in force by default) on the training tasks of its training models.

    python scripts/fit_transfer_baselines.py      # -> docs/results/VERSION/fixed_policy.json

``fixed_policy.json``: the fixed memoriser (``circuit_gym.baselines.fixed_policy``), the oracle
frequency of every head over the train split's first ``--fixed-episodes`` batches of each training
task on each training model (ties broken by mean reward). (The single-column rule was a reference
of zoo v1's board only, where every member served every task: tag archive/v6-last fits it.)

Nothing held out (task, model or the test split) is read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym import benchmark as B  # noqa: E402
from circuit_gym.baselines.fixed_policy import FixedPolicy  # noqa: E402
from circuit_gym.baselines.transfer_envs import transfer_env  # noqa: E402
from circuit_gym.baselines.transfer_training import docs_dir  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fixed-episodes", type=int, default=32, help="train-split batches per task and model")
    p.add_argument("--version", choices=tuple(B.TRANSFER_BENCHMARKS), default=B.IN_FORCE,
                   help="the transfer benchmark whose training models and tasks are fitted on")  # fmt: skip
    p.add_argument("--out-dir", type=Path, help="default: the version's docs folder (docs/results/VERSION)")
    args = p.parse_args(argv)
    bench = B.transfer_benchmark(args.version)
    args.out_dir = args.out_dir or docs_dir(args.version, ROOT / "docs" / "results")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    fitted_on = {"models": list(bench.train_models), "tasks": list(bench.train_tasks),
                 "benchmark_version": bench.benchmark_version(B.SINGLE_HEAD)}  # fmt: skip
    fit_fixed(bench, args, fitted_on)


def fit_fixed(bench: B.TransferBenchmark, args: argparse.Namespace, fitted_on: dict) -> None:
    """The fixed memoriser over the train split of each training model's served training tasks."""
    envs = [transfer_env(m, bench.tasks_of(m, bench.train_tasks), "train", args.fixed_episodes)
            for m in bench.train_models]  # fmt: skip
    fixed = FixedPolicy.fit_many(envs, None, args.fixed_episodes)
    fixed.save(args.out_dir / "fixed_policy.json",
               {"fitted_on": {**fitted_on, "split": "train", "batches": args.fixed_episodes},
                "written_by": "scripts/fit_transfer_baselines.py"})  # fmt: skip
    top = [int(h) for h in (-fixed.scores).argsort(kind="stable")[:5]]
    print(f"fixed memoriser ({bench.version}): top heads {top}")


if __name__ == "__main__":
    main()
