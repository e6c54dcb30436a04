"""Benchmark: issue 32's speed targets as ratios measured in one run, on the 144-head model.

On the embedded 12 x 12 model (resample ablation, test-split batches of eight prompts), one
thread, the machine's ``torch.addmm`` rate at the model's shapes measured first
(``machine_rate.py``), then:

- **faithfulness curve per episode** (target <= 0.25 s, >= 3x the plain hooked path): runner
  set-up (clean and counterfactual passes, the replay check) plus the curve of a ranking at
  MIB's sizes (``faithfulness_curve``), with the masked replay (default) and with
  ``replay="plain"`` (the stacked pass before issue 32), against the plain hooked path
  (``bench_faithfulness.plain_curve``: one hooked forward pass per size); the curve alone too,
  and ``batch_scores`` (the signed and absolute curves and eight random rankings' curves,
  what the main job runs per solver and episode). Curves must be equal bit for bit between
  the two replays;
- **rates**: FLOPs each path does (counted from the shapes of every product and attention
  call it makes) per second, as a share of the 1-thread matmul rate: the curves and the exact
  single-head sweep (``AblationEngine.sweep``); for the sweep, ``torch.profiler``'s time per
  operator and the rates of its attention and of its matrix products apart (``ops``);
- **greedy circuit search per episode** (target >= 5x faster, same insertion order): one
  episode of ``GreedySearch`` per task on the circuit-building env (the board's budget and
  alpha), each replay in a fresh process (no shared memo), then the episode's CPR / CMD
  (``batch_scores``); the per-episode rows must be equal.

Best of ``--repeats`` for the curves (interleaved); greedy episodes once per replay. Writes
``benchmarks/results/speed.json``.

    python benchmarks/bench_speed.py [--repeats 3] [--tasks ioi docstring] [--greedy-tasks successor]
                                     [--parts curves sweeps ops greedy]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch
from bench_faithfulness import plain_curve
from machine_rate import load_average, matmul_rates
from timing import timed

from circuit_gym.ablation.fast_blocks import FastBlocks
from circuit_gym.circuits import CircuitRunner, Ranking, batch_scores, faithfulness_curve
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task

RESULTS = Path(__file__).resolve().parent / "results" / "speed.json"
CURVE_TARGET_S = 0.25
# Issue 32's targets, written into the results so the docs quote them from there.
TARGETS = {"curve_episode_s": CURVE_TARGET_S, "curve_speedup_vs_hooked": 3.0, "sweep_share_of_1_thread_matmul": 0.5,
           "greedy_speedup": 5.0}  # fmt: skip
PARTS = ("curves", "sweeps", "ops", "greedy")


class FlopCount:
    """FLOPs of the replay's products and attention (``FastBlocks.attend`` / ``output``) while active."""

    def __init__(self) -> None:
        self.flops = 0.0
        self.attention_flops = 0.0  # the part of ``flops`` in attention (scores and weighted sums)
        self._saved: dict = {}

    def __enter__(self) -> FlopCount:
        attend, output = FastBlocks.attend, FastBlocks.output

        def counted_attend(blocks, index, h, batch, heads=None):
            n_heads, d_head = blocks.layers[index]["shape"]
            n = n_heads if heads is None else len(heads)
            seq = h.shape[0] // batch
            self.flops += 2.0 * h.shape[0] * h.shape[1] * 3 * n * d_head  # Q, K, V
            attention = 2.0 * 2.0 * batch * n * d_head * seq * (seq + 1) / 2  # causal scores and sum
            self.flops += attention
            self.attention_flops += attention
            return attend(blocks, index, h, batch, heads)

        def counted_output(blocks, index, z):
            self.flops += (
                2.0 * z.shape[0] * z.shape[1] * z.shape[2] * z.shape[3] * blocks.layers[index]["W_O"].shape[1]
            )
            return output(blocks, index, z)

        self._saved = {"attend": attend, "output": output}
        FastBlocks.attend, FastBlocks.output = counted_attend, counted_output
        return self

    def __exit__(self, *exc) -> None:
        FastBlocks.attend, FastBlocks.output = self._saved["attend"], self._saved["output"]


def _ranking(model, task, batch) -> Ranking:
    """The exact single-head damages' order (computed outside the timings), as bench_faithfulness."""
    probe = CircuitRunner.for_task(model, task, batch, "resample")
    return Ranking.from_array(
        probe.engine.clean_score - probe.engine.sweep(), "exact_single_head_damage", 12, 12
    )


def curves(model, task_name: str, repeats: int, rate_1: float) -> dict:
    task = get_task(task_name)
    batch = task.batch(model, "test", 8, seed=0)
    ranking = _ranking(model, task, batch)
    times: dict[str, list[float]] = {k: [] for k in ("setup", "masked", "plain", "hooked", "scores_masked",
                                                     "scores_plain")}  # fmt: skip
    out: dict = {"task": task_name, "prompts": list(batch.tokens.shape)}
    for _ in range(repeats):  # interleaved, so a change of load hits every path
        t, runner = timed(lambda: CircuitRunner.for_task(model, task, batch, "resample"))
        times["setup"].append(t)
        for replay in ("masked", "plain"):
            view = CircuitRunner(runner.engine, replay)
            with FlopCount() as count:
                t, curve = timed(lambda view=view: faithfulness_curve(view, ranking))
            times[replay].append(t)
            out[f"{replay}_curve"], out[f"{replay}_gflop"] = list(curve.faithfulness), count.flops / 1e9
            with FlopCount() as count:
                t, scores = timed(lambda view=view: batch_scores(view, ranking))
            times[f"scores_{replay}"].append(t)
            out[f"scores_{replay}_gflop"], out[f"scores_{replay}_cpr"] = count.flops / 1e9, scores["cpr"]
        t, hooked = timed(lambda: plain_curve(model, task, batch, ranking))
        times["hooked"].append(t)
    best = {k: min(v) for k, v in times.items()}
    out.update({f"{k}_s": v for k, v in best.items()})
    out["episode_masked_s"] = best["setup"] + best["masked"]
    out["episode_plain_s"] = best["setup"] + best["plain"]
    out["meets_0.25_s"] = out["episode_masked_s"] <= CURVE_TARGET_S
    out["speedup_vs_hooked"] = best["hooked"] / out["episode_masked_s"]
    out["speedup_vs_plain_replay"] = out["episode_plain_s"] / out["episode_masked_s"]
    out["curve_speedup_vs_plain_replay"] = best["plain"] / best["masked"]
    out["scores_speedup_vs_plain_replay"] = best["scores_plain"] / best["scores_masked"]
    out["identical_to_plain_replay"] = out["masked_curve"] == out["plain_curve"] and (
        out["scores_masked_cpr"] == out["scores_plain_cpr"]
    )
    out["max_abs_diff_vs_hooked"] = float(np.abs(np.subtract(out["masked_curve"], hooked)).max())
    for key in ("masked", "plain", "scores_masked", "scores_plain"):
        gflop = out[f"{key}_gflop"] if not key.startswith("scores") else out[f"{key}_gflop"]
        out[f"{key}_gflops"] = gflop / best[key]
        out[f"{key}_share_of_1_thread_matmul"] = out[f"{key}_gflops"] / rate_1
    print(f"{task_name:>12}: episode (set-up {best['setup']:.3f} s + curve) masked {out['episode_masked_s']:.3f} s, "
          f"plain replay {out['episode_plain_s']:.3f} s, hooked {best['hooked']:.3f} s -> "
          f"{out['speedup_vs_hooked']:.1f}x hooked; curve alone {out['curve_speedup_vs_plain_replay']:.1f}x, "
          f"batch_scores {out['scores_speedup_vs_plain_replay']:.1f}x the plain replay; identical: "
          f"{out['identical_to_plain_replay']}", flush=True)  # fmt: skip
    return out


def sweep_rate(model, task_name: str, repeats: int, rate_1: float) -> dict:
    """The exact single-head sweep (the oracle tables' kernel): counted FLOPs per second."""
    task = get_task(task_name)
    runner = CircuitRunner.for_task(model, task, task.batch(model, "test", 8, seed=0), "resample")
    seconds = []
    for _ in range(repeats):
        with FlopCount() as count:
            t, _ = timed(runner.engine.sweep)
        seconds.append(t)
    gflops = count.flops / 1e9 / min(seconds)
    print(f"{task_name:>12}: exact sweep {min(seconds):.3f} s, {gflops:.2f} GFLOP/s = "
          f"{100 * gflops / rate_1:.0f}% of the 1-thread matmul rate", flush=True)  # fmt: skip
    return {"task": task_name, "seconds": min(seconds), "gflop": count.flops / 1e9, "gflops": gflops,
            "share_of_1_thread_matmul": gflops / rate_1}  # fmt: skip


def sweep_ops(model, task_name: str) -> dict:
    """Where a sweep's time goes: torch.profiler's own time per operator, as shares, and the
    rate of the two kinds of work that carry its FLOPs (matrix products, attention)."""
    task = get_task(task_name)
    runner = CircuitRunner.for_task(model, task, task.batch(model, "test", 8, seed=0), "resample")
    runner.engine.sweep()  # warm-up
    with torch.profiler.profile() as prof:
        seconds, _ = timed(runner.engine.sweep)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    shares = {e.key: e.self_cpu_time_total / total for e in events if e.self_cpu_time_total / total >= 0.01}
    shares = dict(sorted(shares.items(), key=lambda kv: -kv[1]))
    with FlopCount() as count:
        runner.engine.sweep()
    attention = count.attention_flops
    products = count.flops - attention
    us = {k: next(e.self_cpu_time_total for e in events if e.key == k) / 1e6 for k in shares}
    sdpa = sum(v for k, v in us.items() if "scaled_dot_product" in k)
    addmm = us.get("aten::addmm", float("nan"))
    out = {"task": task_name, "seconds": seconds, "op_shares": shares,
           "attention_gflops": attention / 1e9 / sdpa if sdpa else None,
           "addmm_gflops": products / 1e9 / addmm if addmm else None,
           "attention_share_of_flops": attention / count.flops}  # fmt: skip
    print(f"{task_name:>12}: sweep time by operator: "
          + ", ".join(f"{k.replace('aten::', '')} {100 * v:.0f}%" for k, v in list(shares.items())[:6])
          + f"; attention {out['attention_gflops']:.2f} GFLOP/s on {100 * out['attention_share_of_flops']:.0f}% "
          f"of the FLOPs, products {out['addmm_gflops']:.2f} GFLOP/s", flush=True)  # fmt: skip
    return out


def greedy_episode(replay: str, task: str, episode: int) -> dict:
    """One greedy-search episode and its CPR / CMD, in a fresh process on ``replay``."""
    os.environ["CIRCUIT_GYM_REPLAY"] = replay
    torch.set_num_threads(1)
    import gymnasium as gym

    from circuit_gym.baselines.circuit_solvers import GreedySearch, play_episode
    from circuit_gym.envs.registration import circuit_env_id
    from circuit_gym.leaderboard.benchmark import CIRCUIT_ALPHA, CIRCUIT_BUDGET, SPLIT

    env = gym.make(circuit_env_id("Toy", "Multi"), model="toy", split=SPLIT, pool_size=episode + 1,
                   budget=CIRCUIT_BUDGET, alpha=CIRCUIT_ALPHA, oracle_info=False)  # fmt: skip
    env.reset(options={"task": task, "batch_index": episode})  # set-up outside the timing
    seconds, row = timed(lambda: play_episode(env, GreedySearch(), task, episode))
    score_s, scores = timed(
        lambda: batch_scores(env.unwrapped.state.runner, row.pop("ranking"), seed=episode)
    )
    row.update({k: scores[k] for k in ("cpr", "cmd", "cpr_random", "cmd_random")})
    return {"seconds": seconds, "scores_seconds": score_s, "row": row}


def greedy(task: str, episode: int) -> dict:
    context = multiprocessing.get_context("spawn")
    runs = {}
    for replay in ("plain", "masked"):
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            runs[replay] = pool.submit(greedy_episode, replay, task, episode).result()
    plain, masked = runs["plain"], runs["masked"]
    out = {"task": task, "episode": episode, "plain_s": plain["seconds"], "masked_s": masked["seconds"],
           "speedup": plain["seconds"] / masked["seconds"], "scores_plain_s": plain["scores_seconds"],
           "scores_masked_s": masked["scores_seconds"], "same_insertion_order": plain["row"]["order"] == masked["row"]["order"],
           "identical_rows": plain["row"] == masked["row"], "order": masked["row"]["order"],
           "passes": masked["row"]["forward_passes"], "cpr": masked["row"]["cpr"]}  # fmt: skip
    print(f"{task:>12}: greedy episode plain {out['plain_s']:.1f} s, masked {out['masked_s']:.1f} s "
          f"({out['speedup']:.1f}x), {len(out['order'])} heads, {out['passes']} passes; same order "
          f"{out['same_insertion_order']}, identical rows {out['identical_rows']}", flush=True)  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", nargs="*", default=["ioi", "docstring"])
    parser.add_argument("--greedy-tasks", nargs="*", default=["successor"])
    parser.add_argument("--parts", nargs="*", default=list(PARTS), choices=PARTS)
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = load_model("toy")
    report: dict = {"threads": 1, "load_before": load_average(), "python": sys.version.split()[0],
                    "torch": torch.__version__, "model_weights": model.circuit_gym_info.weights_hash}  # fmt: skip
    report["matmul"] = matmul_rates(model.cfg)
    rate_1 = report["matmul"]["1_thread"]["gflops"]
    print(f"torch.addmm at the model's shapes: {rate_1:.1f} GFLOP/s on 1 thread, "
          f"{report['matmul']['2_thread']['gflops']:.1f} on 2", flush=True)  # fmt: skip
    if "curves" in args.parts:
        report["curves"] = [curves(model, t, args.repeats, rate_1) for t in args.tasks]
    if "sweeps" in args.parts:
        report["sweeps"] = [sweep_rate(model, t, args.repeats, rate_1) for t in args.tasks]
    if "ops" in args.parts:
        report["sweep_ops"] = [sweep_ops(model, t) for t in args.tasks]
    if "greedy" in args.parts:
        report["greedy"] = [greedy(t, 0) for t in args.greedy_tasks]
    report["load_after"] = load_average()
    report["targets"] = TARGETS
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(f"load {report['load_before']} before, {report['load_after']} after; wrote {args.json}")


if __name__ == "__main__":
    main()
