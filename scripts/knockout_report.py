"""Knock-out references on public planted seeds (issue 60): per kind, each reference's knock-out
area against exact greedy's, its backup recall and truth scores at K, and its passes.

    python scripts/knockout_report.py                       # seeds 0 1 2, every kind, K = 8
    python scripts/knockout_report.py --seeds 0 1 --kinds self_repair and --json out.json
    python scripts/knockout_report.py --merge a.json b.json    # one table from earlier runs' rows
    python scripts/knockout_report.py --zoo zoo9 --json out.json  # a zoo v3 member, its trained truth

Only the board's **public** planted seeds (0-19, ``PlantedBenchmark.public_seeds``) are accepted:
the secret models are drawn from the maintainers' seed file and are never read here. Each
(kind, seed) plays the ``CircuitDiscovery-Planted-{Kind}-KnockOut-v0`` environment's batch 0 of the
test split (16 prompts, resample ablation); the references (``circuit_gym.solvers.knockout``) read
its runner; the curves are exact (one stacked pass of an order's prefixes).

``--zoo MEMBER`` measures a public zoo v3 member instead: every task it gates that records a backup
pair, on the knock-out environment of that model and task (the same batch), scored against the
trained truth (``circuit_gym.models.trained_truth``: the primary and its backup); the "kind" column
names the task.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402

import circuit_gym  # noqa: E402,F401  (registers the IDs)
from circuit_gym.circuits.knockout_scores import relative_area, truth_scores  # noqa: E402
from circuit_gym.embedded import ZOO_GENERATIONS  # noqa: E402
from circuit_gym.envs.knockout import KnockOutEnv  # noqa: E402
from circuit_gym.envs.registration import planted_knockout_id  # noqa: E402
from circuit_gym.models.cards import gated_tasks  # noqa: E402
from circuit_gym.models.loading import embedded_dir  # noqa: E402
from circuit_gym.models.planted.generator import truth_of  # noqa: E402
from circuit_gym.models.planted.versions import kinds_of  # noqa: E402
from circuit_gym.models.trained_truth import trained_truth  # noqa: E402
from circuit_gym.solvers.knockout import REFERENCES, knockout_curve  # noqa: E402

PUBLIC_SEEDS = range(20)  # circuit_gym.leaderboard.planted_scorer.PlantedBenchmark.public_seeds
GENERATOR = 3
KINDS = kinds_of(GENERATOR)


def measure(kind: str, seed: int, k: int, names: list[str]) -> list[dict]:
    env = gym.make(planted_knockout_id(kind), seeds=[seed], split="test", pool_size=1, steps=k)
    try:
        env.reset(seed=0, options={"model_seed": seed, "batch_index": 0})
        return measure_state(
            env.unwrapped.current.unwrapped.state, truth_of(seed, GENERATOR), kind, seed, k, names
        )
    finally:
        env.close()


def measure_zoo(member: str, k: int, names: list[str], tasks: list[str] | None = None) -> list[dict]:
    """Every gated task of zoo v3 ``member`` that records a backup pair (module docstring), or
    those of ``tasks``."""
    truth = trained_truth(embedded_dir(member), member)
    rows = []
    for task in [t for t in truth.tasks if t in gated_tasks(member) and (tasks is None or t in tasks)]:
        env = KnockOutEnv(model=member, tasks=(task,), split="test", pool_size=1, steps=k)
        try:
            env.reset(seed=0, options={"batch_index": 0})
            rows += measure_state(env.state, truth, task, member, k, names)
        finally:
            env.close()
    return rows


def measure_state(state, truth, kind: str, seed, k: int, names: list[str]) -> list[dict]:
    """Each reference's order, curve and truth scores on one knock-out state (``kind``: the truth's key)."""
    clean = state.clean_metric
    greedy_curve = state.greedy_curve(k)[1]
    rows = []
    for name in names:
        start = time.perf_counter()
        run = REFERENCES[name](state, k)
        curve = knockout_curve(state, run.order)
        rows.append({"kind": kind, "seed": seed, "reference": name, "order": list(run.order), "passes": run.passes,
                     "clean": clean, "curve": curve.tolist(), "relative_area": relative_area(curve, greedy_curve, clean, k),
                     **truth_scores(run.order, truth.circuit(kind), truth.backups(kind), state.runner.n_layers * state.runner.n_heads),
                     "seconds": time.perf_counter() - start})  # fmt: skip
    return rows


def _cell(values: list[float]) -> str:
    """Mean over seeds and, with several seeds, their range (a few seeds: no interval is honest)."""
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=np.float64)
    if x.size == 0:
        return "-"
    lo, hi = f"{x.min():.2f}", f"{x.max():.2f}"
    return f"{x.mean():.2f}" + (f" ({lo} to {hi})" if lo != hi else "")


def table(rows: list[dict], kinds: list[str], names: list[str]) -> str:
    lines = ["| kind | reference | area / greedy | backup recall | recall | precision | AUC | passes |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for kind in kinds:
        for name in names:
            got = [r for r in rows if r["kind"] == kind and r["reference"] == name]
            cells = [
                _cell([r[c] for r in got])
                for c in ("relative_area", "backup_recall", "recall", "precision", "auc")
            ]
            lines.append(
                f"| {kind} | {name} | "
                + " | ".join(cells)
                + f" | {np.mean([r['passes'] for r in got]):.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS))
    parser.add_argument("--references", nargs="+", default=list(REFERENCES))
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--json", type=Path, default=None, help="write every row here")
    parser.add_argument(
        "--merge", type=Path, nargs="+", default=None, help="print the table of these runs' rows"
    )
    parser.add_argument("--zoo", default=None, help="a public zoo v3 member instead of planted seeds")
    parser.add_argument("--tasks", nargs="+", default=None, help="with --zoo: only these tasks")
    args = parser.parse_args(argv)
    if args.zoo is not None:
        if args.zoo not in ZOO_GENERATIONS.get("v3", ()):
            parser.error(
                f"--zoo takes a public zoo v3 member {ZOO_GENERATIONS.get('v3', ())}, got {args.zoo!r}"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = measure_zoo(args.zoo, args.k, args.references, args.tasks)
        tasks = list(dict.fromkeys(r["kind"] for r in rows))
        print(
            f"K = {args.k}, {args.zoo}, every gated task with a recorded pair, test split batch 0 (16 prompts)"
        )
        print(table(rows, tasks, args.references))
        if args.json is not None:
            args.json.write_text(json.dumps(rows, indent=1))
        return 0
    if args.merge:
        rows = [row for path in args.merge for row in json.loads(path.read_text())]
        kinds = list(dict.fromkeys(r["kind"] for r in rows))
        names = [n for n in REFERENCES if any(r["reference"] == n for r in rows)]
        seeds = sorted({r["seed"] for r in rows})
        print(f"K = {max(len(r['curve']) for r in rows)}, public planted seeds {seeds}, generator {GENERATOR}, test split batch 0 "
              "(16 prompts); mean (range over seeds)")  # fmt: skip
        print(table(rows, kinds, names))
        return 0
    bad = [s for s in args.seeds if s not in PUBLIC_SEEDS]
    if bad:
        parser.error(f"only public planted seeds (0-19) are measured here, got {bad}")
    unknown = sorted(set(args.kinds) - set(KINDS)) + sorted(set(args.references) - set(REFERENCES))
    if unknown:
        parser.error(f"unknown kinds or references: {unknown}")
    rows: list[dict] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in args.kinds:
            for seed in args.seeds:
                start = time.perf_counter()
                rows += measure(kind, seed, args.k, args.references)
                print(f"{kind} seed {seed}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print(f"K = {args.k}, public planted seeds {args.seeds}, generator {GENERATOR}, test split batch 0 (16 prompts); "
          "mean (range over seeds)")  # fmt: skip
    print(table(rows, args.kinds, args.references))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
