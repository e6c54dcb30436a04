"""Random: rank the heads uniformly at random (seeded), ablate the first (the board's floor).

    python baselines/random.py                          # the benchmark in force's held-out tasks and models
    python baselines/random.py --models zoo10 --tasks brackets --episodes 2 --seed 1 --json random.json

The same ``--seed`` gives the same heads on the same episodes. The policy is the package's
(``circuit_gym.baselines.random_policy.RandomPolicy``: one generator drawn in episode order); the
evaluation too (``circuit_gym.baselines.held_out.evaluate_held_out``: the board's own environment,
the benchmark in force's test split, batch ``i`` = episode ``i``). The oracle table is read only to score
the choice.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, where this "random.py" would stand in
# for the standard library's random module that numpy and torch import: take the folder off first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import json  # noqa: E402

from circuit_gym.baselines.held_out import add_held_out_arguments, evaluate_held_out  # noqa: E402
from circuit_gym.baselines.random_policy import RandomPolicy  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0, help="the random generator's seed")
    add_held_out_arguments(p)  # --models, --tasks, --episodes, --json
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    policy = RandomPolicy(seed=args.seed)
    result = evaluate_held_out("random", lambda obs, env: policy.rank_heads(obs), args.models, args.tasks,
                               args.episodes, label=f"random (seed {args.seed})")  # fmt: skip
    result = {**result, "seed": args.seed}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
