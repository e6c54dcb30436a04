"""Knock-out references on public planted seeds (issue 60): per kind, each reference's knock-out
area against exact greedy's, its backup recall and truth scores at K, and its passes.

    python scripts/knockout_report.py                       # seeds 0 1 2, every kind, K = 8
    python scripts/knockout_report.py --seeds 0 1 --kinds self_repair and --json out.json
    python scripts/knockout_report.py --merge a.json b.json    # one table from earlier runs' rows
    python scripts/knockout_report.py --zoo zoo9 --json out.json  # a zoo v3 member, its trained truth
    python scripts/knockout_report.py --sealed leaderboard/private/zoo_v3_private_a.enc --key ../shared/private/board.key \
        --secret-planted 8 --kinds self_repair and --no-greedy --json out.json   # maintainers only

Without ``--sealed`` only the board's **public** planted seeds (0-19, ``PlantedBenchmark.public_seeds``)
are accepted. ``--sealed FILE --key KEY`` is the maintainers' measurement on what no entry sees: the
sealed private zoo v3 model in FILE (every gated task whose pair its training log records, scored
against its trained truth) and, with ``--secret-planted N``, the first N secret planted models per
kind of benchmark v8's draw (``planted_scorer.private_model_seeds`` of ``v8-planted`` from the sealed
seed file's first seed). Both are opened in a private temporary directory, no table is written to
the disk cache, and only **aggregates** are printed or written (means and ranges over models: no
seed, head order or per-model row). Each
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


def measure(kind: str, seed: int, k: int, names: list[str], greedy: bool = True) -> list[dict]:
    env = gym.make(planted_knockout_id(kind), seeds=[seed], split="test", pool_size=1, steps=k)
    try:
        env.reset(seed=0, options={"model_seed": seed, "batch_index": 0})
        return measure_state(
            env.unwrapped.current.unwrapped.state, truth_of(seed, GENERATOR), kind, seed, k, names, greedy
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


def measure_sealed(sealed: Path, key: Path, k: int, names: list[str], secret_planted: int,
                   kinds: list[str], greedy: bool) -> list[dict]:  # fmt: skip
    """The private zoo v3 model in ``sealed`` (its gated tasks with a recorded pair) and, with
    ``secret_planted``, that many secret planted models per kind of v8's draw; rows keyed by
    ``kind`` ("private:TASK" or the planted kind) with ``seed`` None (module docstring)."""
    from circuit_gym.leaderboard.custody import open_private
    from circuit_gym.leaderboard.planted_scorer import PrivateCache, private_model_seeds
    from circuit_gym.leaderboard.scoring import read_private_seeds
    from circuit_gym.leaderboard.transfer_scorer import PRIVATE

    rows: list[dict] = []
    with open_private(sealed, key) as opened:
        truth = trained_truth(opened.model_dir, PRIVATE)
        card = json.loads((opened.model_dir / "card_metrics.json").read_text())
        gated = set(card["suite"]["included"])
        for task in [t for t in truth.tasks if t in gated]:
            env = KnockOutEnv(model=PRIVATE, model_path=str(opened.model_dir), tasks=(task,), split="test",
                              pool_size=1, steps=k, ablation="resample", cache=False)  # fmt: skip
            try:
                env.reset(seed=0, options={"batch_index": 0})
                got = measure_state(env.state, truth, task, None, k, names, greedy)
                rows += [{**r, "kind": f"private:{task}"} for r in got]
            finally:
                env.close()
            print(f"private model, {task}: done", file=sys.stderr, flush=True)
        if secret_planted:
            seeds = private_model_seeds(read_private_seeds(opened.seeds)[0], "v8-planted")[:secret_planted]
            cache = PrivateCache()  # the secret models' tables in a temporary cache, never the disk's
            try:
                with cache.scope():
                    for kind in kinds:
                        for i, seed in enumerate(seeds):
                            rows += [{**r, "seed": None} for r in measure(kind, seed, k, names, greedy)]
                            print(f"secret {kind} {i + 1}/{len(seeds)}: done", file=sys.stderr, flush=True)
            finally:
                cache.close()
    return rows


def aggregate(rows: list[dict]) -> list[dict]:
    """Per (kind, reference): the mean and range over models of each score (no seed, no order)."""
    out = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        for name in dict.fromkeys(r["reference"] for r in rows):
            got = [r for r in rows if r["kind"] == kind and r["reference"] == name]
            cell: dict = {"kind": kind, "reference": name, "models": len(got)}
            for c in ("relative_area", "backup_recall", "recall", "precision", "auc", "passes"):
                x = np.asarray([r[c] for r in got], dtype=np.float64)
                x = x[np.isfinite(x)]
                cell[c] = (
                    None
                    if x.size == 0
                    else {"mean": float(x.mean()), "min": float(x.min()), "max": float(x.max())}
                )
            out.append(cell)
    return out


def measure_state(state, truth, kind: str, seed, k: int, names: list[str], greedy: bool = True) -> list[dict]:
    """Each reference's order, curve and truth scores on one knock-out state (``kind``: the truth's key);
    ``greedy`` False: no exact greedy curve (its ~1,000 passes), the relative area NaN."""
    clean = state.clean_metric
    greedy_curve = state.greedy_curve(k)[1] if greedy else None
    rows = []
    for name in names:
        start = time.perf_counter()
        run = REFERENCES[name](state, k)
        curve = knockout_curve(state, run.order)
        rows.append({"kind": kind, "seed": seed, "reference": name, "order": list(run.order), "passes": run.passes,
                     "clean": clean, "curve": curve.tolist(),
                     "relative_area": float("nan") if greedy_curve is None else relative_area(curve, greedy_curve, clean, k),
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
    parser.add_argument(
        "--sealed", type=Path, default=None, help="a sealed private zoo v3 model (maintainers)"
    )
    parser.add_argument("--key", type=Path, default=None, help="with --sealed: the maintainers' key")
    parser.add_argument("--secret-planted", type=int, default=0,
                        help="with --sealed: secret planted models per kind (v8's draw from its seed file)")  # fmt: skip
    parser.add_argument("--no-greedy", action="store_true", help="skip exact greedy's curve (area NaN)")
    args = parser.parse_args(argv)
    if args.sealed is not None:
        if args.key is None:
            parser.error("--sealed needs --key (the maintainers' key)")
        unknown = sorted(set(args.kinds) - set(KINDS)) + sorted(set(args.references) - set(REFERENCES))
        if unknown:
            parser.error(f"unknown kinds or references: {unknown}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = measure_sealed(args.sealed, args.key, args.k, args.references, args.secret_planted, args.kinds,
                                  not args.no_greedy)  # fmt: skip
        cells = aggregate(rows)
        print(f"K = {args.k}, sealed private model {args.sealed.name} and {args.secret_planted} secret planted "
              "models per kind; test split batch 0 (16 prompts); mean (range over models)")  # fmt: skip
        print(table(rows, list(dict.fromkeys(r["kind"] for r in rows)), args.references))
        if args.json is not None:
            args.json.write_text(json.dumps({"sealed": args.sealed.name, "k": args.k,
                                             "secret_planted_per_kind": args.secret_planted, "cells": cells}, indent=1))  # fmt: skip
        return 0
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
