"""The task suite of a model: which behaviours it performs (the inclusion gate) and where
their bottleneck heads are (the oracle structure).

**Inclusion gate.** A task counts for a model only if, on its *test* split:

1. clean accuracy (``Task.correct``: the answer beats every distractor, per task) is at
   least ``MIN_ACCURACY`` = 0.9 (the behaviour is there);
2. the per-episode oracle reward is positive in at least ``MIN_POSITIVE_SHARE`` = 90% of
   the episodes, and the lower end of the 95% interval of its mean is above zero (some
   head clearly matters more to the task than to ordinary text: not too weak);
3. the most frequent oracle head is the oracle in at least ``MIN_MODAL_SHARE`` = 25% of
   the episodes (a bottleneck, not work spread over many heads: not too diffuse; MechRL
   dropped tasks that were too weak or too diffuse for the same reason).

**Oracle structure.** Per task, the histogram of per-episode oracle heads (under the
environments' default ablation and reference); across tasks, the distinct modal heads
and, per task, whether its modal head is among the 5 heads most often oracle on the
*other* tasks. Tasks whose modal head is not are the ones memorising other tasks'
heads cannot solve: the held-out candidates of a benchmark.

**Held-out choice** (:func:`choose_held_out`, for a benchmark): from the included tasks, the
``HELD_OUT`` = 3 tasks such that each one's modal oracle head is not among the ``OTHER_TOP``
heads most often oracle on the remaining (training) tasks pooled, and no two of them share a
modal head; among such sets, the one with held-out tasks from the most families, then the
highest summed modal share (the clearest bottlenecks), then alphabetical. Run it on the
*train* split so that nothing about the test episodes chooses the benchmark.

    circuit-gym suite --model toy --split test --episodes 48 --out docs/suite
    circuit-gym suite --model toy --split train --episodes 48 --out docs/suite   # held-out choice
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from circuit_gym.ablation import default_ablation, head_name
from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.tables import sweep_table
from circuit_gym.models.behaviour import task_metrics
from circuit_gym.progress import progress_enabled
from circuit_gym.tasks import get_task, list_tasks
from circuit_gym.tasks.reference import reference_batch

MIN_ACCURACY = 0.9
MIN_POSITIVE_SHARE = 0.9
MIN_MODAL_SHARE = 0.25
OTHER_TOP = 5
HELD_OUT = 3
# Tasks a model's suite leaves out by default, and why. On a model whose copying covers every
# token id, induction_seen (induction over a third of the ids run D was trained to copy) measures
# what induction measures: keeping both would let the held-out rule put the same behaviour on
# both sides of a benchmark's split.
REDUNDANT_TASKS = {
    "toy": {"induction_seen": "the model copies every token id, so this is induction on fewer ids"},
}


def default_tasks(model_name: str) -> list[str]:
    """The tasks a suite of ``model_name`` covers unless told otherwise: every registered task
    but the model's :data:`REDUNDANT_TASKS`."""
    return [t for t in list_tasks() if t not in REDUNDANT_TASKS.get(model_name, {})]


def oracle_heads(model, task: str, split: str, episodes: int, *, batch_size: int = 8, ablation: str | None = None,
                 reference: str | None = None, cache: SweepCache | None = None) -> tuple[list[int], list[float]]:  # fmt: skip
    """Per-episode oracle head and reward for the pool episodes ``0..episodes-1`` (as the envs build them)."""
    ablation = ablation or default_ablation(model.circuit_gym_info.name)
    ref = reference_batch(model, reference)
    t = get_task(task)
    heads, rewards = [], []
    for i in range(episodes):
        table = sweep_table(
            model, t, t.batch(model, split, batch_size, seed=i), ref, ablation=ablation, cache=cache
        )
        heads.append(table.oracle_head)
        rewards.append(table.oracle_reward)
    return heads, rewards


def gate(accuracy: float, rewards: Sequence[float], heads: Sequence[int]) -> dict:
    """The inclusion decision for one task, with every number it rests on."""
    from circuit_gym.stats import mean_ci95

    r = np.asarray(rewards, dtype=np.float64)
    mean, (lo, hi) = mean_ci95(r)
    modal, modal_count = Counter(heads).most_common(1)[0]
    checks = {
        "accuracy": accuracy >= MIN_ACCURACY,
        "oracle_positive_share": float((r > 0).mean()) >= MIN_POSITIVE_SHARE,
        "oracle_mean_ci_above_zero": bool(lo > 0),  # NaN (one episode) fails
        "modal_share": modal_count / len(heads) >= MIN_MODAL_SHARE,
    }
    return {"included": all(checks.values()), "checks": checks, "accuracy": accuracy,
            "oracle_positive_share": float((r > 0).mean()), "oracle_reward_mean": mean,
            "oracle_reward_ci95": [lo, hi], "modal_head": int(modal),
            "modal_share": modal_count / len(heads)}  # fmt: skip


def structure(histograms: dict[str, Counter]) -> dict:
    """Across tasks: distinct modal heads, and per task whether its modal head is among the
    ``OTHER_TOP`` heads most often oracle on the other tasks (pooled)."""
    modal = {t: h.most_common(1)[0][0] for t, h in histograms.items()}
    per_task = {}
    for t in histograms:
        others = sum((c for u, c in histograms.items() if u != t), Counter())
        top_others = [head for head, _ in others.most_common(OTHER_TOP)]
        per_task[t] = {"modal_head": int(modal[t]), "others_top": [int(x) for x in top_others],
                       "modal_not_in_others_top": modal[t] not in top_others}  # fmt: skip
    return {"distinct_modal_heads": len(set(modal.values())),
            "tasks_with_modal_head_outside_others_top": sorted(t for t, v in per_task.items()
                                                               if v["modal_not_in_others_top"]),
            "per_task": per_task}  # fmt: skip


def choose_held_out(histograms: dict[str, Counter], families: dict[str, str], n: int = HELD_OUT) -> dict:
    """The held-out set by the rule in the module docstring, with the reason for each task.

    ``histograms``: per included task, its oracle-head counts; ``families``: task -> family.
    Raises ``ValueError`` when no set of ``n`` tasks satisfies the rule.
    """
    modal = {t: h.most_common(1)[0][0] for t, h in histograms.items()}
    share = {t: h.most_common(1)[0][1] / sum(h.values()) for t, h in histograms.items()}
    valid = []
    for held in itertools.combinations(sorted(histograms), n):
        train = [t for t in histograms if t not in held]
        pooled = sum((histograms[t] for t in train), Counter())
        top_train = [head for head, _ in pooled.most_common(OTHER_TOP)]
        if train and len({modal[t] for t in held}) == n and all(modal[t] not in top_train for t in held):
            key = (-len({families[t] for t in held}), -sum(share[t] for t in held), held)
            valid.append((key, held, top_train))
    if not valid:
        raise ValueError(f"no {n} tasks have modal oracle heads outside the other tasks' top {OTHER_TOP}")
    _, held, top_train = min(valid)
    return {
        "held_out": list(held), "train": sorted(t for t in histograms if t not in held),
        "train_top_heads": [h if isinstance(h, str) else int(h) for h in top_train], "valid_sets": len(valid),
        "reasons": {t: f"modal oracle head {modal[t]} ({share[t]:.0%} of episodes) is not among the training "
                       f"tasks' {OTHER_TOP} most frequent oracle heads {top_train}" for t in held},
    }  # fmt: skip


def held_out_from_reports(train_report: dict, gate_report: dict) -> dict:
    """The held-out choice among the tasks ``gate_report`` includes (the inclusion gate, test
    split), from ``train_report``'s oracle histograms (train split): what a benchmark uses."""
    included = gate_report["included"]
    missing = [t for t in included if "oracle_histogram" not in train_report["tasks"].get(t, {})]
    if missing:
        raise ValueError(f"the train-split report has no oracle histogram for {missing}")
    histograms = {t: Counter(train_report["tasks"][t]["oracle_histogram"]) for t in included}
    return choose_held_out(histograms, {t: gate_report["tasks"][t]["family"] for t in included})


def suite_report(model, *, tasks: Sequence[str] | None = None, split: str = "test", episodes: int = 48,
                 accuracy_batches: int = 8, cache: SweepCache | None = None, progress: bool = True,
                 ablation: str | None = None, reference: str | None = None) -> dict:  # fmt: skip
    """Gate and oracle structure of every task (default: :func:`default_tasks` of the model), with
    the model's default ablation and reference batch unless ``ablation`` / ``reference`` name others."""
    tasks = list(tasks or default_tasks(model.circuit_gym_info.name))
    n_heads = model.circuit_gym_info.n_heads
    rows, histograms = {}, {}
    for name in tqdm(tasks, desc="suite (tasks)", disable=not progress_enabled(progress)):
        try:
            acc = task_metrics(model, name, split, n_batches=accuracy_batches)
        except ValueError as err:  # e.g. fillers that are not single tokens of this tokenizer
            rows[name] = {"included": False, "error": str(err)}
            continue
        heads, rewards = oracle_heads(
            model, name, split, episodes, ablation=ablation, reference=reference, cache=cache
        )
        histograms[name] = Counter(heads)
        rows[name] = {**gate(acc["accuracy"], rewards, heads), "family": get_task(name).family,
                      "metric": acc["metric"], "unit": acc["unit"],
                      "oracle_histogram": {head_name(h, n_heads): c for h, c in histograms[name].most_common()}}  # fmt: skip
        rows[name]["modal_head_name"] = head_name(rows[name]["modal_head"], n_heads)
    included = {t: histograms[t] for t, r in rows.items() if r.get("included")}
    info = model.circuit_gym_info
    return {"model": info.name, "weights_hash": info.weights_hash, "split": split, "episodes": episodes,
            "rule": {"min_accuracy": MIN_ACCURACY, "min_positive_share": MIN_POSITIVE_SHARE,
                     "min_modal_share": MIN_MODAL_SHARE, "others_top": OTHER_TOP},
            "tasks": rows, "included": sorted(included),
            "left_out": {t: why for t, why in REDUNDANT_TASKS.get(info.name, {}).items() if t not in rows},
            "families_included": sorted({rows[t]["family"] for t in included}),
            "structure_all": structure(histograms), "structure_included": structure(included) if included else {},
            "held_out_choice": _held_out_or_reason(included, rows)}  # fmt: skip


def _held_out_or_reason(included: dict[str, Counter], rows: dict) -> dict:
    try:
        return choose_held_out(included, {t: rows[t]["family"] for t in included})
    except ValueError as err:
        return {"error": str(err)}


def write_figure(report: dict, path: Path, n_layers: int, n_heads: int) -> Path:
    """The grid of per-task oracle-head histograms (layer x head heatmaps)."""
    from circuit_gym.plots import oracle_histograms

    counts = {t: r["oracle_histogram"] for t, r in report["tasks"].items() if "oracle_histogram" in r}
    return oracle_histograms(counts, n_layers, n_heads, path, included=set(report["included"]))


def write_report(report: dict, out: Path, n_layers: int, n_heads: int) -> list[Path]:
    """The report as JSON plus its figure, named by model and split."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"suite_{report['model']}_{report['split']}.json"
    path.write_text(json.dumps(report, indent=1))
    return [path, write_figure(report, out / f"oracle_heads_{report['model']}_{report['split']}.png", n_layers,
                               n_heads)]  # fmt: skip
