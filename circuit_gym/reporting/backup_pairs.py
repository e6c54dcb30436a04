"""The backup objective's report (zoo v3, issue 55): per trained model and recorded pair, whether
the pair is the dormant backup the objective asked for, and whether one-pass methods see it.

A model trained with ``--backup-weight`` records its pairs (task, primary ``P``, backup ``Q``) in
its ``training_log.json`` (``backup_pairs``). Per pair, on an *eval*-split batch (the test split is
never read) with the board's ablation: the task's train-split accuracy, and
:func:`circuit_gym.circuits.self_repair.pair_measures` (redundancy of the pair, P's self-repair,
Q's single damage and its rank under attribution patching, EAP-IG and GIM). The bar (issue 55):
redundancy at least :data:`REDUNDANCY_BAR` and P's self-repair at least :data:`SELF_REPAIR_BAR`;
settings are judged on training tasks only (:data:`circuit_gym.benchmark.TRANSFER_TRAIN_TASKS`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from circuit_gym.ablation.contrastive import build_task_engine
from circuit_gym.benchmark import ABLATION, TRANSFER_TRAIN_TASKS
from circuit_gym.circuits.self_repair import pair_measures
from circuit_gym.heads import head_name
from circuit_gym.models.behaviour import task_metrics
from circuit_gym.models.cards import pair_measure_cells
from circuit_gym.models.loading import load_model
from circuit_gym.suite import MIN_ACCURACY
from circuit_gym.tasks import get_task

REDUNDANCY_BAR = 2.0
SELF_REPAIR_BAR = 0.5
BLIND_RANK = 20  # issue 55: first-order methods are blind to Q when its median rank is this or worse
MEASURE_SPLIT = "eval"


def meets_bar(m: Mapping) -> bool:
    """Redundancy >= 2 (joint damage at least twice the sum of the singles, which also holds when
    both singles are ~0) and P's self-repair >= 0.5."""
    repair = m["primary_self_repair"]
    return bool(m["super_additive_2x"] and repair is not None and repair >= SELF_REPAIR_BAR)


def model_entry(model, pairs: list[dict], *, prompts: int, seed: int, accuracy_batches: int) -> dict:
    """Per recorded pair: accuracy (train split) and, where the task is performed, the measures."""
    n_heads = int(model.cfg.n_heads)
    tasks = {}
    for pair in pairs:
        name = pair["task"]
        accuracy = task_metrics(model, name, "train", n_batches=accuracy_batches)["accuracy"]
        row: dict = {"training_task": name in TRANSFER_TRAIN_TASKS, "accuracy": accuracy,
                     "performed": accuracy >= MIN_ACCURACY}  # fmt: skip
        if row["performed"]:
            task = get_task(name)
            batch = task.batch(model, MEASURE_SPLIT, prompts, seed=seed)
            m = pair_measures(
                build_task_engine(model, task, batch, ABLATION), pair["primary"], pair["backup"]
            )
            m["pair_names"] = [head_name(pair["primary"], n_heads), head_name(pair["backup"], n_heads)]
            m["meets_bar"] = meets_bar(m)
            row["measures"] = m
        tasks[name] = row
    return tasks


def summary(tasks: Mapping[str, dict], training_only: bool) -> dict:
    """Over a model's performed pairs (or its training tasks' only): how many meet the bar, the
    median redundancy and self-repair, and the median rank of Q per method."""
    rows = [
        r["measures"] for r in tasks.values() if r["performed"] and (r["training_task"] or not training_only)
    ]

    def median(values: list) -> float | None:
        values = [v for v in values if v is not None]
        return float(np.median(values)) if values else None

    methods = sorted(rows[0]["backup_rank"]) if rows else []
    return {
        "performed": len(rows),
        "meet_bar": sum(m["meets_bar"] for m in rows),
        "median_redundancy": median([m["redundancy"] for m in rows]),
        "median_self_repair": median([m["primary_self_repair"] for m in rows]),
        "median_backup_damage": median([m["backup_damage"] for m in rows]),
        "median_backup_rank": {k: median([m["backup_rank"][k] for m in rows]) for k in methods},
        # issue 55's blindness target reads the pairs that meet the bar
        "median_backup_rank_on_bar": {
            k: median([m["backup_rank"][k] for m in rows if m["meets_bar"]]) for k in methods
        },
    }


def _setup(prompts: int, seed: int) -> dict:
    return {"ablation": ABLATION, "measure_split": MEASURE_SPLIT, "prompts": prompts, "seed": seed,
            "redundancy_bar": REDUNDANCY_BAR, "self_repair_bar": SELF_REPAIR_BAR,
            "training_tasks": list(TRANSFER_TRAIN_TASKS)}  # fmt: skip


def _model_report(log: dict, weights_hash: str, tasks: dict) -> dict:
    setup = log["setup"]
    return {"setup": {k: v for k, v in setup.items() if k.startswith("backup") or k in ("init_from", "steps")},
            "weights_hash": weights_hash, "tasks": tasks,
            "summary_all": summary(tasks, False), "summary_training_tasks": summary(tasks, True)}  # fmt: skip


def report(models: Mapping[str, Path], *, prompts: int = 32, seed: int = 0, accuracy_batches: int = 4,
           threads: int | None = 1, tasks: list[str] | None = None) -> dict:  # fmt: skip
    """Every model of ``models`` (name -> exported directory) that recorded pairs (only the pairs of
    ``tasks``, where given: a pilot chooses its setting on the training tasks alone)."""
    out = {}
    for name, directory in models.items():
        log = json.loads((Path(directory) / "training_log.json").read_text())
        if not log.get("backup_pairs"):
            raise ValueError(f"{directory} records no backup pairs (trained without --backup-weight?)")
        pairs = [p for p in log["backup_pairs"] if tasks is None or p["task"] in tasks]
        model = load_model(name, path=directory, threads=threads)
        measured = model_entry(model, pairs, prompts=prompts, seed=seed, accuracy_batches=accuracy_batches)
        out[name] = _model_report(log, model.circuit_gym_info.weights_hash, measured)
    return {"setup": _setup(prompts, seed), "models": out}


def report_from_cards(models: Mapping[str, Path], *, prompts: int, seed: int = 0) -> dict:
    """:func:`report`'s document from the shipped models' cards (``card_metrics.json``'s
    ``backup_pairs``, measured by ``scripts/model_card.py`` with ``prompts`` and ``seed``), nothing
    measured again."""
    out = {}
    for name, directory in models.items():
        card = json.loads((Path(directory) / "card_metrics.json").read_text())
        if "backup_pairs" not in card:
            raise ValueError(
                f"{directory}/card_metrics.json holds no backup pairs: run scripts/model_card.py"
            )
        log = json.loads((Path(directory) / "training_log.json").read_text())
        out[name] = _model_report(log, card["weights_hash"], card["backup_pairs"])
    return {"setup": _setup(prompts, seed), "models": out}


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def pairs_table(rep: dict) -> str:
    """Markdown: one row per model and performed pair."""
    header = ["model", "task", "P + Q", "damage P / Q / both", "redundancy", "P self-repair",
              "rank of Q: sweep / attr / EAP-IG / GIM", "bar"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    for name, entry in rep["models"].items():
        for task, row in entry["tasks"].items():
            if not row["performed"]:
                lines.append(
                    f"| `{name}` | {task} | - | not performed (accuracy {row['accuracy']:.2f}) | | | | |"
                )
                continue
            m = row["measures"]
            cells = [f"`{name}`", task + ("" if row["training_task"] else " (held out)"), " + ".join(m["pair_names"]),
                     *pair_measure_cells(m)]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_table(rep: dict) -> str:
    """Markdown: per model, over its performed pairs (all tasks, then training tasks only), how many
    meet the bar, the median redundancy and self-repair, and the median rank of the backup Q per
    method (issue 55: first-order methods are blind to Q at a median rank of 20 or worse)."""
    header = ["model", "tasks", "pairs performed", "meet the bar", "median redundancy", "median P self-repair",
              "median rank of Q: sweep / attr / EAP-IG / GIM", "the same on the pairs that meet the bar"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    for name, entry in rep["models"].items():
        for label, key in (("all", "summary_all"), ("training", "summary_training_tasks")):
            s = entry[key]
            ranks, on_bar = (
                " / ".join(
                    _fmt(s.get(field, {}).get(k), ".0f") for k in ("oracle", "attribution", "eap_ig", "gim")
                )
                for field in ("median_backup_rank", "median_backup_rank_on_bar")
            )
            cells = [f"`{name}`", label, str(s["performed"]), str(s["meet_bar"]), _fmt(s["median_redundancy"], ".2f"),
                     _fmt(s["median_self_repair"], ".2f"), ranks, on_bar]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
