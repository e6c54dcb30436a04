"""The circuit track in one command: train PPO seeds on the Circuit Multi ID, score four solvers on held-out tasks.

1. Train PPO (``circuit_gym/baselines/circuit_ppo.py``) on ``CircuitDiscovery-Toy-Multi-Circuit-v0`` (the
   leaderboard benchmark's training tasks, train split), one run per ``--seeds`` seed (seed 0 in
   ``--out/ppo``, seed s in ``--out/ppo_seed{s}``), checkpoints chosen by CPR on held-back
   train-split batches; runs resume from their last epoch and finished runs are reused;
2. play exact greedy search, attribution insertion, random insertion and every PPO run on the
   benchmark's held-out tasks (test split, batches ``0 .. episodes - 1``) and score the circuits
   they build by CPR / CMD and forward passes per episode
   (``circuit_gym/baselines/circuit_building_track.py``);
3. write ``track.json`` (rows per solver and task, every episode, the targets of issue 22 on
   the mean over seeds), ``track.md`` and ``learning_curves.png`` (each run's selection score
   per epoch, greedy search at 1) to ``--out``.

Seeds train in parallel as separate processes, then one call scores them all:

    python scripts/circuit_track.py --seeds 0 2 4 --train-only &
    python scripts/circuit_track.py --seeds 1 3 --train-only
    python scripts/circuit_track.py --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from circuit_gym.baselines import circuit_building_track as track
from circuit_gym.benchmark import MODEL


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("docs/results/circuit"))
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--episodes", type=int, default=8, help="held-out batches per task")
    parser.add_argument("--budget", type=int, default=track.BUDGET)
    parser.add_argument("--alpha", type=float, default=track.ALPHA, help="the scored episodes' cost per head")
    parser.add_argument("--epochs", type=int, default=track.PPO_EPOCHS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="PPO seeds (training and scoring)")
    parser.add_argument(
        "--ray-workers", type=int, default=0, help="greedy search's candidates on N Ray actors"
    )
    parser.add_argument(
        "--reward",
        default="gain",
        help="PPO's training reward (circuit_gym/baselines/circuit_ppo.py: gain | area)",
    )
    parser.add_argument(
        "--train-only", action="store_true", help="train (or resume) the seeds' runs, score nothing"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    runs = track.train_runs(
        args.out, args.model, args.seeds, epochs=args.epochs, budget=args.budget, reward=args.reward
    )
    if args.train_only:
        return {"runs": {k: str(v) for k, v in runs.items()}, "seconds": time.time() - start}
    report = track.score_runs(args.model, runs, args.episodes, budget=args.budget, alpha=args.alpha,
                              ray_workers=args.ray_workers)  # fmt: skip
    report["command"] = "python scripts/circuit_track.py " + " ".join(sys.argv[1:] if argv is None else argv)
    track.plot_learning_curves(runs, args.out / "learning_curves.png")
    (args.out / "track.json").write_text(json.dumps(report, indent=1))
    (args.out / "track.md").write_text(
        track.markdown(report["rows"]) + "\n\n" + json.dumps(report["targets"], indent=1) + "\n"
    )
    print(track.markdown(report["rows"]))
    print(json.dumps(report["targets"], indent=1))
    return report


if __name__ == "__main__":
    main()
