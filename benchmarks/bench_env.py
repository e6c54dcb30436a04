"""Benchmark: environment throughput on the Toy IDs, cached and live, and first-reset cost.

python benchmarks/bench_env.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import gymnasium as gym

import circuit_gym  # noqa: F401  (registers the IDs)


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
    parser.add_argument("--pool-size", type=int, default=16)
    args = parser.parse_args()
    import os

    os.environ["CIRCUIT_GYM_CACHE"] = tempfile.mkdtemp()  # a cold disk cache
    for env_id in ("CircuitDiscovery-Toy-IOI-v1", "CircuitDiscovery-Toy-Induction-v1",
                   "CircuitDiscovery-Toy-Docstring-v1", "CircuitDiscovery-Toy-Multi-v1"):  # fmt: skip
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


if __name__ == "__main__":
    main()
