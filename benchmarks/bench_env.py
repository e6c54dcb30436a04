"""Benchmark: environment throughput on the current Toy IDs, cached and live, and first-reset cost.

Writes ``benchmarks/results/env.json``.

python benchmarks/bench_env.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import torch

import circuit_gym  # registers the IDs


def episodes_per_second(env, seconds: float) -> float:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.reset()
        env.step(env.action_space.sample())
        n += 1
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--pool-size", type=int, default=8)
    args = parser.parse_args()
    import os

    os.environ["CIRCUIT_GYM_CACHE"] = tempfile.mkdtemp()  # a cold disk cache
    rows = []
    for env_id in [i for i in circuit_gym.envs.env_ids() if "-Toy-" in i]:  # the current (v2) Toy IDs
        t = time.perf_counter()
        env = gym.make(env_id, pool_size=args.pool_size)
        env.reset(seed=0)
        env.step(0)
        first = time.perf_counter() - t
        for i in range(args.pool_size):  # warm every batch of the pool
            env.reset(options={"batch_index": i})
            env.step(0)
        cached = episodes_per_second(env, args.seconds)
        live_env = gym.make(env_id, pool_size=args.pool_size, cache=False)
        live_env.reset(seed=0)
        live = episodes_per_second(live_env, args.seconds)
        print(f"{env_id:>36}: first reset+step {first:6.2f} s, cached {cached:8.0f} episodes/s, "
              f"live {live:6.1f} episodes/s", flush=True)  # fmt: skip
        rows.append({"id": env_id, "first_reset_step_s": first, "cached_episodes_per_s": cached,
                     "live_episodes_per_s": live, "pool_size": args.pool_size})  # fmt: skip
    out = Path(__file__).resolve().parent / "results" / "env.json"
    out.write_text(json.dumps({"threads": torch.get_num_threads(), "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
