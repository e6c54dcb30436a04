"""Benchmark: one episode's faithfulness curve, stacked circuits against a plain loop.

On the embedded model (12 x 12) with the environments' default ablation (resample), for
one test-split batch of eight prompts per built-in task, and a ranking (the exact
single-head damages, computed outside the timings):

- ``stacked_s``: :class:`~circuit_gym.circuits.CircuitRunner` set-up (clean and
  counterfactual passes, the replay check) plus :func:`~circuit_gym.circuits.faithfulness_curve`:
  the empty circuit and the ten MIB sizes (eleven circuits, duplicates run once) in one
  stacked pass;
- ``plain_s``: the same numbers from a plain loop: a clean and a counterfactual pass for the
  caches, then one full hooked forward pass per size (eleven);
- ``scores_s``: :func:`~circuit_gym.circuits.batch_scores` (signed and absolute curves plus
  eight random rankings' curves, all stacked), for scale;
- the largest difference between the two curves.

Best of ``--repeats`` runs each. Writes ``benchmarks/results/faithfulness.json``.

    python benchmarks/bench_faithfulness.py [--repeats 3] [--tasks ioi docstring]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from timing import best_of

from circuit_gym.circuits import (
    Circuit,
    CircuitRunner,
    Ranking,
    batch_scores,
    faithfulness,
    faithfulness_curve,
)
from circuit_gym.circuits.curve import circuit_sizes
from circuit_gym.models import load_model
from circuit_gym.models.cards import gated_tasks
from circuit_gym.tasks import get_task

RESULTS = Path(__file__).resolve().parent / "results" / "faithfulness.json"
TARGET_S = 0.25


@torch.no_grad()
def plain_curve(model, task, batch, ranking: Ranking) -> list[float]:
    """The plain loop: caches from a clean and a counterfactual pass, then one hooked
    forward pass per circuit (the empty one and each size)."""
    names = [f"blocks.{layer}.attn.hook_z" for layer in range(ranking.n_layers)]
    clean_logits = model(batch.tokens)
    _, source = model.run_with_cache(batch.counterfactual, names_filter=lambda n: n in names)
    circuits = [Circuit.empty(ranking.n_layers, ranking.n_heads)]
    circuits += [ranking.top(n) for n in circuit_sizes(ranking.n_layers * ranking.n_heads)]
    metrics = []
    for circuit in circuits:
        ablated = torch.tensor(~circuit.mask).view(ranking.n_layers, ranking.n_heads)

        def hook(z, hook, ablated=ablated):
            layer = int(hook.name.split(".")[1])
            z = z.clone()
            z[:, :, ablated[layer]] = source[names[layer]][:, :, ablated[layer]]
            return z

        logits = model.run_with_hooks(batch.tokens, fwd_hooks=[(n, hook) for n in names])
        metrics.append(float(task.score(logits, batch).mean()))
    full = float(task.score(clean_logits, batch).mean())
    return [float(faithfulness(m, metrics[0], full)) for m in metrics[1:]]


def bench(model, task_name: str, repeats: int) -> dict:
    task = get_task(task_name)
    batch = task.batch(model, "test", 8, seed=0)
    probe = CircuitRunner.for_task(model, task, batch, "resample")
    full = Circuit.full(probe.n_layers, probe.n_heads)
    damage = probe.full_metric - probe.metric([full.without(h) for h in range(full.n_total)])
    ranking = Ranking.from_array(damage, "exact_single_head_damage", probe.n_layers, probe.n_heads)

    def stacked():
        return faithfulness_curve(CircuitRunner.for_task(model, task, batch, "resample"), ranking)

    stacked_s, curve = best_of(stacked, repeats)
    plain_s, plain = best_of(lambda: plain_curve(model, task, batch, ranking), repeats)
    scores_s, _ = best_of(
        lambda: batch_scores(CircuitRunner.for_task(model, task, batch, "resample"), ranking), repeats
    )
    row = {
        "task": task_name, "prompts": list(batch.tokens.shape), "sizes": list(curve.sizes),
        "stacked_s": stacked_s, "plain_s": plain_s, "speedup": plain_s / stacked_s, "scores_s": scores_s,
        "meets_target": stacked_s <= TARGET_S, "max_abs_diff": float(np.abs(np.subtract(curve.faithfulness, plain)).max()),
    }  # fmt: skip
    print(f"{task_name:>14} {str(row['prompts']):>8}: stacked {stacked_s:.3f} s, plain {plain_s:.3f} s "
          f"({row['speedup']:.1f}x), with 8 random rankings {scores_s:.3f} s, max |diff f| {row['max_abs_diff']:.1e}",
          flush=True)  # fmt: skip
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", nargs="*", default=None, help="default: the tasks toy passes its gate on")
    args = parser.parse_args()
    model = load_model("toy")
    rows = [bench(model, t, args.repeats) for t in (args.tasks or gated_tasks("toy"))]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"threads": torch.get_num_threads(), "target_s": TARGET_S,
                                   "model_weights": model.circuit_gym_info.weights_hash, "rows": rows}, indent=1))  # fmt: skip
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
