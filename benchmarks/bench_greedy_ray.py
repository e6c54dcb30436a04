"""Benchmark: one exact greedy step on GPT-2's shape, one process vs Ray workers, as a ratio in one run.

On a random-weight checkpoint with GPT-2 small's full shape (12 x 12 heads, d_model 768,
GPT-2's tokenizer), the first step of greedy search from the empty circuit: all 144
candidate circuits, once in this process (``env.candidate_gains()``, one stacked pass, the
one-process ``GreedySearch``) and once split across ``--workers`` Ray actors
(``baselines.circuit_ray``, ``RayGreedySearch``), on the same state. The env runs with
``cache=False`` so both compute every candidate. Actor start-up (model load, the batch's
clean and counterfactual passes) is timed apart (it overlaps the driver's reset): a solver pays it once, not per step. Also
checks that both give the same gains, and prints the machine's load (``uptime``) before and
after: on a shared machine the ratio says what this machine gave, not what Ray can give.

Writes ``benchmarks/results/greedy_ray.json``.

    python benchmarks/bench_greedy_ray.py [--workers 2] [--batch-size 8] [--path DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym.baselines.circuit_ray import RayWorkers, env_kwargs
from circuit_gym.envs.circuit_building import CircuitBuildingEnv
from circuit_gym.envs.registration import circuit_env_id
from circuit_gym.models.random_checkpoint import write_random_gpt2_checkpoint


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def phase(name: str, seconds: float) -> None:
    print(f"{name}: {seconds:.1f} s", file=sys.stderr, flush=True)  # partial numbers if stopped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per batch (the env's default: 8)")
    parser.add_argument("--path", help="a GPT-2-shape checkpoint directory (written there if absent)")
    args = parser.parse_args()
    os.environ["CIRCUIT_GYM_CACHE"] = tempfile.mkdtemp()  # never the user's cache
    out: dict = {"workers": args.workers, "batch_size": args.batch_size, "load_before": uptime(),
                 "cpus": os.cpu_count()}  # fmt: skip
    path = Path(args.path) if args.path else Path(tempfile.mkdtemp()) / "gpt2"
    if not (path / "model.safetensors").exists():
        write_random_gpt2_checkpoint(path, n_embd=768)
    env = gym.make(circuit_env_id("GPT2", "IOI"), model="gpt2", model_path=str(path), pool_size=1,
                   batch_size=args.batch_size, cache=False, oracle_info=False)  # fmt: skip
    base: CircuitBuildingEnv = env.unwrapped  # type: ignore[assignment]
    out["threads_driver"] = torch.get_num_threads()
    t = time.perf_counter()
    workers = RayWorkers(args.workers, env_kwargs(base))  # the actors load while the driver resets
    base.reset(options={"task": "ioi", "batch_index": 0})
    out["driver_reset_seconds"] = time.perf_counter() - t
    phase("driver_reset_seconds", out["driver_reset_seconds"])
    import ray

    ray.get([a.metrics.remote("ioi", 0, []) for a in workers.actors])  # each builds the batch's runner
    out["actors_ready_seconds"] = time.perf_counter() - t  # overlaps the driver's reset
    phase("actors_ready_seconds", out["actors_ready_seconds"])
    out["candidates"] = len(base.candidates())
    t = time.perf_counter()
    serial = base.candidate_gains()
    out["one_process_seconds"] = time.perf_counter() - t
    phase("one_process_seconds", out["one_process_seconds"])
    t = time.perf_counter()
    fanned = base.candidate_gains(metrics=workers.evaluator(base))
    out["ray_seconds"] = time.perf_counter() - t
    phase("ray_seconds", out["ray_seconds"])
    out["speedup"] = out["one_process_seconds"] / out["ray_seconds"]
    out["identical_gains"] = bool(np.array_equal(serial, fanned, equal_nan=True))
    out["max_abs_difference"] = float(np.nanmax(np.abs(serial - fanned)))
    out["load_after"] = uptime()
    workers.close()
    ray.shutdown()
    print(json.dumps(out, indent=1))
    print(f"one greedy step, {out['candidates']} candidates: one process {out['one_process_seconds']:.1f} s, "
          f"{args.workers} Ray workers {out['ray_seconds']:.1f} s (x{out['speedup']:.2f}); same gains: "
          f"{out['identical_gains']}; load {out['load_before'].split('load average:')[-1].strip()} before, "
          f"{out['load_after'].split('load average:')[-1].strip()} after")  # fmt: skip
    results = Path(__file__).resolve().parent / "results" / "greedy_ray.json"
    results.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
