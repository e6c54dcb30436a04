"""Benchmark: PPO's own cost in the main job's two PPO stages (issue 46), environment steps per
second and where they go.

For the single-head stage (``circuit_gym.baselines.ppo``, the main job's ``PPOConfig`` on the
embedded model) and the circuit-building stage (``circuit_building_track.ppo_config("toy", 0)``),
with each stage's own ``n_envs``, ``steps_per_collect``, ``minibatch`` and ``repeat``, on a pool of
``--pool-size`` batches per task computed beforehand (the stages' warm-up; not timed), it times
``--collects`` rounds of what the training loop does per round (``ppo_trainer.train``: Tianshou's
``Collector.collect`` of ``steps_per_collect`` steps, then ``algorithm.update``) and splits them:

- ``env``: the same number of steps of the same vector environment with random legal actions;
- ``policy forward (collect)``: time inside the network's ``logits``/``state_value`` while collecting;
- ``update``: the PPO update (the network's forward and backward passes, the optimiser);
- ``steps_per_s``: env steps / (collect + update): the stage's training throughput (the per-epoch
  selection score and the warm-up are not in it).

``policy_share`` = (policy forward + update) / (collect + update). Writes
``benchmarks/results/ppo.json`` (or ``--json``). The machine is shared: the load average before
and after is recorded; compare ratios within one run (``--compare A B`` times a second code
version side by side: each is a folder holding a ``circuit_gym`` package).

    python benchmarks/bench_ppo.py [--collects 3] [--pool-size 4] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from machine_rate import load_average

RESULTS = Path(__file__).resolve().parent / "results" / "ppo.json"


class Timed:
    """Wraps a network's ``logits`` and ``state_value`` and sums the seconds spent in them."""

    def __init__(self, net) -> None:
        self.seconds = 0.0
        for name in ("logits", "state_value"):
            setattr(net, name, self._timed(getattr(net, name)))

    def _timed(self, fn):
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return run


def stage(name: str, config, recipe, collects: int) -> dict:
    """Time ``collects`` collect + update rounds of ``recipe`` under ``config`` (module docstring)."""
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.torch_utils import policy_within_training_step

    from circuit_gym.baselines import ppo_trainer

    recipe.warm_up(config, False)

    def vector_env():
        envs = DummyVectorEnv([lambda i=i: ppo_trainer.training_env(recipe, config, config.seed + i)
                               for i in range(config.n_envs)])  # fmt: skip
        envs.seed(config.seed)
        return envs

    steps = config.steps_per_collect * collects
    envs = vector_env()
    obs, _ = envs.reset()
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(steps // config.n_envs):
        actions = [rng.choice(np.flatnonzero(o["mask"])) for o in obs]
        obs, _, terminated, truncated, _ = envs.step(np.array(actions))
        done = np.flatnonzero(terminated | truncated)
        if len(done):
            reset_obs, _ = envs.reset(done)
            for j, i in enumerate(done):
                obs[i] = reset_obs[j]
    env_seconds = time.perf_counter() - start

    torch.manual_seed(config.seed)
    probe = ppo_trainer.training_env(recipe, config, 0)
    net = recipe.make_net(config, probe.observation_space["obs"].shape[-1])
    algorithm = ppo_trainer.build_algorithm(config, probe.action_space, net)
    timer = Timed(net)
    collector = Collector(
        algorithm, vector_env(), VectorReplayBuffer(config.steps_per_collect, config.n_envs)
    )
    collector.reset()
    collect_seconds = update_seconds = forward_seconds = 0.0
    for _ in range(collects):
        with policy_within_training_step(algorithm.policy):  # as the trainer's training step
            timer.seconds = 0.0
            t = time.perf_counter()
            collector.collect(n_step=config.steps_per_collect)
            collect_seconds += time.perf_counter() - t
            forward_seconds += timer.seconds
            t = time.perf_counter()
            algorithm.update(buffer=collector.buffer, batch_size=config.minibatch, repeat=config.repeat)
            update_seconds += time.perf_counter() - t
            collector.reset_buffer(keep_statistics=True)
    total = collect_seconds + update_seconds
    row = {"stage": name, "env_steps": steps, "n_envs": config.n_envs, "steps_per_collect": config.steps_per_collect,
           "minibatch": config.minibatch, "repeat": config.repeat, "env_seconds": env_seconds,
           "env_steps_per_s": steps / env_seconds, "collect_seconds": collect_seconds,
           "policy_forward_collect_seconds": forward_seconds, "update_seconds": update_seconds,
           "steps_per_s": steps / total, "policy_share": (forward_seconds + update_seconds) / total,
           "env_share": env_seconds / total}  # fmt: skip
    print(f"{name:>12}: {row['steps_per_s']:6.1f} steps/s (env alone {row['env_steps_per_s']:6.1f}); "
          f"policy network {row['policy_share']:.0%} (update {update_seconds / total:.0%}), "
          f"env {row['env_share']:.0%}", flush=True)  # fmt: skip
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--collects", type=int, default=3)
    parser.add_argument("--pool-size", type=int, default=4)
    parser.add_argument("--stages", default="single_head,circuit")
    parser.add_argument("--json", type=Path, default=RESULTS)
    parser.add_argument("--note", default="", help="what else ran on the machine (recorded)")
    args = parser.parse_args()
    from dataclasses import replace

    from circuit_gym.baselines import circuit_building_track, circuit_ppo, ppo
    from circuit_gym.benchmark import multi_env_id

    configs = {
        "single_head": (replace(ppo.PPOConfig(), env_id=multi_env_id("toy"), model="toy",
                                pool_size=args.pool_size, selection_episodes=0), ppo.RECIPE),
        "circuit": (replace(circuit_building_track.ppo_config("toy", 0), pool_size=args.pool_size,
                            selection_episodes=0), circuit_ppo.RECIPE),
    }  # fmt: skip
    load_before = load_average()
    rows = [stage(name, *configs[name], args.collects) for name in args.stages.split(",")]
    result = {"command": "python benchmarks/bench_ppo.py", "threads": torch.get_num_threads(),
              "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "load_before": load_before,
              "load_after": load_average(), "note": args.note, "pool_size": args.pool_size, "collects": args.collects, "rows": rows}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
