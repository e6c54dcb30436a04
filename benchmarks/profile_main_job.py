"""Timings of the main job (``circuit-gym run``) by stage.

**The benchmark in force** (the default job, ``circuit_gym/baselines/main_job.py``; ``--benchmark``
any transfer version of ``circuit_gym.benchmark.TRANSFER_BENCHMARKS``, default the one in force;
``benchmarks/main_job_transfer.py``; the job plays only the one in force): runs the job in this process with an empty sweep cache of its own, on the default budget (``--scale
full``) or on a smaller one (``--scale measure``: every public model and task, one test batch,
an eighth of PPO's training batches and of its steps) for a loaded machine, and
writes ``benchmarks/results/main_job.json``: each stage's wall and CPU seconds (the job's own
records; the references stage runs in a second process beside PPO), the load average and the
busiest other processes before and after, and the estimate for an idle 2-core machine: each
stage's CPU seconds scaled to the default budget by its own unit (models loaded, episodes
played, oracle tables swept before training, PPO steps), the two concurrent branches taking the
longer of the two. CPU seconds measured beside other busy processes run somewhat slower than on
an idle machine (shared caches), so the estimate leans high; ``measured_idle`` says whether the
machine was idle.

    python benchmarks/profile_main_job.py [--benchmark VERSION] [--scale measure|full|quick]

**The one-model job** (``--benchmark v5``, ``circuit_gym.baselines.run_all``, the retired one-model
board's job): profile of the job by stage and by function, with the machine's own matmul rate
beside it.

Runs ``run_all.run`` (``run_all.run_quick`` by default: the whole pipeline on tiny settings; ``--full``
for the real job) in a child process under the sampling profiler **py-spy** (``pip install
py-spy``; ``--subprocesses``, so the sweep workers are sampled too) with an empty sweep cache
of its own, and prints one table:

- ``stage``: the main job's steps (``circuit_gym/baselines/run_all.py``), timed in the job's process by
  wrapping the functions ``run`` calls; ``workers`` is the sweeps' worker processes (stage 0's
  pool and the evaluation pools swept in the background while PPO trains), which overlap;
- ``seconds``: wall time of the stage (workers: their CPU time, summed);
- ``fwd`` / ``bwd``: language-model forward passes, one per copy of a prompt batch (a
  stacked pass of ``k`` circuits counts ``k``; the bridge's own passes count one per call),
  and backward passes (``torch.autograd.grad`` / ``backward`` calls, the policy networks'
  updates included);
- ``GFLOP``: the language model's matrix products and attention (Q/K/V, attention, output,
  unembedding; backward counted as twice the forward), from the shapes of every call;
  the policy networks' FLOPs are not counted;
- ``GFLOP/s`` and ``% of 1 thread`` / ``% of 2 threads``: against ``torch.addmm`` at the
  model's shapes (``benchmarks/machine_rate.py``), measured in this run just before the job,
  on 1 and 2 threads.

Then the functions where the samples fall (py-spy's own time per function, all stages) and the
top functions of each stage. Writes ``benchmarks/results/profile_main_job.json`` (or ``--json``).

    python benchmarks/profile_main_job.py [--full] [--rate 50] [--json PATH]

The machine is shared: the load average before and after is recorded; compare ratios within
one run.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import multiprocessing.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_rate import load_average, matmul_rates

COUNTS_ENV = "PROFILE_MAIN_JOB_COUNTS"  # set in the child: where each process writes its counts
RESULTS = Path(__file__).resolve().parent / "results" / "profile_main_job.json"
# The functions circuit_gym/baselines/run_all.py's run() calls, and the stage each one is.
STAGES = {
    "precompute_jobs": "0 oracle tables (sweeps)", "train": "1 PPO training", "fit": "2 fixed baseline",
    "evaluate": "3 evaluation", "ranking_circuit_scores": "4 circuit scores (CPR/CMD)",
    "faithfulness_figure": "4 circuit scores (CPR/CMD)", "train_runs": "5a circuit PPO training",
    "score_runs": "5b circuit building (solvers)", "_greedy_agreement": "6 greedy vs sweep, heatmaps",
    "_heatmaps": "6 greedy vs sweep, heatmaps", "learning_curve": "6 greedy vs sweep, heatmaps",
}  # fmt: skip
WORKERS = "workers (sweep processes)"
# Issue 32: the main job from an empty cache on the idle 2-core machine, its target and what it
# took before the issue (`circuit-gym run`, idle, timed by hand).
MAIN_JOB_TARGET_S, MAIN_JOB_BEFORE_S = 600, 1301
# Where each wrapped name lives: run_all's own names, circuit_building_track's, FixedPolicy.fit.
CIRCUIT_TRACK_STAGES = ("train_runs", "score_runs")
RUN_ALL_STAGES = tuple(n for n in STAGES if n not in (*CIRCUIT_TRACK_STAGES, "fit"))
OTHER = "setup and the rest"


# ----------------------------------------------------------------------------- the job's side
class Counts:
    """Work done in one process, per stage: passes and FLOPs from the shapes of each call."""

    def __init__(self) -> None:
        self.stage = OTHER
        self.by_stage: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.seconds: dict[str, float] = collections.defaultdict(float)

    def add(self, **amounts: float) -> None:
        self.by_stage[self.stage].update(amounts)

    def dump(self, directory: str) -> None:
        path = Path(directory) / f"counts-{os.getpid()}.json"
        path.write_text(json.dumps({"pid": os.getpid(), "main": multiprocessing.parent_process() is None,
                                    "by_stage": self.by_stage, "seconds": self.seconds,
                                    "cpu_seconds": time.process_time()}))  # fmt: skip


def _attention_flops(batch: int, seq: int, heads: int, d_head: int) -> float:
    """Causal attention: scores and weighted sum over the ``seq * (seq + 1) / 2`` visible pairs."""
    return 2.0 * 2.0 * batch * heads * d_head * seq * (seq + 1) / 2


def _full_pass_flops(cfg, rows: int, seq: int) -> float:
    """One plain forward pass of the attention-only or GPT-2 model on ``rows`` x ``seq`` tokens."""
    d, h, e, v = int(cfg.d_model), int(cfg.n_heads), int(cfg.d_head), int(cfg.d_vocab)
    per_layer = 2.0 * rows * seq * d * 4 * h * e + _attention_flops(rows, seq, h, e)
    if not getattr(cfg, "attn_only", False):
        per_layer += 2.0 * rows * seq * d * int(cfg.d_mlp) * 2
    return int(cfg.n_layers) * per_layer + 2.0 * rows * seq * d * v


def install(directory: str) -> Counts:
    """Wrap the job's hot functions to count their work (this process and, through
    ``COUNTS_ENV``, the worker processes it spawns, which import this module again)."""
    import torch
    from transformer_lens.model_bridge import TransformerBridge

    from circuit_gym.ablation.engine import AblationEngine
    from circuit_gym.ablation.fast_blocks import FastBlocks
    from circuit_gym.circuits.runner import CircuitRunner

    counts = Counts()

    def wrap(owner, name, before):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            before(*args, **kwargs)
            return original(*args, **kwargs)

        setattr(owner, name, wrapper)

    def attend(self, index, h, batch, heads=None):
        n, e = (
            (len(heads) if heads is not None else self.layers[index]["shape"][0]),
            self.layers[index]["shape"][1],
        )
        seq = h.shape[0] // batch
        counts.add(flops=2.0 * h.shape[0] * h.shape[1] * 3 * n * e + _attention_flops(batch, seq, n, e))

    def output(self, index, z):
        counts.add(
            flops=2.0 * z.shape[0] * z.shape[1] * z.shape[2] * z.shape[3] * self.layers[index]["W_O"].shape[1]
        )

    def run_from(self, layer, resid, hooks):
        if not getattr(counts, "in_runner", False):
            counts.add(fwd=resid.shape[0] / self.ev.tokens.shape[0])

    def score_chunked(self, final_resid):
        cfg = self.model.cfg
        counts.add(
            flops=2.0 * final_resid.shape[0] * final_resid.shape[1] * int(cfg.d_model) * int(cfg.d_vocab)
        )

    def bridge_forward(self, input=None, *args, **kwargs):
        tokens = input if isinstance(input, torch.Tensor) and input.dtype == torch.long else None
        if tokens is not None and tokens.dim() == 2 and kwargs.get("start_at_layer") is None:
            flops = _full_pass_flops(self.cfg, tokens.shape[0], tokens.shape[1])
            grad = torch.is_grad_enabled()
            counts.add(fwd=1, flops=flops * (3 if grad else 1))

    def backward(*args, **kwargs):
        counts.add(bwd=1)

    wrap(FastBlocks, "attend", attend)
    wrap(FastBlocks, "output", output)
    wrap(AblationEngine, "_run_from", run_from)
    wrap(AblationEngine, "_score_rows_chunked", score_chunked)
    wrap(TransformerBridge, "forward", bridge_forward)
    wrap(torch.autograd, "grad", backward)
    wrap(torch.autograd, "backward", backward)
    stacked = CircuitRunner._run_stacked

    def run_stacked(self, circuits):
        counts.add(fwd=len(circuits))
        counts.in_runner = True
        try:
            return stacked(self, circuits)
        finally:
            counts.in_runner = False

    CircuitRunner._run_stacked = run_stacked
    if multiprocessing.parent_process() is not None:
        counts.stage = WORKERS
        multiprocessing.util.Finalize(counts, counts.dump, args=(directory,), exitpriority=10)
    return counts


def _stage_wrappers(counts: Counts) -> None:
    """Time each stage of ``run_all.run`` by wrapping the names it calls."""
    from circuit_gym.baselines import circuit_building_track, run_all
    from circuit_gym.baselines.fixed_policy import FixedPolicy

    def timed(fn, stage):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            previous, counts.stage = counts.stage, stage
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                counts.seconds[stage] += time.perf_counter() - start
                counts.stage = previous

        return wrapper

    import circuit_gym.precompute

    for name in RUN_ALL_STAGES:
        setattr(run_all, name, timed(getattr(run_all, name), STAGES[name]))
    # run() hands precompute_jobs to a spawned process (pickled by its module and name): the
    # wrapper stands in for it under that name; the spawned process runs the original.
    circuit_gym.precompute.precompute_jobs = run_all.precompute_jobs
    for name in CIRCUIT_TRACK_STAGES:
        setattr(circuit_building_track, name, timed(getattr(circuit_building_track, name), STAGES[name]))
    FixedPolicy.fit = classmethod(timed(FixedPolicy.fit.__func__, STAGES["fit"]))


def child_main(argv: list[str]) -> None:
    directory = os.environ[COUNTS_ENV]
    counts = install(directory)
    _stage_wrappers(counts)
    from circuit_gym.baselines import run_all

    out = Path(argv[argv.index("--out") + 1])
    start = time.perf_counter()
    try:
        (run_all.run_quick if "--quick" in argv else run_all.run)(out)
    finally:
        counts.seconds["total"] = time.perf_counter() - start
        counts.dump(directory)


if os.environ.get(COUNTS_ENV) and __name__ == "__mp_main__":  # a spawned worker of the profiled job
    install(os.environ[COUNTS_ENV])


# ---------------------------------------------------------------------------- the driver's side
_FRAME = re.compile(r"^(?P<fn>.+?) \((?P<file>[^:]*)(?::\d+)?\)$")


def parse_samples(raw: Path) -> tuple[collections.Counter, dict[str, collections.Counter]]:
    """py-spy's raw (collapsed) stacks: samples per stage, and per stage per function (own time)."""
    stages: collections.Counter = collections.Counter()
    functions: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = [f for f in stack.split(";") if not f.startswith("process ")]
        stage = _stage_of(frames)
        stages[stage] += int(count)
        match = _FRAME.match(frames[-1]) if frames else None
        leaf = f"{match['fn']} ({Path(match['file']).name})" if match else (frames[-1] if frames else "?")
        functions[stage][leaf] += int(count)
    return stages, functions


def _stage_of(frames: list[str]) -> str:
    names = [(_FRAME.match(f) or {"fn": f, "file": ""}) for f in frames]
    for i, m in enumerate(names[:-1]):
        if m["fn"] == "run" and m["file"].endswith("run_all.py"):
            # the stage's function, past this script's own timing wrapper
            callee = next((n for n in names[i + 1 :] if not n["file"].endswith("profile_main_job.py")), m)
            return STAGES.get(callee["fn"].split(".")[-1], OTHER)
    if any(m["fn"] == "_process_worker" for m in names):
        return WORKERS
    return OTHER


def profile(full: bool, rate: int, json_path: Path) -> dict:
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        raise SystemExit("needs py-spy: pip install py-spy")
    work = Path(tempfile.mkdtemp(prefix="profile_main_job-"))
    counts_dir = work / "counts"
    counts_dir.mkdir()
    report: dict = {"job": "circuit-gym run --benchmark v5" + ("" if full else " --quick"), "profiler": "py-spy (sampling, "
                    f"{rate} Hz, --subprocesses)", "load_before": load_average(),
                    "target_seconds": MAIN_JOB_TARGET_S, "seconds_before_issue_32": MAIN_JOB_BEFORE_S}  # fmt: skip
    from circuit_gym.models import load_model

    report["matmul"] = matmul_rates(load_model("toy").cfg)
    env = dict(os.environ, **{COUNTS_ENV: str(counts_dir), "CIRCUIT_GYM_CACHE": str(work / "cache"),
                              "CIRCUIT_GYM_PROGRESS": "0", "OMP_NUM_THREADS": "1"})  # fmt: skip
    raw = work / "samples.txt"
    job = [sys.executable, str(Path(__file__).resolve()), "--child", "--out", str(work / "out")]
    job += [] if full else ["--quick"]
    start = time.perf_counter()
    subprocess.run([spy, "record", "--subprocesses", "--format", "raw", "--rate", str(rate), "--output", str(raw),
                    "--", *job], env=env, check=True)  # fmt: skip
    report["wall_seconds"] = time.perf_counter() - start
    report["load_after"] = load_average()
    report["table"] = stage_table(counts_dir, report["matmul"])
    stages, functions = parse_samples(raw)
    everything: collections.Counter = collections.Counter()
    for c in functions.values():
        everything.update(c)
    total = sum(everything.values())
    report["functions"] = [{"function": f, "share": n / total} for f, n in everything.most_common(25)]
    report["functions_by_stage"] = {s: [{"function": f, "share_of_stage": n / sum(c.values())}
                                        for f, n in c.most_common(6)] for s, c in functions.items()}  # fmt: skip
    report["samples_by_stage"] = dict(stages)
    report["raw_samples"] = str(raw)  # kept, with the counts, for flame graphs
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1) + "\n")
    return report


def stage_table(counts_dir: Path, matmul: dict) -> list[dict]:
    files = [json.loads(p.read_text()) for p in sorted(counts_dir.glob("counts-*.json"))]
    main = next(f for f in files if f["main"])
    work: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for f in files:
        for stage, c in f["by_stage"].items():
            work[stage].update(c)
    seconds = dict(main["seconds"])
    seconds[WORKERS] = sum(f["cpu_seconds"] for f in files if not f["main"])  # CPU time of the workers
    timed_stages = sum(v for k, v in seconds.items() if k not in ("total", WORKERS))
    seconds[OTHER] = seconds.get("total", 0.0) - timed_stages
    one, two = matmul["1_thread"]["gflops"], matmul["2_thread"]["gflops"]
    rows = []
    for stage in sorted(set(seconds) - {"total"}):
        c, s = work.get(stage, collections.Counter()), seconds[stage]
        rate_g = c["flops"] / s / 1e9 if s > 0 else 0.0
        rows.append({"stage": stage, "seconds": s, "fwd": c["fwd"], "bwd": c["bwd"], "gflop": c["flops"] / 1e9,
                     "gflops": rate_g, "share_1_thread": rate_g / one, "share_2_threads": rate_g / two})  # fmt: skip
    rows.append({"stage": "total (job wall time)", "seconds": seconds.get("total", 0.0),
                 "fwd": sum(r["fwd"] for r in rows), "bwd": sum(r["bwd"] for r in rows),
                 "gflop": sum(r["gflop"] for r in rows)})  # fmt: skip
    total = rows[-1]
    total["gflops"] = total["gflop"] / total["seconds"] if total["seconds"] else 0.0
    total["share_1_thread"], total["share_2_threads"] = total["gflops"] / one, total["gflops"] / two
    return rows


def print_report(report: dict) -> None:
    m = report["matmul"]
    print(f"{report['job']}, profiled with {report['profiler']}; load {report['load_before']} before, "
          f"{report['load_after']} after; torch.addmm at the model's shapes: "
          f"{m['1_thread']['gflops']:.1f} GFLOP/s on 1 thread, {m['2_thread']['gflops']:.1f} on 2")  # fmt: skip
    print(
        "| stage | seconds | fwd passes | bwd passes | GFLOP | GFLOP/s | % of 1-thread matmul | % of 2-thread |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in report["table"]:
        print(
            f"| {r['stage']} | {r['seconds']:.1f} | {r['fwd']:.0f} | {r['bwd']:.0f} | {r['gflop']:.1f} | "
            f"{r['gflops']:.2f} | {100 * r['share_1_thread']:.1f}% | {100 * r['share_2_threads']:.1f}% |"
        )
    print("\nwhere the samples fall (own time, all processes):")
    for f in report["functions"][:15]:
        print(f"  {100 * f['share']:5.1f}%  {f['function']}")
    print("\ntop functions per stage (share of the stage's samples):")
    for stage, fs in sorted(report["functions_by_stage"].items()):
        print(f"  {stage}: " + "; ".join(f"{x['function']} {100 * x['share_of_stage']:.0f}%" for x in fs[:4]))


def main() -> None:
    if "--child" in sys.argv:
        args = [a for a in sys.argv[1:] if a != "--child"]
        child_main(args)
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    from circuit_gym.benchmark import IN_FORCE, TRANSFER_BENCHMARKS

    parser.add_argument(
        "--benchmark", choices=[*TRANSFER_BENCHMARKS, "v5"], default=IN_FORCE, help="which main job"
    )
    parser.add_argument(
        "--scale", choices=list(SCALES), default="measure", help="transfer: the budget played"
    )
    parser.add_argument("--full", action="store_true", help="v5: the real main job (default: --quick)")
    parser.add_argument("--rate", type=int, default=50, help="v5: py-spy samples per second")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--recompute", action="store_true", help="transfer: the estimate of a written report again"
    )
    parser.add_argument(
        "--calibrate", action="store_true", help="transfer, with --recompute: measure the contention now"
    )
    args = parser.parse_args()
    if args.benchmark != "v5":
        import main_job_transfer as job

        path = args.json or job.RESULTS
        report = (
            job.recompute(path, args.calibrate)
            if args.recompute
            else job.measure(args.benchmark, args.scale, path)
        )
        job.print_report(report)
    else:
        path = args.json or RESULTS
        print_report(profile(args.full, args.rate, path))
    print(f"wrote {path}")


SCALES = ("measure", "full", "quick")  # main_job_transfer.scales()' names


if __name__ == "__main__":
    main()
