"""The circuit track in one command: train PPO on the Circuit Multi ID, score four solvers on held-out tasks.

1. Train PPO (``baselines/circuit_ppo.py``) on ``CircuitDiscovery-Toy-Multi-Circuit-v0`` (the
   leaderboard benchmark's training tasks, train split), checkpoints chosen by CPR on held-back
   train-split batches (skipped with ``--checkpoint DIR``);
2. play exact greedy search, attribution insertion, random insertion and PPO on the benchmark's
   held-out tasks (test split, batches ``0 .. episodes - 1``) and score the circuits they build by
   CPR / CMD and forward passes per episode (``baselines/circuit_solvers.py``);
3. write ``track.json`` (rows per solver and task, every episode, the targets of issue 22)
   and ``track.md`` to ``--out``, the PPO run to ``--out/ppo``.

    nice -n 19 env CIRCUIT_GYM_THREADS=1 python scripts/circuit_track.py --out docs/results/circuit
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

from circuit_gym.baselines.circuit_ppo import CircuitPPOConfig, CircuitPPOSolver, train
from circuit_gym.baselines.circuit_solvers import circuit_track, default_solvers
from circuit_gym.embedded import is_embedded
from circuit_gym.envs.circuit_registration import circuit_env_id
from circuit_gym.leaderboard.benchmark import HELD_OUT_TASKS, MODEL, SPLIT, TRAIN_TASKS

# Issue 22's targets for PPO on the Circuit IDs, against exact greedy search.
CPR_GAP = 0.05
PASS_FRACTION = 0.1


def targets(rows: list[dict]) -> dict:
    """PPO's held-out CPR gap to greedy search and its share of greedy's forward passes (all tasks)."""
    by = {r["solver"]: r for r in rows if r["task"] == "all"}
    if "ppo" not in by or "greedy_search" not in by:
        return {}
    gap = by["greedy_search"]["cpr"] - by["ppo"]["cpr"]
    share = by["ppo"]["forward_passes"] / by["greedy_search"]["forward_passes"]
    return {"cpr_gap_to_greedy": gap, "cpr_gap_target": CPR_GAP, "cpr_target_met": bool(gap <= CPR_GAP),
            "forward_pass_share": share, "forward_pass_target": PASS_FRACTION,
            "forward_pass_target_met": bool(share <= PASS_FRACTION)}  # fmt: skip


def markdown(rows: list[dict]) -> str:
    lines = ["| solver | task | CPR (95% CI) | CMD (95% CI) | f of built circuit | heads | forward passes / episode | episodes |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        (clo, chi), (dlo, dhi) = r["cpr_ci95"], r["cmd_ci95"]
        lines.append(
            f"| {r['solver']} | {r['task']} | {r['cpr']:.3f} [{clo:.3f}, {chi:.3f}] | {r['cmd']:.3f} "
            f"[{dlo:.3f}, {dhi:.3f}] | {r['faithfulness']:.3f} | {r['circuit_size']:.1f} | "
            f"{r['forward_passes']:.0f} | {r['episodes']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("docs/results/circuit"))
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--episodes", type=int, default=4, help="held-out batches per task")
    parser.add_argument("--budget", type=int, default=16)
    parser.add_argument("--alpha", type=float, default=0.01)
    parser.add_argument(
        "--train-alpha", type=float, default=CircuitPPOConfig.alpha, help="PPO's training cost per head"
    )
    parser.add_argument("--checkpoint", type=Path, default=None, help="a trained PPO run: skip training")
    parser.add_argument("--epochs", type=int, default=CircuitPPOConfig.epochs)
    parser.add_argument("--steps-per-epoch", type=int, default=CircuitPPOConfig.steps_per_epoch)
    parser.add_argument("--selection-episodes", type=int, default=CircuitPPOConfig.selection_episodes)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.time()
    ppo_dir = args.checkpoint
    config = None
    if ppo_dir is None:
        ppo_dir = args.out / "ppo"
        config = CircuitPPOConfig(env_id=circuit_env_id("Toy" if is_embedded(args.model) else "GPT2", "Multi"),
                                  model=args.model, budget=args.budget, alpha=args.train_alpha, epochs=args.epochs,
                                  steps_per_epoch=args.steps_per_epoch, selection_episodes=args.selection_episodes, seed=args.seed)  # fmt: skip
        train(config, ppo_dir, progress=True)
    train_seconds = time.time() - start
    solvers = {**default_solvers(args.seed), "ppo": lambda: CircuitPPOSolver.load(ppo_dir)}
    result = circuit_track(args.model, HELD_OUT_TASKS, SPLIT, range(args.episodes), solvers, budget=args.budget,
                           alpha=args.alpha, progress=True)  # fmt: skip
    report = {
        "model": args.model, "held_out_tasks": list(HELD_OUT_TASKS), "train_tasks": list(TRAIN_TASKS),
        "split": SPLIT, "episodes": args.episodes, "budget": args.budget, "alpha": args.alpha,
        "ppo": str(ppo_dir), "ppo_config": asdict(config) if config else None,
        "train_seconds": train_seconds, "track_seconds": time.time() - start - train_seconds,
        "targets": targets(result["rows"]), "rows": result["rows"], "episodes_rows": result["episodes"],
    }  # fmt: skip
    (args.out / "track.json").write_text(json.dumps(report, indent=1))
    (args.out / "track.md").write_text(
        markdown(result["rows"]) + "\n\n" + json.dumps(report["targets"], indent=1) + "\n"
    )
    print(markdown(result["rows"]))
    print(json.dumps(report["targets"], indent=1))
    return report


if __name__ == "__main__":
    main()
