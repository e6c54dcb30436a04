"""How far the zoo's circuits move between models: modal oracle heads and top-5 overlap.

    python scripts/zoo_placement.py                       # toy + every trained zoo member
    python scripts/zoo_placement.py --models toy toy_d    # any embedded models with a card

Reads each model's ``card_metrics.json`` (written by ``scripts/model_card.py``): the modal
oracle head of every task on the test split (inclusion gate), and the top-5 heads by mean
contrastive reward (eval split). Prints and writes (``--out``, JSON) per task the modal head
of every model where the task passes the gate, how many distinct modal heads there are, and
the mean pairwise overlap of the top-5 heads; per model, how many gated tasks have their
modal head in layers >= ``--deep-layer``. Checks issue 35's placement targets on the zoo.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym.embedded import EMBEDDED  # noqa: E402
from circuit_gym.models.loading import embedded_dir  # noqa: E402
from circuit_gym.models.zoo_recipe import ZOO  # noqa: E402


def layer_of(head_label: str) -> int:
    """The layer of a head written ``L.H``."""
    return int(head_label.split(".")[0])


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
        deep = [t for t in gated if layer_of(c["suite"]["tasks"][t]["modal_head_name"]) >= deep_layer]
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


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="*", default=None, help="default: toy and every zoo member with a card")
    p.add_argument("--deep-layer", type=int, default=4)
    p.add_argument("--out", type=Path, default=None, help="write the report here (JSON)")
    args = p.parse_args(argv)
    names = args.models or ["toy"] + [m.name for m in ZOO if m.name in EMBEDDED]
    cards = {}
    for name in names:
        path = embedded_dir(name) / "card_metrics.json"
        if not path.exists():
            raise SystemExit(f"{name}: no {path}; run scripts/model_card.py --model {name} first")
        cards[name] = json.loads(path.read_text())
    report = placement(cards, args.deep_layer)
    report["targets"] = targets(report, [n for n in names if n.startswith("zoo")])
    for task, r in report["tasks"].items():
        heads = ", ".join(f"{m} {h}" for m, h in r["modal_head"].items()) or "gated nowhere"
        print(
            f"{task:14s} distinct {r['distinct_modal_heads']}  top-5 overlap {r['mean_top5_overlap']}  {heads}"
        )
    for m, r in report["models"].items():
        print(
            f"{m}: {r['n_deep']} of {len(r['gated_tasks'])} gated tasks with modal head in layers >= {args.deep_layer}"
        )
    print(json.dumps(report["targets"], indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
