"""How long a Planted environment's reset takes on a seed it has never seen (issue 31: "well under
a second"): generating the weights and the truth, writing the checkpoint, and the whole reset
(generation, loading the model, building the inner environment and the episode's first batch),
and the circuit-building reset as it is against as it was when it also built the unused
general-damage engine (alternating seeds in one process).

    python scripts/planted_reset_timing.py --seeds 10 [--out JSON]

Runs in a fresh temporary cache, so every seed is new; prints medians and maxima of the wall time
and of this process's CPU time (on a loaded machine the wall time is mostly waiting for a core).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="fresh seeds timed per measurement")
    parser.add_argument("--out", type=Path, help="also write the medians and maxima here (JSON)")
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
    times.update(_general_engine_cost(args.seeds))
    summary = {key: _summary(values) for key, values in times.items()}
    for key, row in summary.items():
        print(f"{key}: wall median {row['wall_median']:.3f} s (max {row['wall_max']:.3f}), "
              f"CPU median {row['cpu_median']:.3f} s (max {row['cpu_max']:.3f}), {row['seeds']} seeds")  # fmt: skip
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"seeds": args.seeds, "load_after": os.getloadavg(), "timings": summary},
                                       indent=1) + "\n")  # fmt: skip


def _summary(values: list[tuple[float, float]]) -> dict:
    """Median and maximum of the wall and CPU seconds of one measurement's seeds."""
    wall, cpu = zip(*values, strict=True)
    return {"wall_median": statistics.median(wall), "wall_max": max(wall), "cpu_median": statistics.median(cpu),
            "cpu_max": max(cpu), "seeds": len(values)}  # fmt: skip


def _general_engine_cost(n_seeds: int) -> dict[str, list[tuple[float, float]]]:
    """The circuit ID's first reset on fresh seeds as it is, and as it was before its pool
    stopped building the reference text's general-damage engine (``Episode.task_engine`` taken
    from the contrastive scorer, which builds both engines): seeds alternate between the two
    in one process, so the load is shared alike."""
    import gymnasium as gym

    from circuit_gym.ablation.tables import general_engine
    from circuit_gym.envs import pool

    now = pool.Episode.task_engine

    def built_as_before(
        episode,
    ):  # the scorer's path: its general-damage engine (one per model), then the task's
        general_engine(episode.pool.model, episode.pool.reference, episode.pool.ablation)
        return now.fget(episode)

    before = property(built_as_before)
    env = gym.make(
        "CircuitDiscovery-Planted-MultiHop-Circuit-v0", pool_size=1, batch_size=8, oracle_info=False
    )
    env.reset(options={"model_seed": 3_000_000})
    out: dict[str, list[tuple[float, float]]] = {"circuit reset, now": [], "circuit reset, as before": []}
    try:
        for i, seed in enumerate(range(3_000_001, 3_000_001 + 2 * n_seeds)):
            pool.Episode.task_engine = before if i % 2 else now
            key = "circuit reset, as before" if i % 2 else "circuit reset, now"
            out[key].append(_timed(lambda s: env.reset(options={"model_seed": s}), seed))
    finally:
        pool.Episode.task_engine = now
        env.close()
    ratio = statistics.median(c for _, c in out["circuit reset, as before"]) / statistics.median(
        c for _, c in out["circuit reset, now"]
    )
    print(f"circuit reset CPU time, before / now (medians): {ratio:.2f}")
    return out


def _timed(fn, arg) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn(arg)
    return time.perf_counter() - wall, time.process_time() - cpu


if __name__ == "__main__":
    main()
