"""The edge references, one registry, and their table on the zoo's held-out tasks and models.

Every reference takes an :class:`EdgePatcher` and returns an :class:`EdgeRanking` whose
``passes`` say what it cost (``forward`` / ``backward`` full passes, ``circuits`` patched
circuit runs); :func:`lm_passes` adds them up. GIM is a registered gradient rule
(:data:`circuit_gym.edges.attribution.GRADIENT_HOOKS`, ``gradient_ranking``).

    python -m circuit_gym.edges.references [--out docs/results/edges/references.json]

scores each reference's edge CPR (signed ranking) and CMD (absolute ranking) on the
benchmark's held-out tasks of its held-out models (``circuit_gym.benchmark``), one test
batch of eight prompts per (model, task) and seed, nothing chosen on them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from circuit_gym.edges.attribution import eap_ig_ranking, eap_ranking, gradient_ranking
from circuit_gym.edges.curve import edge_batch_scores
from circuit_gym.edges.greedy import greedy_edge_ranking
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking, random_edge_ranking

EdgeReference = Callable[[EdgePatcher], EdgeRanking]
GREEDY_CANDIDATES = 10  # greedy insertion over EAP-IG's top 10 edges: 55 circuits per episode

EDGE_REFERENCES: dict[str, EdgeReference] = {
    "eap": eap_ranking,
    "eap_ig": eap_ig_ranking,  # 5 steps
    "gim": lambda patcher: gradient_ranking(patcher, "gim"),  # EAP's pass, GIM's backward rules
    "random": lambda patcher: random_edge_ranking(patcher.graph, 0),
    "greedy_eap_ig": lambda patcher: greedy_edge_ranking(patcher, eap_ig_ranking(patcher), GREEDY_CANDIDATES),
}


def lm_passes(ranking: EdgeRanking) -> int:
    """Forward + backward passes + patched circuit runs (each counted as one pass)."""
    return int(sum(ranking.passes.get(key, 0) for key in ("forward", "backward", "circuits")))


def reference_table(models: Sequence[str], tasks: Sequence[str], seeds: Sequence[int] = (0,),
                    batch_size: int = 8, references: Sequence[str] = tuple(EDGE_REFERENCES)) -> dict:  # fmt: skip
    """Edge CPR / CMD and LM passes of each reference per (model, task, seed)."""
    from circuit_gym.benchmark import SPLIT
    from circuit_gym.models import load_model
    from circuit_gym.tasks import get_task

    rows = []
    for model_name in models:
        model = load_model(model_name)
        for task_name in tasks:
            task = get_task(task_name)
            for seed in seeds:
                patcher = EdgePatcher.for_task(
                    model, task, task.batch(model, SPLIT, batch_size, seed=int(seed))
                )
                for name in references:
                    ranking = EDGE_REFERENCES[name](patcher)
                    scores = edge_batch_scores(patcher, ranking)
                    rows.append({"model": model_name, "task": task_name, "seed": int(seed), "reference": name,
                                 "method": ranking.method, "cpr": scores["cpr"], "cmd": scores["cmd"],
                                 "lm_passes": lm_passes(ranking), "passes": dict(ranking.passes),
                                 "faithfulness": scores["curve"]["faithfulness"]})  # fmt: skip
                    print(json.dumps({k: v for k, v in rows[-1].items() if k != "faithfulness"}), flush=True)
    return {"split": SPLIT, "batch_size": batch_size, "seeds": list(seeds), "ablation": "model default (resample)",
            "greedy_candidates": GREEDY_CANDIDATES, "rows": rows}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    from circuit_gym.benchmark import HELD_OUT_MODELS, HELD_OUT_TASKS

    parser = argparse.ArgumentParser(
        description="edge references on the held-out tasks of the held-out models"
    )
    parser.add_argument("--out", default="docs/results/edges/references.json")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args(argv)
    # greedy is left out of the table: at MIB's sizes the smallest circuit has int(0.001 * 29,089) = 29
    # edges, so greedy changes a curve only with >= 30 candidates (>= 465 circuit runs per episode)
    table = reference_table(
        HELD_OUT_MODELS, HELD_OUT_TASKS, args.seeds, references=("eap", "eap_ig", "random")
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
