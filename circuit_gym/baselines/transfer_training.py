"""PPO trained across the training models of a transfer benchmark (issue 35 item 7, on zoo v1; zoo
v2 and v3 since: issues 41 and 60), seeds 0-4, both tracks.

Run by ``scripts/train_transfer_ppo.py`` (:func:`run_jobs`, :func:`copy_and_record`):

    python scripts/train_transfer_ppo.py                       # every track and seed, one at a time
    python scripts/train_transfer_ppo.py --workers 10          # ten trainings at once (one core each)
    python scripts/train_transfer_ppo.py --tracks ppo --seeds 0 1
    python scripts/train_transfer_ppo.py --copy-only           # copy finished runs to the docs only
    python scripts/train_transfer_ppo.py --design causal       # issue 34's design: causal observation

A design (``circuit_gym.baselines.ppo_designs.DESIGNS``) is the reference recipe with some fields changed; its runs go to
``TRACK`` (the reference design) or ``TRACK_DESIGN`` (e.g. ``ppo_causal``) under OUT and DOCS.
Each (track, seed) trains on the Zoo-Multi ID of its track over ``zoo-train`` (the training models
of ``circuit_gym.benchmark``: episodes of the training tasks on training models, train split)
with the track's reference recipe otherwise, into ``OUT/TRACK/seedN`` (resumable: run the same
command again after an interruption). Checkpoints are chosen on the train split's held-back
batches of every (training model, training task) cell (``ppo_trainer.cells``); no held-out model,
held-out task or test split is touched here. A finished run's ``policy.pt``, ``policy_last.pt``,
``config.json``, ``curve.json`` and ``train_summary.json`` are copied to ``DOCS/TRACK/seedN/``, and
``DOCS/training.json`` lists per run the best selection score and its wall times.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from circuit_gym.baselines.ppo_designs import configure, run_name
from circuit_gym.benchmark import IN_FORCE, transfer_benchmark
from circuit_gym.embedded import MODEL_SETS

# The Zoo-Multi IDs sample the benchmark's training tasks (circuit_gym.envs.registration).
ENV_IDS = {"ppo": "CircuitDiscovery-Zoo-Multi-v0", "circuit_ppo": "CircuitDiscovery-Zoo-Multi-Circuit-v0"}
SCORE_KEYS = {"ppo": "best_selection_recovery", "circuit_ppo": "best_selection_score"}

COPIED = ("policy.pt", "policy_last.pt", "config.json", "curve.json", "train_summary.json")


def docs_dir(version: str, root: Path) -> Path:
    """Where benchmark ``version``'s finished runs are copied under ``root`` (docs/results): its row's folder."""
    return root / transfer_benchmark(version).results_folder


def config_of(track: str, seed: int, device: str, design: str = "reference", version: str = IN_FORCE):
    """The track's reference config with ``design``'s changes, on its Zoo-Multi ID over benchmark
    ``version``'s training models, with ``seed``."""
    if track == "ppo":
        from circuit_gym.baselines.ppo import PPOConfig as Config
    else:
        from circuit_gym.baselines.circuit_ppo import CircuitPPOConfig as Config
    train_set = transfer_benchmark(version).train_set
    return configure(Config(env_id=ENV_IDS[track], model=train_set, seed=seed, device=device), design)


def train_one(
    track: str, seed: int, out: Path, device: str, design: str = "reference", version: str = IN_FORCE
) -> dict:
    from circuit_gym.baselines import circuit_ppo, ppo

    train = ppo.train if track == "ppo" else circuit_ppo.train
    return train(config_of(track, seed, device, design, version), out / run_name(track, design) / f"seed{seed}",
                 progress=False)  # fmt: skip


def copy_finished(track: str, seed: int, out: Path, docs: Path, design: str = "reference") -> bool:
    """Copy a finished run (``train_summary.json`` written at its end) to the docs; False if unfinished."""
    run = out / run_name(track, design) / f"seed{seed}"
    if not (run / "train_summary.json").exists():
        return False
    target = docs / run_name(track, design) / f"seed{seed}"
    target.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        shutil.copy2(run / name, target / name)
    return True


def record(
    docs: Path, track: str, seed: int, machine: str, design: str = "reference", version: str = IN_FORCE
) -> None:
    """Add a finished run's selection score and wall times to ``DOCS/training.json``."""
    name = run_name(track, design)
    summary = json.loads((docs / name / f"seed{seed}" / "train_summary.json").read_text())
    path = docs / "training.json"
    runs = json.loads(path.read_text())["runs"] if path.exists() else {}
    runs[f"{name}/seed{seed}"] = {
        "selection_score": summary[SCORE_KEYS[track]], "warm_up_seconds": round(summary["warm_up_seconds"], 1),
        "train_seconds": round(summary["train_seconds"], 1), "resumed_after_epochs": summary["resumed_after_epochs"],
        "machine": machine,
    }  # fmt: skip
    path.write_text(json.dumps({
        "what": f"PPO trained across the training models of benchmark {version}; selection score = the "
                "checkpoint-selection measure on held-back train-split batches of the training models' "
                "training tasks (single-head: mean best-of-1/best-of-5 oracle recovery; circuit: CPR "
                "relative to greedy search), never a held-out model, task or test split",
        "train_models": list(transfer_benchmark(version).train_models), "runs": dict(sorted(runs.items())),
    }, indent=1))  # fmt: skip


def check_train_set(version: str = IN_FORCE) -> None:
    """The model set the IDs train on is benchmark ``version``'s training models."""
    bench = transfer_benchmark(version)
    if set(MODEL_SETS[bench.train_set]) != set(bench.train_models):
        raise ValueError(f"{bench.train_set} is {MODEL_SETS[bench.train_set]}, benchmark {version} trains on "
                         f"{bench.train_models}")  # fmt: skip


def copy_and_record(jobs: Sequence[tuple[str, int]], out: Path, docs: Path, machine: str,
                    design: str = "reference", version: str = IN_FORCE) -> list[str]:  # fmt: skip
    """Copy every finished run of ``jobs`` to ``docs`` and record it; one line per job."""
    lines = []
    for track, seed in jobs:
        if copy_finished(track, seed, out, docs, design):
            record(docs, track, seed, machine, design, version)
            lines.append(f"copied {track} seed {seed} to {docs / run_name(track, design) / f'seed{seed}'}")
        else:
            lines.append(f"{track} seed {seed}: not finished in {out}")
    return lines


def run_jobs(jobs: Sequence[tuple[str, int]], command: Callable[[str, int], list[str]], out: Path,
             design: str = "reference", workers: int = 1, stop_after: float | None = None) -> None:  # fmt: skip
    """Each training in its own process, ``command(track, seed)`` (torch on one thread), ``workers``
    at a time; logs in ``OUT/logs``. With ``stop_after`` (seconds) every training still running
    is stopped then (resumable)."""
    (out / "logs").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CIRCUIT_GYM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    pending, running, start = list(jobs), {}, time.time()
    while pending or running:
        while pending and len(running) < workers:
            track, seed = pending.pop(0)
            log = open(out / "logs" / f"{run_name(track, design)}_seed{seed}.log", "a")  # noqa: SIM115
            running[(track, seed)] = (
                subprocess.Popen(command(track, seed), stdout=log, stderr=subprocess.STDOUT, env=env),
                log,
            )
            print(f"[{time.time() - start:7.0f} s] started {track} seed {seed}", flush=True)
        time.sleep(2)
        if stop_after is not None and time.time() - start > stop_after:
            for process, _ in running.values():
                process.terminate()  # its last epoch's checkpoint is whole (written atomically)
            for process, log in running.values():
                process.wait()
                log.close()
            print(f"[{time.time() - start:7.0f} s] stopped: {sorted(running)} (resumable), "
                  f"{pending} not started", flush=True)  # fmt: skip
            return
        for key, (process, log) in list(running.items()):
            if process.poll() is not None:
                log.close()
                del running[key]
                status = (
                    "finished" if process.returncode == 0 else f"FAILED ({process.returncode}, see its log)"
                )
                print(f"[{time.time() - start:7.0f} s] {status}: {key[0]} seed {key[1]}", flush=True)
