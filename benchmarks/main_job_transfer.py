"""Stage timings of the main job of a transfer benchmark (the one in force,
``circuit_gym.benchmark.IN_FORCE``) and the estimate for an idle 2-core machine.

Run through ``python benchmarks/profile_main_job.py [--benchmark VERSION] [--scale ...]`` (its
docstring says what is measured); writes ``benchmarks/results/main_job.json``. The main job
(``circuit_gym/baselines/main_job.py``) plays only the benchmark in force, so any other transfer
version is refused by name rather than timed under the wrong label.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "main_job.json"
TARGET_S = 600  # issue 46: from an empty cache on an idle 2-core machine
REFERENCES, MODELS = "1 references (second process)", "2a training models: loaded, general-damage sweeps"
PPO, FIXED = "2b PPO: warm-up and training", "3 fixed memoriser"
PLAY, TABLES, WAIT = "4 PPO and the fixed memoriser play", "5 tables", "wait for the references"


def scales() -> dict:
    """The budgets this script can play: the job's own, its smoke run's, and the smaller one a
    loaded machine can finish (every public model and task, so every model is loaded as often)."""
    from circuit_gym.baselines.main_job import BUDGET, QUICK

    measure = replace(BUDGET, pool_size=2, selection_episodes=1, steps_per_epoch=256, seeds=BUDGET.seeds[:1])
    return {"full": BUDGET, "quick": QUICK, "measure": measure}


def busiest_processes(n: int = 6) -> list[str]:
    """The ``n`` processes using the most CPU (what else ran), as ``ps`` prints them."""
    out = subprocess.run(
        ["ps", "-eo", "pid,ni,pcpu,etime,args", "--sort=-pcpu"], capture_output=True, text=True
    )
    root = f"{ROOT}/"  # committed files name repository paths relatively
    return [shown_process(line, root) for line in out.stdout.splitlines()[1 : n + 1]]


def shown_process(line: str, root: str) -> str:
    """One ``ps`` line as a committed file may show it: this project's commands in full (repository
    paths relative), any other process by its program name only (the host's own machinery and
    its arguments are not the project's to publish)."""
    if root in line or "python" in line:
        return line[:160].replace(root, "")
    fields = line.split(None, 4)
    return " ".join(fields[:4] + [fields[4].split()[0]]) if len(fields) == 5 else line[:160]


def units(budget, ppo_config) -> dict:
    """What each stage's work scales with."""
    from circuit_gym import benchmark as B
    from circuit_gym.embedded import model_set

    train_models = len(model_set(budget.train_models))
    train_tasks = len(budget.train_tasks.split(",")) if budget.train_tasks else len(B.TRANSFER_TRAIN_TASKS)
    return {"models": len(budget.models), "episodes": len(budget.models) * len(budget.tasks) * len(budget.seeds),
            "warm_up_tables": train_models * train_tasks * (budget.pool_size + budget.selection_episodes),
            "ppo_steps": budget.epochs * budget.steps_per_epoch}  # fmt: skip


def idle_estimate(report: dict, measured: dict, target: dict) -> dict:
    """CPU seconds of each stage scaled to the ``target`` units, and the wall time two idle cores
    would take: the references' process runs beside the training models' sweeps, PPO and the
    memoriser's fit. A played stage's models (built, first episode: the general-damage sweep)
    scale with the models, its other episodes with the episodes; PPO's warm-up with its oracle
    tables, its training with its steps."""
    st = report["stages"]

    def played(stage: dict) -> float:  # models loaded once per model, episodes per episode
        rest = stage["cpu"] - stage["build"] - stage["play"]
        return (rest + stage["build"] * target["models"] / measured["models"]
                + stage["play"] * target["episodes"] / measured["episodes"])  # fmt: skip

    # The PPO stage's CPU split as its wall time splits (the same load throughout): the warm-up's
    # oracle tables, the training steps, and the rest (building environments, loading models).
    ppo, cpu_per_wall = report["ppo"], st[PPO]["cpu"] / st[PPO]["wall"]
    warm, steps = ppo["warm_up_seconds"] * cpu_per_wall, ppo["train_seconds"] * cpu_per_wall
    ppo_scaled = (st[PPO]["cpu"] - warm - steps + warm * target["warm_up_tables"] / measured["warm_up_tables"]
                  + steps * target["ppo_steps"] / measured["ppo_steps"])  # fmt: skip
    stages = {"startup (imports)": report["startup_cpu"], REFERENCES: played(st[REFERENCES]),
              MODELS: st[MODELS]["cpu"], PPO: ppo_scaled, FIXED: st[FIXED]["cpu"], PLAY: played(st[PLAY]),
              TABLES: st[TABLES]["cpu"]}  # fmt: skip
    wall = (stages["startup (imports)"] + max(stages[REFERENCES], stages[MODELS] + stages[PPO] + stages[FIXED])
            + stages[PLAY] + stages[TABLES])  # fmt: skip
    out = {"cpu_seconds_by_stage": stages, "wall_seconds": wall, "target_seconds": TARGET_S,
           "met": wall <= TARGET_S, "verdict": "met" if wall <= TARGET_S else "missed",
           "ppo_cpu_warm_up_and_steps": [warm, steps]}  # fmt: skip
    if "contention" in report:  # the low end: CPU seconds as fast as the idle machine's
        low = wall / report["contention"]["factor"]
        out.update(wall_seconds_low=low, verdict_low="met" if low <= TARGET_S else "missed")
    return out


def check_version(version: str) -> None:
    """SystemExit unless ``version`` is a transfer benchmark the main job plays (the one in force)."""
    from circuit_gym import benchmark as B

    if version not in B.TRANSFER_BENCHMARKS:
        raise SystemExit(
            f"--benchmark must be v5 or a transfer version {list(B.TRANSFER_BENCHMARKS)}, got {version!r}"
        )
    if version != B.IN_FORCE:
        raise SystemExit(
            f"the main job plays the benchmark in force ({B.IN_FORCE}); {version}'s job is retired"
        )


def measure(version: str, scale: str, json_path: Path) -> dict:
    """Run the main job of ``version`` at ``scale`` from an empty cache (a new temporary folder,
    set before circuit_gym is imported; the references' second process inherits it) and write
    the report."""
    work = Path(tempfile.mkdtemp(prefix=f"main_job_{version}-"))
    os.environ.update(CIRCUIT_GYM_CACHE=str(work / "cache"), CIRCUIT_GYM_PROGRESS="0", OMP_NUM_THREADS="1")
    check_version(version)
    before = {
        "load": os.getloadavg(),
        "busiest": busiest_processes(),
        "time": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    from circuit_gym.baselines import main_job

    budgets = scales()
    startup = time.process_time()  # since the process started: every import
    start = time.perf_counter()
    result = main_job.run(work / "out", budgets[scale])
    wall = time.perf_counter() - start
    after = {"load": os.getloadavg(), "busiest": busiest_processes()}
    measured = units(budgets[scale], main_job.ppo_config(budgets[scale], 0))
    target = units(budgets["full"], main_job.ppo_config(budgets["full"], 0))
    report = {
        "job": f"circuit-gym run (benchmark {version}), budget {scale!r}", "benchmark": version, "scale": scale,
        "command": "python " + " ".join(sys.argv).replace(f"{ROOT}/", ""),
        "budget": asdict(budgets[scale]), "default_budget": asdict(budgets["full"]),
        "units_measured": measured, "units_default": target,
        "startup_cpu": startup, "stages": result["stages"], "wall_seconds": wall, "ppo": {k: result["ppo"][k] for k in
        ("warm_up_seconds", "train_seconds", "best_selection_recovery")},
        "before": before, "after": after, "cpus": os.cpu_count(), "nice": os.nice(0),
        # the 1-minute load before the job: after it, the job's own two processes are in it
        "measured_idle": before["load"][0] < 1.0,
        "table": (work / "out" / "results.md").read_text(),
    }  # fmt: skip
    report["contention"] = contention()
    report["idle_estimate"] = idle_estimate(report, measured, target)
    report["stage_rows"] = stage_rows(report)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1) + "\n")
    return report


def contention() -> dict:
    """How much slower a CPU second is here now than on the idle machine: ``torch.addmm`` at the
    embedded model's shapes on one thread, timed by this process's CPU clock, against the rate the
    v5 profile measured there idle (``profile_main_job.json``, wall clock, load 0.3). Matrix
    products suffer most from a busy neighbour (shared caches), so dividing by this factor gives
    the low end of the idle estimate, the raw CPU seconds its high end."""
    from machine_rate import matmul_rates

    from circuit_gym.models import load_model

    idle = json.loads((RESULTS.parent / "profile_main_job.json").read_text())
    now = matmul_rates(load_model("toy").cfg, threads=(1,), clock=time.process_time)["1_thread"]["gflops"]
    idle_rate = idle["matmul"]["1_thread"]["gflops"]
    return {"matmul_cpu_gflops_here": now, "matmul_gflops_idle": idle_rate, "idle_load": idle["load_before"],
            "load": os.getloadavg(), "factor": idle_rate / now}  # fmt: skip


def recompute(json_path: Path, calibrate: bool = False) -> dict:
    """The estimate and the stage rows of a written report, computed again (this module changed);
    ``calibrate``: measure :func:`contention` now and add it."""
    report = json.loads(json_path.read_text())
    if calibrate:
        report["contention"] = contention()
    report["idle_estimate"] = idle_estimate(report, report["units_measured"], report["units_default"])
    report["stage_rows"] = stage_rows(report)
    json_path.write_text(json.dumps(report, indent=1) + "\n")
    return report


def stage_rows(report: dict) -> list[dict]:
    """One row per stage: measured wall and CPU, and the idle estimate at the default budget."""
    est = report["idle_estimate"]["cpu_seconds_by_stage"]
    rows = [
        {
            "stage": "startup (imports)",
            "wall": None,
            "cpu": report["startup_cpu"],
            "idle_estimate": est["startup (imports)"],
        }
    ]
    for name in (REFERENCES, MODELS, PPO, FIXED, PLAY, TABLES):
        s = report["stages"][name]
        rows.append({"stage": name, "wall": s["wall"], "cpu": s["cpu"], "idle_estimate": est[name]})
    rows.append({"stage": "total (job wall; idle: the two branches overlap)", "wall": report["wall_seconds"],
                 "cpu": sum(r["cpu"] for r in rows), "idle_estimate": report["idle_estimate"]["wall_seconds"]})  # fmt: skip
    return rows


def print_report(report: dict) -> None:
    print(f"{report['job']}: load {report['before']['load']} before, {report['after']['load']} after")
    print("| stage | wall s | CPU s | idle estimate at the default budget, s |\n|---|---|---|---|")
    for r in report["stage_rows"]:
        wall = "-" if r["wall"] is None else f"{r['wall']:.0f}"
        print(f"| {r['stage']} | {wall} | {r['cpu']:.1f} | {r['idle_estimate']:.0f} |")
    est = report["idle_estimate"]
    low = f", {est['wall_seconds_low']:.0f} s at the idle CPU speed" if "wall_seconds_low" in est else ""
    print(
        f"idle estimate {est['wall_seconds']:.0f} s{low} (target {est['target_seconds']} s: {est['verdict']})"
    )
