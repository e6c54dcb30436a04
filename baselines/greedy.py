"""Greedy: rank the heads by attribution patching, ablate the best (a reference solver of the board).

One forward and one backward pass per episode give the first-order estimate of ablating every
head (``grad . (replacement - z)`` at each head's output, for the task metric and for the
reference text's loss); the estimated contrastive reward ranks the heads, and best-of-1 ablates
the top one. It is white-box: it reads the episode's prompts and the model's gradients, never the
oracle table (which is read only to score it).

    python baselines/greedy.py                          # the benchmark in force's held-out tasks and models
    python baselines/greedy.py --models zoo10 --tasks brackets --episodes 2 --json greedy.json

The estimate lives in the package (``circuit_gym.baselines.greedy.attribution_scores``); the
evaluation too (``circuit_gym.baselines.held_out.evaluate_held_out``: the board's own environment,
the benchmark in force's test split, batch ``i`` = episode ``i``), so an episode here is the episode the
leaderboard scores.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, where the sibling baselines/random.py
# would stand in for the standard library's random module that numpy and torch import: take it off first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import json  # noqa: E402

from circuit_gym.baselines.greedy import attribution_scores  # noqa: E402
from circuit_gym.baselines.held_out import add_held_out_arguments, evaluate_held_out  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_held_out_arguments(p)  # --models, --tasks, --episodes, --json
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    # the policy: the environment's own model and batch give the gradients (the observation is unused)
    result = evaluate_held_out("greedy", lambda obs, env: attribution_scores(env), args.models, args.tasks,
                               args.episodes)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
