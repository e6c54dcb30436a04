"""PPO (Tianshou 2.x) on the benchmark in force: train on its training models and tasks, evaluate on held-out ones.

Evaluation is best-of-1 on the held-out tasks of the held-out models (the board's hardest quadrant).

    python baselines/ppo.py --out runs/ppo_v8                 # the reference recipe, seed 0 (hours on a CPU)
    python baselines/ppo.py --out /tmp/ppo --tiny             # a smoke run: a few steps, one episode
    python baselines/ppo.py --out runs/ppo_v8 --eval-only     # evaluate a finished (or committed) run

What happens, step by step:

1. **Environment** (training): ``CircuitDiscovery-Zoo-Multi-v0`` over the benchmark's training models
   (v8: zoo v3's ``zoo-v3-train``, zoo9 and zoo11), episodes of the training tasks on the train split.
   One step: rank the heads, ablate one, get the contrastive reward. The observation is one
   feature row per head; ``info["action_mask"]`` marks the heads still available.
2. **Network** (``circuit_gym.baselines.ppo.HeadScorer``): the same small MLP embeds every head's
   row, one self-attention layer mixes the heads, a logit per head; the critic pools the rows.
   It never sees a head's index, so it applies to any model and task.
3. **PPO** (``circuit_gym.baselines.ppo.train``, Tianshou's ``PPO`` and on-policy trainer):
   ``--epochs`` x ``--steps-per-epoch`` environment steps; after every epoch the network is scored
   on held-back *train-split* batches (oracle recovery) and the best is kept as ``policy.pt``; no
   held-out task, model or test batch is used to choose anything. Resumable: rerun the command.
4. **Evaluation** (``circuit_gym.baselines.held_out.evaluate_held_out``, as for greedy and random):
   the board's own environment (the benchmark's pinned ablation, reference text and test split;
   episode ``i`` = test batch ``i``) on each held-out model and the held-out tasks it serves;
   best-of-1 ablates the top head; the recovery is the ratio of sums of the chosen heads' rewards
   to the oracle's.

The reference recipe's settings (``circuit_gym.baselines.transfer_training.config_of``) are
printed at the start; the flags below change only the budget.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, where the sibling baselines/random.py
# would stand in for the standard library's random module that numpy and torch import: take it off first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

from circuit_gym import benchmark as B  # noqa: E402
from circuit_gym.baselines.held_out import add_held_out_arguments, evaluate_held_out  # noqa: E402
from circuit_gym.baselines.ppo import PPOPolicy, train  # noqa: E402
from circuit_gym.baselines.transfer_training import config_of  # noqa: E402

# --tiny: enough to run every stage once (minutes on a busy 2-core machine), not to learn; on the
# first training and held-out model of the benchmark in force (each serves the task given it)
_IN_FORCE = B.transfer_benchmark(B.IN_FORCE)
TINY = dict(epochs=1, steps_per_epoch=16, steps_per_collect=8, n_envs=1, pool_size=1, selection_episodes=1,
            minibatch=8, repeat=1, model=_IN_FORCE.train_models[0], tasks="ioi", episodes=1,
            eval_models=[_IN_FORCE.held_out_models[0]], eval_tasks=["brackets"])  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[4:8]))  # fmt: skip
    p.add_argument("--out", required=True, help="the run's folder (policy.pt, curve.json, TensorBoard logs)")
    p.add_argument("--seed", type=int, default=0, help="training seed (the board's PPO: seeds 0-4)")
    p.add_argument("--device", default="cpu", help="where the language models run (cpu, cuda)")
    p.add_argument("--tiny", action="store_true", help="a smoke run: the budget below, one episode each")
    budget = p.add_argument_group("budget (default: the reference recipe's)")
    for name in ("epochs", "steps_per_epoch", "steps_per_collect", "n_envs", "pool_size", "selection_episodes",
                 "minibatch", "repeat"):  # fmt: skip
        budget.add_argument(f"--{name.replace('_', '-')}", type=int)
    budget.add_argument(
        "--model", help="training model or model set (default: the benchmark's training models)"
    )
    budget.add_argument("--tasks", help="comma-separated training tasks (default: the benchmark's)")
    ev = add_held_out_arguments(p, prefix="eval-")  # --eval-models, --eval-tasks, --episodes, --json
    ev.add_argument("--eval-only", action="store_true", help="evaluate the policy.pt already in --out")
    args = p.parse_args(argv)
    if args.tiny:  # fills only what was not given
        for key, value in TINY.items():
            if getattr(args, key) is None:
                setattr(args, key, value)
    return args


def training_config(args: argparse.Namespace):
    """The reference recipe of the benchmark in force (seed ``--seed``), with the budget flags given."""
    config = config_of("ppo", args.seed, args.device, version=B.IN_FORCE)
    changes = {f.name: getattr(args, f.name) for f in dataclasses.fields(config)
               if getattr(args, f.name, None) is not None and f.name not in ("seed", "device")}  # fmt: skip
    return dataclasses.replace(config, **changes)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    start, out = time.time(), Path(args.out)
    config = training_config(args)
    print(f"[ppo] benchmark {B.IN_FORCE}; recipe: {json.dumps(dataclasses.asdict(config))}", flush=True)
    if not args.eval_only:
        summary = train(config, out, progress=True)  # progress bars in a terminal, lines in a log
        print(f"[ppo {time.time() - start:6.1f}s] trained: best selection recovery "
              f"{summary.get('best_selection_recovery', float('nan')):.3f} (train split, held-back batches)")  # fmt: skip
    policy = PPOPolicy.load(out)
    result = evaluate_held_out("ppo", lambda obs, env: policy.rank_heads(obs), args.eval_models, args.eval_tasks,
                               args.episodes, label=f"ppo (seed {args.seed})")  # fmt: skip
    result = {**result, "seed": args.seed, "run": str(out), "config": dataclasses.asdict(config)}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
