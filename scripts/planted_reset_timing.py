"""How long a Planted environment's reset takes on a seed it has never seen (issue 31: "well under
a second"): generating the weights and the truth, writing the checkpoint, and the whole reset
(generation, loading the model, building the inner environment and the episode's first batch).

    python scripts/planted_reset_timing.py --seeds 10

Runs in a fresh temporary cache, so every seed is new; prints medians and maxima of the wall time
and of this process's CPU time (on a loaded machine the wall time is mostly waiting for a core).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="fresh seeds timed per measurement")
    args = parser.parse_args()
    os.environ["CIRCUIT_GYM_CACHE"] = tempfile.mkdtemp(prefix="planted_timing_")
    import gymnasium as gym

    import circuit_gym  # noqa: F401  (registers the IDs)
    from circuit_gym.models.planted.generator import generate, planted_checkpoint

    generate(10**9)  # the first call pays numpy's and torch's warm-up, not the generator's
    times: dict[str, list[tuple[float, float]]] = {"generate (weights + truth)": [],
                                                   "generate + write checkpoint": []}  # fmt: skip
    for seed in range(1_000_000, 1_000_000 + args.seeds):
        times["generate (weights + truth)"].append(_timed(generate, seed))
        times["generate + write checkpoint"].append(_timed(planted_checkpoint, seed + 10_000))
    for env_id in ("CircuitDiscovery-Planted-MultiHop-v0", "CircuitDiscovery-Planted-MultiHop-Circuit-v0"):
        env = gym.make(env_id, pool_size=1, batch_size=8, oracle_info=False)
        env.reset(options={"model_seed": 2_000_000})  # warm-up: the first episode of the process
        key = f"whole reset on a fresh seed, {env_id}"
        times[key] = []
        for seed in range(2_000_001, 2_000_001 + args.seeds):
            times[key].append(_timed(lambda s, env=env: env.reset(options={"model_seed": s}), seed))
        env.close()
    for key, values in times.items():
        wall, cpu = zip(*values, strict=True)
        print(f"{key}: wall median {statistics.median(wall):.3f} s (max {max(wall):.3f}), "
              f"CPU median {statistics.median(cpu):.3f} s (max {max(cpu):.3f}), {len(values)} seeds")  # fmt: skip


def _timed(fn, arg) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn(arg)
    return time.perf_counter() - wall, time.process_time() - cpu


if __name__ == "__main__":
    main()
