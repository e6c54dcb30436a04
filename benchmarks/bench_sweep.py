"""Benchmark: the engine's single-head sweep against the plain one-hook-per-head loop.

Measured in one run, on (a) the embedded model (12 x 12) for every built-in task, with the
environments' default resample ablation, and optionally (b, ``--gpt2``) a randomly
initialised GPT-2-shaped model (12 layers x 12 heads, d_model 768, vocabulary 50,257) with
zero ablation. Per batch: the engine's sweep including its clean and counterfactual passes,
the same sweep through the bridge's blocks instead of the SDPA replay (attention-only
models), the plain loop, the ratios, and the largest difference between the tables.
Writes ``benchmarks/results/sweep.json``.

    python benchmarks/bench_sweep.py [--batch-size 8] [--repeats 1] [--gpt2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from timing import best_of

from circuit_gym.ablation import AblationEngine, Evaluation, default_ablation
from circuit_gym.models import load_model
from circuit_gym.models.cards import gated_tasks
from circuit_gym.models.random_checkpoint import write_random_gpt2_checkpoint
from circuit_gym.tasks import get_task

RESULTS = Path(__file__).resolve().parent / "results" / "sweep.json"


def bench(model, label: str, task_name: str, batch_size: int, repeats: int) -> dict:
    task = get_task(task_name)
    batch = task.batch(model, "train", batch_size, seed=0)
    kind = default_ablation(model.circuit_gym_info.name)
    start = time.perf_counter()
    engine = AblationEngine(model, Evaluation.for_task(task, batch), kind)
    setup = time.perf_counter() - start  # clean and counterfactual passes, replay check
    engine_s, fast = best_of(engine.sweep, repeats)
    row = {"model": label, "task": task_name, "ablation": kind, "prompts": list(batch.tokens.shape),
           "heads": len(fast), "engine_s": setup + engine_s, "sdpa_replay": engine._fast is not None}  # fmt: skip
    if engine._fast is not None:
        replay, engine._fast = engine._fast, None
        bridge_s, bridge = best_of(engine.sweep, repeats)
        engine._fast = replay
        row.update(bridge_blocks_s=setup + bridge_s, max_abs_diff_bridge=float(np.abs(fast - bridge).max()))
    naive_s, naive = best_of(engine.naive_sweep, repeats)
    row.update(
        naive_s=naive_s, speedup=naive_s / row["engine_s"], max_abs_diff=float(np.abs(fast - naive).max())
    )
    print(f"{label:>22} {task_name:>12} {str(row['prompts']):>8}: engine {row['engine_s']:5.2f} s"
          + (f" (bridge blocks {row['bridge_blocks_s']:5.2f} s)" if "bridge_blocks_s" in row else "")
          + f", naive {naive_s:6.2f} s -> {row['speedup']:.1f}x, max |diff| {row['max_abs_diff']:.1e}", flush=True)  # fmt: skip
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--gpt2", action="store_true", help="also the random GPT-2-shaped model (minutes)")
    args = parser.parse_args()
    model = load_model("toy")
    rows = [
        bench(model, "embedded toy (12x12)", t, args.batch_size, args.repeats) for t in gated_tasks("toy")
    ]
    if args.gpt2:
        with tempfile.TemporaryDirectory() as tmp:
            path = write_random_gpt2_checkpoint(tmp, n_embd=768, vocab_size=50257, n_positions=1024)
            gpt2_shaped = load_model("gpt2", path=path)
            rows += [
                bench(gpt2_shaped, "random GPT-2 shape", t, args.batch_size, args.repeats) for t in ("ioi",)
            ]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"threads": torch.get_num_threads(), "rows": rows}, indent=1))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
