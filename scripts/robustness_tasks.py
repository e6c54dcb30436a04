"""Issue 34's robustness check (:mod:`circuit_gym.baselines.robustness`, whose docstring has both
stages): the options, then one call.

    python scripts/robustness_tasks.py --ppo docs/results/transfer/ppo --ppo docs/results/transfer/ppo_causal
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.baselines import robustness  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=robustness.__doc__.split("\n\n")[0])
    p.add_argument(
        "--ppo", action="append", default=[], type=Path, help="a directory of seed*/policy.pt runs"
    )
    p.add_argument("--episodes", type=int, default=12, help="test-split batches per cell")
    p.add_argument("--gate-episodes", type=int, default=12, help="eval-split oracle tables per cell")
    p.add_argument(
        "--accuracy-batches", type=int, default=4, help="eval-split batches of 16 prompts for accuracy"
    )
    p.add_argument("--train-episodes", type=int, default=48, help="train-split batches per training task")
    p.add_argument("--tasks", default=None, help="comma-separated robustness tasks to gate and score "
                   "(default: all; the others get their eval accuracy only)")  # fmt: skip
    p.add_argument("--out", type=Path, default=robustness.ROOT / "docs/results/robustness")
    args = p.parse_args(argv)
    return robustness.run(args)


if __name__ == "__main__":
    main()
