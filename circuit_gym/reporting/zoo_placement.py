"""How far the zoo's circuits move between models: modal oracle heads and top-5 overlap
(docs/zoo.md; ``scripts/zoo_placement.py`` writes ``docs/results/zoo_placement.json``).

Reads each model's ``card_metrics.json`` (written by ``scripts/model_card.py``): the modal
oracle head of every task on the test split (inclusion gate), and the top-5 heads by mean
contrastive reward (eval split). Per task: the modal head of every model where the task passes
the gate, how many distinct modal heads there are, and the mean pairwise overlap of the top-5
heads; per model, how many gated tasks have their modal head in layers >= ``deep_layer``; and
issue 35's placement targets on the zoo.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence

from circuit_gym.embedded import EMBEDDED
from circuit_gym.heads import parse_head_name
from circuit_gym.models.loading import embedded_dir
from circuit_gym.models.zoo_recipe import ZOO


def default_models() -> list[str]:
    """toy and every zoo member shipped with the package."""
    return ["toy"] + [m.name for m in ZOO if m.name in EMBEDDED]


def load_cards(names: Sequence[str]) -> dict[str, dict]:
    """Each model's ``card_metrics.json``; a clear error where a card was never measured."""
    cards = {}
    for name in names:
        path = embedded_dir(name) / "card_metrics.json"
        if not path.exists():
            raise FileNotFoundError(f"{name}: no {path}; run scripts/model_card.py --model {name} first")
        cards[name] = json.loads(path.read_text())
    return cards


def placement(cards: dict[str, dict], deep_layer: int = 4) -> dict:
    """Per task and per model: modal heads, distinct counts, top-5 overlap, deep-task counts."""
    tasks = sorted({t for c in cards.values() for t in c["suite"]["tasks"]})
    per_task = {}
    for task in tasks:
        modal = {m: c["suite"]["tasks"][task]["modal_head_name"] for m, c in cards.items()
                 if c["suite"]["tasks"].get(task, {}).get("included")}  # fmt: skip
        tops = {
            m: {h for h, _ in c["top_heads"][task]}
            for m, c in cards.items()
            if task in c.get("top_heads", {})
        }
        overlaps = [len(tops[a] & tops[b]) for a, b in itertools.combinations(sorted(tops), 2)]
        per_task[task] = {
            "modal_head": modal,
            "distinct_modal_heads": len(set(modal.values())),
            "mean_top5_overlap": round(sum(overlaps) / len(overlaps), 2) if overlaps else None,
        }
    per_model = {}
    for m, c in cards.items():
        gated = [t for t, r in c["suite"]["tasks"].items() if r.get("included")]
        deep = [
            t for t in gated if parse_head_name(c["suite"]["tasks"][t]["modal_head_name"])[0] >= deep_layer
        ]
        per_model[m] = {"gated_tasks": sorted(gated), "deep_tasks": sorted(deep), "n_deep": len(deep)}
    return {"deep_layer": deep_layer, "tasks": per_task, "models": per_model}


def targets(report: dict, zoo: list[str]) -> dict:
    """Issue 35's targets over ``zoo``: every gated task's modal head differs between at least 3
    models, and at least 2 members have 3 or more gated tasks with deep modal heads."""
    spread = {t: len({h for m, h in r["modal_head"].items() if m in zoo}) for t, r in report["tasks"].items()}
    gated_somewhere = {t: n for t, n in spread.items() if n > 0}
    deep_members = [m for m in zoo if report["models"][m]["n_deep"] >= 3]
    return {
        "distinct_modal_heads_in_zoo": gated_somewhere,
        "every_gated_task_has_3_distinct_modal_heads": bool(gated_somewhere)
        and all(n >= 3 for n in gated_somewhere.values()),
        "members_with_3_deep_tasks": deep_members,
        "at_least_2_members_with_3_deep_tasks": len(deep_members) >= 2,
    }


def placement_report(names: Sequence[str], deep_layer: int = 4) -> dict:
    """:func:`placement` of the models' cards, with :func:`targets` over the zoo members among them."""
    report = placement(load_cards(names), deep_layer)
    report["targets"] = targets(report, [n for n in names if n.startswith("zoo")])
    return report


def report_lines(report: dict) -> list[str]:
    """What the script prints: a line per task and per model."""
    lines = []
    for task, r in report["tasks"].items():
        heads = ", ".join(f"{m} {h}" for m, h in r["modal_head"].items()) or "gated nowhere"
        lines.append(
            f"{task:14s} distinct {r['distinct_modal_heads']}  top-5 overlap {r['mean_top5_overlap']}  {heads}"
        )
    for m, r in report["models"].items():
        lines.append(
            f"{m}: {r['n_deep']} of {len(r['gated_tasks'])} gated tasks with modal head in layers >= "
            f"{report['deep_layer']}"
        )
    return lines
