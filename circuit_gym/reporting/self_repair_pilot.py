"""Issue 41's self-repair pilot: per model and per task that passes the model's inclusion gate on
the *train* split, the self-repair measures (:mod:`circuit_gym.circuits.self_repair`) on an
*eval*-split batch; the test split is never read. Models are the zoo's members and the pilot
members trained with the self-repair knob (``--head-dropout P``), whose value each model's
``training_log.json`` records (absent: 0, zoo v1).

The gate is the suite's rule (:func:`circuit_gym.suite.gate`: accuracy, oracle positive share and
interval, modal share) run on the train split with fewer episodes than a model card's; ablation
and reference are the zoo cards' (resample, ``stdlib+taskstyle``) for every model, so a pilot
member is measured as the shipped zoo is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.contrastive import build_task_engine
from circuit_gym.benchmark import ABLATION, TRANSFER_TRAIN_TASKS
from circuit_gym.circuits.self_repair import TOP_K, self_repair_measures
from circuit_gym.embedded import is_embedded
from circuit_gym.heads import head_name
from circuit_gym.models.behaviour import task_metrics
from circuit_gym.models.loading import embedded_dir, load_model
from circuit_gym.models.training import KNOBS
from circuit_gym.suite import MIN_ACCURACY, default_tasks, gate, oracle_heads
from circuit_gym.tasks import get_task

REFERENCE = "stdlib+taskstyle"  # the zoo cards' reference batch
GATE_SPLIT, MEASURE_SPLIT = "train", "eval"
REDUNDANCY_BAR = 1.5  # issue 41: the pair's joint damage at least 1.5x the sum of its singles
METHODS = ("attribution", "eap_ig", "gim")


def trained_steps(directory: Path) -> int:
    """The last step a model's training log records (a pilot member may be exported early)."""
    return int(json.loads((Path(directory) / "training_log.json").read_text())["log"][-1]["step"])


def knob_value(directory: Path, knob: str = "head_dropout") -> float:
    """A self-repair knob a model was trained with (one of :data:`KNOBS`): its training log's
    ``setup`` value, 0 when the log predates the knob."""
    if knob not in KNOBS:
        raise ValueError(f"unknown knob {knob!r}; known: {KNOBS}")
    log = json.loads((Path(directory) / "training_log.json").read_text())
    return float(log["setup"].get(knob, 0.0))


def _knobs(entry: Mapping) -> str:
    """A model's knob cell: P (random heads) and, where trained with them, T (each task's top head)
    and F (flooding); an entry written before a knob existed was trained without it."""
    top, flood = entry.get("knob_top_head_dropout", 0.0), entry.get("knob_flood", 0.0)
    return (_fmt(entry["knob_head_dropout"], ".2f") + (f" / T {top:.2f}" if top else "")
            + (f" / F {flood:.2f}" if flood else ""))  # fmt: skip


def model_entry(model, task_names, *, episodes: int, accuracy_batches: int, prompts: int, seed: int,
                cache: SweepCache | None = None) -> dict:  # fmt: skip
    """Gate (train split; its sweeps through ``cache``) and, for the tasks it admits, the measures
    (one eval-split batch)."""
    n_heads = int(model.cfg.n_heads)
    tasks = {}
    for name in task_names:
        try:
            acc = task_metrics(model, name, GATE_SPLIT, n_batches=accuracy_batches)
        except ValueError as err:  # fillers that are not single tokens of this tokenizer
            tasks[name] = {"included": False, "error": str(err)}
            continue
        row: dict = {"training_task": name in TRANSFER_TRAIN_TASKS}
        if acc["accuracy"] < MIN_ACCURACY:  # the gate fails on accuracy alone: no oracle sweeps spent
            row["gate"] = {"included": False, "checks": {"accuracy": False}, "accuracy": acc["accuracy"]}
        else:
            heads, rewards = oracle_heads(model, name, GATE_SPLIT, episodes, ablation=ABLATION, reference=REFERENCE,
                                          cache=cache)  # fmt: skip
            row["gate"] = gate(acc["accuracy"], rewards, heads)
        row["included"] = row["gate"]["included"]
        if row["included"]:
            task = get_task(name)
            batch = task.batch(model, MEASURE_SPLIT, prompts, seed=seed)
            engine = build_task_engine(model, task, batch, ABLATION)
            m = self_repair_measures(engine)
            m["top_head_name"] = head_name(m["top_head"], n_heads)
            m["top_pair_names"] = [head_name(h, n_heads) for h in m["top_pair"]]
            row["measures"] = m
        tasks[name] = row
    return tasks


def summary(tasks: Mapping[str, dict], training_only: bool) -> dict:
    """Over a model's gated tasks (or its gated training tasks): how many pass the redundancy bar,
    the mean total/direct ratio, and each method's mean agreement with the oracle."""
    rows = [
        r["measures"] for r in tasks.values() if r["included"] and (r["training_task"] or not training_only)
    ]
    ratios = [m["total_over_direct"] for m in rows if m["total_over_direct"] is not None]
    redundancies = [m["redundancy"] for m in rows if m["redundancy"] is not None]
    out: dict = {
        "gated": len(rows),
        "redundant": sum(1 for m in rows if (m["redundancy"] or 0) >= REDUNDANCY_BAR),
        "mean_total_over_direct": float(np.mean(ratios)) if ratios else None,
        # a head acting mostly through later heads has a tiny direct effect and a huge ratio
        "median_total_over_direct": float(np.median(ratios)) if ratios else None,
        "mean_redundancy": float(np.mean(redundancies)) if redundancies else None,
    }
    for method in METHODS:
        a = [m["agreement"][method] for m in rows]
        out[method] = {
            "mean_spearman": float(np.mean([x["spearman"] for x in a])) if a else None,
            "top1": sum(x["top1"] for x in a),
            f"mean_top{TOP_K}_overlap": float(np.mean([x[f"top{TOP_K}_overlap"] for x in a])) if a else None,
        }
    return out


def pilot_report(models: Mapping[str, Path], *, tasks=None, episodes: int = 16, accuracy_batches: int = 4,
                 prompts: int = 32, seed: int = 0, threads: int | None = 1,
                 cache: SweepCache | None = None) -> dict:  # fmt: skip
    """The whole pilot: ``models`` maps a name to its checkpoint directory."""
    out = {}
    for name, directory in models.items():
        model = load_model(name, path=None if is_embedded(name) else directory, threads=threads)
        per_task = model_entry(model, list(tasks or default_tasks(name)), episodes=episodes,
                               accuracy_batches=accuracy_batches, prompts=prompts, seed=seed, cache=cache)  # fmt: skip
        out[name] = {**{f"knob_{knob}": knob_value(directory, knob) for knob in KNOBS},
                     "trained_steps": trained_steps(directory),
                     "weights_hash": model.circuit_gym_info.weights_hash,
                     "tasks": per_task, "summary_all": summary(per_task, False),
                     "summary_training_tasks": summary(per_task, True)}  # fmt: skip
    return {
        "setup": {"ablation": ABLATION, "reference": REFERENCE, "gate_split": GATE_SPLIT,
                  "gate_episodes": episodes, "gate_accuracy_prompts": accuracy_batches * 16,
                  "measure_split": MEASURE_SPLIT, "measure_prompts": prompts, "measure_seed": seed,
                  "redundancy_bar": REDUNDANCY_BAR, "training_tasks": list(TRANSFER_TRAIN_TASKS)},
        "models": out,
    }  # fmt: skip


def merge(previous: dict | None, new: dict) -> dict:
    """``new``'s models added to (or replacing those of) ``previous``, a report of the same setup."""
    if previous is None:
        return new
    if previous["setup"] != new["setup"]:
        raise ValueError(f"the setups differ: {previous['setup']} vs {new['setup']}")
    return {"setup": new["setup"], "models": {**previous["models"], **new["models"]}}


def update_report(path: Path, models: Mapping[str, Path], *, fresh: bool = False, **settings) -> dict:
    """Measure ``models`` (:func:`pilot_report` with ``settings``), add them to the report at ``path``
    (unless ``fresh``: then it replaces it), write it and return it."""
    report = pilot_report(models, cache=SweepCache(), **settings)
    previous = None if fresh or not path.is_file() else json.loads(path.read_text())
    report = merge(previous, report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    return report


# Where the pilot's members and zoo v2 members not yet shipped in the package are kept (committed,
# so the report's numbers can be recomputed from the weights they name), and where a training run
# exports them.
KEPT_MODELS = ("docs/results/zoo/models", "runs/zoo_pilot/models")


def default_models(root: Path) -> dict[str, Path]:
    """The shipped zoo members, then the models kept under :data:`KEPT_MODELS` (the first folder
    wins a name)."""
    from circuit_gym.embedded import SHIPPED_ZOO

    models = {name: embedded_dir(name) for name in SHIPPED_ZOO}
    for folder in reversed(KEPT_MODELS):
        kept = root / folder
        if kept.is_dir():
            models.update({d.name: d for d in sorted(kept.iterdir()) if (d / "model.safetensors").is_file()})
    return models


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def pilot_table(report: dict) -> str:
    """Markdown: one row per model and gated task (docs/zoo.md's "Self-repair pilot")."""
    header = ["model", "knob P (/ T / F)", "task", "top head", "total / direct", "direct - total", "top pair",
              "redundancy", "Spearman attr / EAP-IG / GIM", "top-1 attr / EAP-IG / GIM",
              "top-5 overlap attr / EAP-IG / GIM"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    for name, entry in report["models"].items():
        for task, row in entry["tasks"].items():
            if not row["included"]:
                continue
            m = row["measures"]
            a = [m["agreement"][x] for x in METHODS]
            cells = [f"`{name}`", _knobs(entry), task + ("" if row["training_task"] else " (held out)"),
                     m["top_head_name"], _fmt(m["total_over_direct"], ".2f"), _fmt(m["self_repair"], ".2f"),
                     " + ".join(m["top_pair_names"]), _fmt(m["redundancy"], ".2f"),
                     " / ".join(_fmt(x["spearman"], ".2f") for x in a),
                     " / ".join("yes" if x["top1"] else "no" for x in a),
                     " / ".join(str(x[f"top{TOP_K}_overlap"]) for x in a)]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_table(report: dict) -> str:
    """Markdown: one row per model, over its gated tasks (all / training tasks only)."""
    header = ["model", "knob P (/ T / F)", "trained steps", "gated tasks (training)", f"redundancy >= {REDUNDANCY_BAR}",
              "median (mean) total / direct", "mean Spearman attr / EAP-IG / GIM", "top-1 hits attr / EAP-IG / GIM"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    for name, entry in report["models"].items():
        s, t = entry["summary_all"], entry["summary_training_tasks"]
        cells = [f"`{name}`", _knobs(entry), f"{entry['trained_steps']:,}",
                 f"{s['gated']} ({t['gated']})",
                 f"{s['redundant']} ({t['redundant']})",
                 f"{_fmt(s['median_total_over_direct'], '.2f')} ({_fmt(s['mean_total_over_direct'], '.2f')})",
                 " / ".join(_fmt(s[x]["mean_spearman"], ".2f") for x in METHODS),
                 " / ".join(str(s[x]["top1"]) for x in METHODS)]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
