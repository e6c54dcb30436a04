"""Benchmark: the engine's single-head sweep against the plain one-hook-per-head loop.

Measured in one run, on (a) the embedded toy model and (b) a randomly initialised
GPT-2-shaped model (12 layers x 12 heads, d_model 768, vocabulary 50,257) on an IOI batch;
prints both times, the ratio, and the largest difference between the two tables.

    python benchmarks/bench_sweep.py [--batch-size 8] [--repeats 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from circuit_gym.ablation import AblationEngine, Evaluation
from circuit_gym.models import load_model
from circuit_gym.models.random_checkpoint import write_random_gpt2_checkpoint
from circuit_gym.tasks import get_task


def bench(model, label: str, task_name: str, batch_size: int, repeats: int) -> dict:
    task = get_task(task_name)
    batch = task.batch(model, "train", batch_size, seed=0)
    start = time.perf_counter()
    engine = AblationEngine(model, Evaluation.for_task(task, batch), "zero")
    clean_pass = time.perf_counter() - start
    fast_times, naive_times = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        fast = engine.sweep()
        fast_times.append(time.perf_counter() - t + clean_pass)
        t = time.perf_counter()
        naive = engine.naive_sweep()
        naive_times.append(time.perf_counter() - t)
    fast_s, naive_s = min(fast_times), min(naive_times)
    row = {
        "model": label, "task": task_name, "prompts": list(batch.tokens.shape), "heads": len(fast),
        "naive_s": naive_s, "engine_s": fast_s, "speedup": naive_s / fast_s,
        "max_abs_diff": float(np.abs(fast - naive).max()),
    }  # fmt: skip
    print(f"{label:>28} {task_name:>9} {str(row['prompts']):>9} heads {row['heads']:>3}: naive {naive_s:7.2f} s, "
          f"engine {fast_s:6.2f} s (incl. clean pass) -> {row['speedup']:.1f}x, max |diff| {row['max_abs_diff']:.1e}",
          flush=True)  # fmt: skip
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    rows = [
        bench(load_model("toy"), "toy (4x4)", t, args.batch_size, args.repeats) for t in ("ioi", "induction")
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = write_random_gpt2_checkpoint(tmp, n_embd=768, vocab_size=50257, n_positions=1024)
        gpt2_shaped = load_model("gpt2", path=path)
        rows += [bench(gpt2_shaped, "random GPT-2 shape (12x12)", t, args.batch_size, args.repeats)
                 for t in ("ioi", "induction")]  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
