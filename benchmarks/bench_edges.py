"""Benchmark: exact edge patching on a 12 x 12 model against the machine's matmul rate,
and one edge CPR curve per episode.

On a zoo model (29,089 edges), one thread, one test-split batch of ``--batch`` prompts per
task (an episode's batch), the model's default ablation (resample):

- ``circuit_s``: :meth:`EdgePatcher.masks_metric_rows` on one circuit that keeps a random
  half of the edges: the dense case (no shortcut, the mixing multiplies a half-full cut
  matrix), best of ``--repeats``; ``circuit_gflops``: the pass's work counted as dense
  matrix products (every edge's ``batch * seq * d_model`` multiply-adds, the per-port Q/K/V
  and the outputs' products) over its time; ``share_of_matmul``: that over the 1-thread
  ``torch.addmm`` rate measured in the same run (``benchmarks/machine_rate.py``);
- ``curve_s``: :func:`~circuit_gym.circuits.curve` of an EAP-IG ranking at MIB's ten sizes
  (the empty circuit and ten circuits, one stacked call), i.e. one edge CPR curve per
  episode; ``setup_s``: the patcher (clean, counterfactual, replay check) and ``eap_ig_s``:
  the ranking, reported apart;
- the load averages before and after (the machine is shared).

Writes ``benchmarks/results/edges.json``.

    python benchmarks/bench_edges.py [--model zoo2] [--tasks ioi induction] [--batch 8] [--repeats 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from machine_rate import load_average, matmul_rates
from timing import best_of

from circuit_gym.circuits.area import cpr
from circuit_gym.edges import EdgeGraph
from circuit_gym.edges.attribution import eap_ig_ranking
from circuit_gym.edges.curve import edge_curve
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task

OUT = Path(__file__).parent / "results" / "edges.json"


def pass_flops(patcher: EdgePatcher) -> float:
    """FLOPs of one circuit's pass counted as dense products: the mixing (every edge into a
    head port or the logits: ``batch * seq * d`` multiply-adds each), the per-port Q/K/V
    products, the heads' output products and attention."""
    tokens = patcher.engine.ev.tokens
    graph, cfg = patcher.graph, patcher.engine.model.cfg
    rows = tokens.numel()  # batch * seq
    d, e, h, seq = int(cfg.d_model), int(cfg.d_head), graph.n_heads, tokens.shape[1]
    mixing = 2.0 * graph.n_edges * rows * d
    per_layer = (
        2.0 * rows * d * 3 * h * e + 2.0 * rows * h * e * d + 2.0 * 2 * tokens.shape[0] * h * seq * seq * e
    )
    return mixing + graph.n_layers * per_layer


def _counts(graph: EdgeGraph) -> dict[str, int]:
    """The graph's edge counts under keys a docs marker can name (no ``>``)."""
    return {key.replace("->", "to_").strip("_").replace("to_port", "_to_port").replace("__", "_"): value
            for key, value in graph.counts.items()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="zoo2")
    parser.add_argument("--tasks", nargs="+", default=["ioi", "induction"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=OUT, help="where to write (default: %(default)s)")
    args = parser.parse_args()
    load_before = load_average()
    model = load_model(args.model, threads=1)
    rate = matmul_rates(model.cfg, threads=(1,))["1_thread"]["gflops"]
    results = []
    for name in args.tasks:
        task = get_task(name)
        batch = task.batch(model, "test", args.batch, seed=0)
        start = time.perf_counter()
        patcher = EdgePatcher.for_task(model, task, batch)
        setup_s = time.perf_counter() - start
        half = np.random.default_rng(0).random((1, patcher.graph.n_edges)) < 0.5
        circuit_s, _ = best_of(
            lambda patcher=patcher, half=half: patcher.masks_metric_rows(half), args.repeats
        )
        start = time.perf_counter()
        ranking = eap_ig_ranking(patcher)
        eap_ig_s = time.perf_counter() - start
        curve_s, _ = best_of(
            lambda patcher=patcher, ranking=ranking: edge_curve(patcher, ranking), args.repeats
        )
        curve = edge_curve(patcher, ranking)
        gflops = pass_flops(patcher) / circuit_s / 1e9
        results.append({
            "task": name, "batch": list(batch.tokens.shape), "setup_s": setup_s, "circuit_s": circuit_s,
            "circuit_gflops": gflops, "share_of_matmul": gflops / rate, "eap_ig_s": eap_ig_s, "curve_s": curve_s,
            "cpr": cpr(curve), "sizes": list(curve.sizes), "faithfulness": list(curve.faithfulness),
        })  # fmt: skip
        print(json.dumps(results[-1]))
    counts = {
        "attention_only_12x12": _counts(EdgeGraph(12, 12)),
        "gpt2_shape": _counts(EdgeGraph(12, 12, True)),
    }
    out = {"model": args.model, "n_edges": patcher.graph.n_edges, "edge_counts": counts, "threads": 1,
           "repeats": args.repeats,
           "matmul_gflops_1_thread": rate, "load_before": load_before, "load_after": load_average(),
           "results": results}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "results"}))


if __name__ == "__main__":
    main()
