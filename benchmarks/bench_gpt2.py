"""GPT-2 path speed: today's code against a baseline commit, in one run, as ratios.

On a random-weight checkpoint with GPT-2 small's full shape (12 x 12 heads, d_model 768,
vocabulary 50,257) and GPT-2's real tokenizer, for each configuration:

- ``make``: ``gymnasium.make`` of the GPT-2 IOI ID (model load);
- ``reset``: the first reset (prompt batch + per-head features);
- ``general_sweep``: the general-damage sweep over all 144 heads (the bulk of the first
  step). Sampled by default: one head at layers 0, 6 and 11 is timed and the cost is
  extrapolated (it is linear in the blocks run after the ablated layer) to 144 heads;
  ``--full`` times the whole sweep;
- ``task_sweep``: the single-head sweep of one batch of 8 IOI prompts;
- ``first_step`` = clean reference pass + general_sweep + task_sweep (what the first
  ``step`` of a process costs), ``next_batch`` = a second reset (another batch) + task_sweep.

The baseline runs from a ``git worktree`` of ``--baseline`` (default: the commit before
the GPT-2 work) with ``reference="stdlib"``, since its default reference is too short
for GPT-2's tokenizer. Each configuration runs in its own process.

    python benchmarks/bench_gpt2.py                 # ~10 min on 2 cores
    python benchmarks/bench_gpt2.py --width 96      # wiring check, seconds
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

ROOT = Path(__file__).resolve().parents[1]

MEASURE = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np, torch
t0 = time.perf_counter()
import gymnasium as gym
import circuit_gym
from circuit_gym.ablation.engine import AblationEngine, Evaluation
from circuit_gym.ablation import engine as E
from circuit_gym.tasks import get_task
from circuit_gym.tasks.reference import reference_batch
cfg = json.loads(sys.argv[1])
torch.set_num_threads(cfg["threads"])
kw = dict(model="gpt2", model_path=cfg["path"], tasks=["ioi"], cache=False)
if cfg.get("reference"):
    kw["reference"] = cfg["reference"]
ids = [i for i in gym.registry if i.startswith("CircuitDiscovery-GPT2-IOI")]
t = time.perf_counter(); env = gym.make(sorted(ids)[-1], **kw); out = {"make": time.perf_counter() - t}
torch.set_num_threads(cfg["threads"])
t = time.perf_counter(); env.reset(seed=0, options={"batch_index": 0}); out["reset"] = time.perf_counter() - t
model = env.unwrapped.model
rows = cfg.get("rows")
ref = reference_batch(model, cfg.get("reference"), **({"n_rows": rows} if rows else {}))
def evaluation(e):
    try:
        return Evaluation.for_reference(e, next(model.parameters()).device)
    except TypeError:
        return Evaluation.for_reference(e)
t = time.perf_counter(); gen = AblationEngine(model, evaluation(ref), "zero"); out["clean_reference"] = time.perf_counter() - t
L, H = model.cfg.n_layers, model.cfg.n_heads
if cfg["full"]:
    t = time.perf_counter(); gen.sweep(); out["general_sweep"] = time.perf_counter() - t
else:
    layers = [0, L // 2, L - 1]
    cost = []
    for layer in layers:
        t = time.perf_counter(); gen._sweep_layer_chunk(layer, [0]); cost.append(time.perf_counter() - t)
    slope, intercept = np.polyfit([L - l for l in layers], cost, 1)
    out["general_sweep"] = float(sum(intercept + slope * (L - l) for l in range(L)) * H)
    out["sampled_head_seconds"] = dict(zip(map(str, layers), cost))
task = get_task("ioi")
batch = env.unwrapped.episode.batch
try:
    tev = Evaluation.for_task(task, batch, next(model.parameters()).device)
except TypeError:
    tev = Evaluation.for_task(task, batch)
t = time.perf_counter(); AblationEngine(model, tev, "zero").sweep(); out["task_sweep"] = time.perf_counter() - t
out["first_step"] = out["clean_reference"] + out["general_sweep"] + out["task_sweep"]
t = time.perf_counter(); env.reset(options={"batch_index": 1}); out["second_reset"] = time.perf_counter() - t
out["next_batch"] = out["second_reset"] + out["task_sweep"]
out["reference_rows"] = int(ref.tokens.shape[0]); out["reference_tokens"] = int(ref.tokens.numel())
print("RESULT" + json.dumps(out))
"""


def measure(code_root: Path, config: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code_root), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", MEASURE, json.dumps(config)], capture_output=True, text=True,
                          env=env, cwd=code_root)  # fmt: skip
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"measurement failed ({config}):\n{proc.stderr[-3000:]}")
    return json.loads(line[0][len("RESULT") :])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--width", type=int, default=768, help="d_model of the random GPT-2 (768 = GPT-2 small)")
    p.add_argument("--baseline", default="9827f71", help="commit to compare with")
    p.add_argument("--full", action="store_true", help="time the whole general-damage sweep, not a sample")
    p.add_argument("--out", default="benchmarks/results/gpt2.json")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from circuit_gym.models.random_checkpoint import write_random_gpt2_checkpoint

    with tempfile.TemporaryDirectory() as tmp:
        ckpt = write_random_gpt2_checkpoint(Path(tmp) / "gpt2", n_embd=args.width)
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.baseline],
                       check=True, capture_output=True)  # fmt: skip
        try:
            common = {"path": str(ckpt), "full": args.full}
            runs = {
                "baseline (1 thread, stdlib, 32 rows)": (
                    base,
                    {**common, "threads": 1, "reference": "stdlib"},
                ),
                "now (1 thread, prose, 32 rows)": (ROOT, {**common, "threads": 1}),
                "now (1 thread, prose, 16 rows)": (ROOT, {**common, "threads": 1, "rows": 16}),
                "now (2 threads, prose, 16 rows)": (ROOT, {**common, "threads": 2, "rows": 16}),
            }
            results = {}
            for name, (root, cfg) in runs.items():
                t = time.perf_counter()
                results[name] = measure(root, cfg)
                print(f"{name}: first step {results[name]['first_step']:.1f} s, next batch "
                      f"{results[name]['next_batch']:.2f} s  [{time.perf_counter() - t:.0f} s]", flush=True)  # fmt: skip
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True
            )
    base_name = next(iter(results))
    ratios = {n: {k: results[base_name][k] / r[k] for k in ("first_step", "general_sweep", "next_batch", "make")}
              for n, r in results.items()}  # fmt: skip
    report = {"width": args.width, "full": args.full, "cpu_count": os.cpu_count(), "results": results,
              "speedup_vs_baseline": ratios}  # fmt: skip
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    for n, r in ratios.items():
        print(f"{n:40s} first step x{r['first_step']:.2f}  general sweep x{r['general_sweep']:.2f}  "
              f"next batch x{r['next_batch']:.2f}")  # fmt: skip
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
