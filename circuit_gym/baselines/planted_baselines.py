"""Planted models: how far observation features, shallow-first and ACDC get against the ground truth.

For each model seed and circuit kind, on one prompt batch of the kind's task (split ``eval``,
batch seed 0, resample ablation), this measures:

- the **single-head oracle**: each head's task damage ``m(full) - m(full - h)`` (the exhaustive
  sweep; the reward with ``lam = 0``: the general-damage half is left out here);
- **one observation feature**: the head with the highest (or lowest) value of one column of the
  environments' observation (``circuit_gym.envs.features``: the ten static attention columns and
  the two task-free ``prediction`` columns); the column and its sign are chosen per kind on the
  *selection* seeds (best mean recovery there) and reported on the *report* seeds only;
- **shallow-first**: heads in order of depth (``0.0`` first);
- **ACDC** (``circuit_gym.baselines.acdc``, its default threshold sweep; report seeds only):
  precision and recall of the heads it keeps against the true circuit, after the whole sweep
  and after its middle threshold.

Recovery of a rule = the damage of the head it picks / the oracle's damage (best-of-1), and
``hit`` = the picked head is in the true circuit. ``recall@|C|``: the share of the true circuit
among the rule's top ``|C|`` heads (the oracle's ranking: by damage).

Run by ``scripts/planted_baselines.py`` (:func:`run`; ``benchmarks/results/planted.json``).
Resumable: measurements are appended to ``OUT.partial.jsonl`` as they finish; a second process
with ``--reverse`` shares the work (each skips what the file already holds).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from circuit_gym.circuits import Circuit, CircuitRunner
from circuit_gym.envs.features import (
    FEATURE_NAMES,
    N_STATIC,
    PREDICTION_FEATURE_NAMES,
    head_features,
    prediction_features,
)
from circuit_gym.models.planted import KINDS, PLANTED_TASKS, make_planted_model
from circuit_gym.models.planted.recovery import precision_recall  # an empty proposal: precision 0
from circuit_gym.solvers.acdc import acdc

COLUMNS = (*FEATURE_NAMES[:N_STATIC], *PREDICTION_FEATURE_NAMES[:2])
SPLIT, BATCH_SIZE, BATCH_SEED = "eval", 8, 0


def finished(partial: Path) -> dict[tuple[int, str], dict]:
    """The measurements already in ``partial`` (the first of any duplicate)."""
    rows: dict[tuple[int, str], dict] = {}
    for line in partial.read_text().splitlines() if partial.exists() else []:
        row = json.loads(line)
        rows.setdefault((row["seed"], row["kind"]), row)
    return rows


def measure(seed: int, kind: str, with_acdc: bool) -> dict:
    """Features, oracle damages and (``with_acdc``) ACDC's kept sets of one (seed, kind)."""
    planted = make_planted_model(seed)
    model, task = planted.model, PLANTED_TASKS[kind]
    batch = task.batch(model, SPLIT, BATCH_SIZE, seed=BATCH_SEED)
    runner = CircuitRunner.for_task(model, task, batch, "resample")
    n_layers, n_heads = runner.n_layers, runner.n_heads
    n = n_layers * n_heads
    without = [Circuit.of(set(range(n)) - {h}, n_layers, n_heads) for h in range(n)]
    damage = runner.full_metric - runner.metric(without)
    features = np.concatenate(
        [head_features(model, batch.tokens), prediction_features(model, batch.tokens)], axis=1
    )
    row = {"seed": seed, "kind": kind, "circuit": sorted(planted.truth.circuit(kind)),
           "full_metric": runner.full_metric, "damage": damage.tolist(), "features": features.tolist()}  # fmt: skip
    if with_acdc:
        t0 = time.perf_counter()
        result = acdc(runner)
        middle = len(result.taus) // 2
        row.update(acdc_kept=sorted(result.kept[-1]), acdc_kept_middle=sorted(result.kept[middle]),
                   acdc_taus=list(result.taus), acdc_tries=result.tries, acdc_seconds=time.perf_counter() - t0)  # fmt: skip
    return row


def recovery(damage: np.ndarray, head: int) -> float:
    return float(damage[head] / damage.max())


def recall_at(order: np.ndarray, circuit: set[int]) -> float:
    return len(set(order[: len(circuit)].tolist()) & circuit) / len(circuit)


def rule_scores(rows: list[dict], column: int, sign: float) -> dict:
    rec, hit, rat = [], [], []
    for r in rows:
        damage, score, circuit = (
            np.asarray(r["damage"]),
            sign * np.asarray(r["features"])[:, column],
            set(r["circuit"]),
        )
        order = np.argsort(-score, kind="stable")
        rec.append(recovery(damage, int(order[0])))
        hit.append(int(order[0]) in circuit)
        rat.append(recall_at(order, circuit))
    return {"recovery": float(np.mean(rec)), "hit": float(np.mean(hit)), "recall_at_c": float(np.mean(rat))}


def summarise(select: list[dict], report: list[dict]) -> dict:
    out = {}
    for kind in KINDS:
        sel = [r for r in select if r["kind"] == kind]
        rep = [r for r in report if r["kind"] == kind]
        candidates = [(c, s) for c in range(len(COLUMNS)) for s in (1.0, -1.0)]
        column, sign = max(candidates, key=lambda cs: rule_scores(sel, *cs)["recovery"])
        n = len(rep[0]["damage"])
        shallow = np.arange(n)
        oracle_rat = [
            recall_at(np.argsort(-np.asarray(r["damage"]), kind="stable"), set(r["circuit"])) for r in rep
        ]
        acdc_full = [precision_recall(r["acdc_kept"], set(r["circuit"])) for r in rep]
        acdc_mid = [precision_recall(r["acdc_kept_middle"], set(r["circuit"])) for r in rep]
        out[kind] = {
            "oracle": {"recovery": 1.0, "hit": float(np.mean([int(np.argmax(r["damage"])) in set(r["circuit"]) for r in rep])),
                       "recall_at_c": float(np.mean(oracle_rat))},
            "best_feature": {"column": COLUMNS[column], "sign": sign, **rule_scores(rep, column, sign),
                             "selection_recovery": rule_scores(sel, column, sign)["recovery"]},
            "shallow_first": {
                "recovery": float(np.mean([recovery(np.asarray(r["damage"]), 0) for r in rep])),
                "hit": float(np.mean([0 in set(r["circuit"]) for r in rep])),
                "recall_at_c": float(np.mean([recall_at(shallow, set(r["circuit"])) for r in rep])),
            },
            "acdc": {
                "precision": float(np.mean([p for p, _ in acdc_full])), "recall": float(np.mean([q for _, q in acdc_full])),
                "precision_middle_tau": float(np.mean([p for p, _ in acdc_mid])),
                "recall_middle_tau": float(np.mean([q for _, q in acdc_mid])),
                "exact": float(np.mean([set(r["acdc_kept"]) == set(r["circuit"]) for r in rep])),
                "kept_size": float(np.mean([len(r["acdc_kept"]) for r in rep])),
                "seconds": float(np.mean([r["acdc_seconds"] for r in rep])),
            },
        }  # fmt: skip
    return out


def run(out: Path, select_seeds: Sequence[int], report_seeds: Sequence[int], *, reverse: bool = False,
        command: str = "") -> dict | None:  # fmt: skip
    """Measure every (seed, kind) not yet in ``OUT.partial.jsonl`` (``reverse``: from the end, for
    a second process), then, once every one is there, write ``out`` (the summary, the settings,
    ``command`` and every measurement) and return the summary; None while another process works."""
    select_seeds, report_seeds = list(select_seeds), list(report_seeds)
    if set(select_seeds) & set(report_seeds):
        raise ValueError("selection and report seeds must be disjoint")
    start = time.perf_counter()
    partial = out.with_suffix(".partial.jsonl")  # resumable: one measurement per line
    out.parent.mkdir(parents=True, exist_ok=True)
    todo = [(s, k) for s in select_seeds + report_seeds for k in KINDS]
    for i, (seed, kind) in enumerate(todo[::-1] if reverse else todo, 1):
        if (seed, kind) in finished(partial):  # by this process or another one sharing the file
            continue
        row = measure(seed, kind, with_acdc=seed in report_seeds)
        with partial.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"[{i}/{len(todo)}] seed {seed} {kind}: {time.perf_counter() - start:.0f} s", flush=True)
    rows = finished(partial)
    if len(rows) < len(todo):
        return None  # the other process writes the summary
    select = [rows[(s, k)] for s in select_seeds for k in KINDS]
    report = [rows[(s, k)] for s in report_seeds for k in KINDS]
    summary = summarise(select, report)
    out.write_text(json.dumps({
        "command": command,
        "split": SPLIT, "batch_size": BATCH_SIZE, "batch_seed": BATCH_SEED, "ablation": "resample",
        "columns": list(COLUMNS), "select_seeds": select_seeds, "report_seeds": report_seeds,
        "summary": summary, "seconds": time.perf_counter() - start, "measurements": select + report,
    }, indent=1))  # fmt: skip
    partial.unlink()
    return summary
