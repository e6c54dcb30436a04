"""The edge references, one registry, and their table on the zoo's held-out tasks and models.

Every reference takes an :class:`EdgePatcher` and returns an :class:`EdgeRanking` whose
``passes`` say what it cost (``forward`` / ``backward`` full passes, ``circuits`` patched
circuit runs); :func:`lm_passes` adds them up. GIM is a registered gradient rule
(:data:`circuit_gym.edges.attribution.GRADIENT_HOOKS`, ``gradient_ranking``).

    python -m circuit_gym.edges.references [--out docs/results/edges/references.json]

scores each reference's edge CPR (signed ranking) and CMD (absolute ranking) on the transfer
benchmark's held-out tasks (``TRANSFER_HELD_OUT_TASKS``: the board in force) of its held-out
models (``HELD_OUT_MODELS``), with its ablation (``TRANSFER_ABLATION``), one test batch of
eight prompts per (model, task) and seed, nothing chosen on them. The cheap references run on
every cell first, then the costly ones; the file is rewritten after every row, so a run cut
short keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from circuit_gym.edges.acdc import edge_acdc
from circuit_gym.edges.attribution import eap_ig_ranking, eap_ranking, gradient_ranking
from circuit_gym.edges.curve import edge_batch_scores
from circuit_gym.edges.greedy import greedy_edge_ranking
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking, random_edge_ranking

EdgeReference = Callable[[EdgePatcher], EdgeRanking]
GREEDY_CANDIDATES = 10  # greedy insertion over EAP-IG's top 10 edges: 55 circuits per episode
# ACDC over EAP-IG's top 145 edges, int(0.005 * 29,089): it orders the first three of MIB's sizes
# on a 12 x 12 model; every edge beyond them is EAP-IG's order (MechRL's 3,000 cost too much here)
ACDC_CANDIDATES = 145

EDGE_REFERENCES: dict[str, EdgeReference] = {
    "eap": eap_ranking,
    "eap_ig": eap_ig_ranking,  # 5 steps
    "gim": lambda patcher: gradient_ranking(patcher, "gim"),  # EAP's pass, GIM's backward rules
    "random": lambda patcher: random_edge_ranking(patcher.graph, 0),
    "greedy_eap_ig": lambda patcher: greedy_edge_ranking(patcher, eap_ig_ranking(patcher), GREEDY_CANDIDATES),
    "acdc_eap_ig": lambda patcher: edge_acdc(patcher, eap_ig_ranking(patcher), ACDC_CANDIDATES).ranking,
}

# Protocol 2 of the edge track (issue 57; circuit_gym/edges/entry_ranking.py): a reference is an
# entry like any other. It is given the episode's candidate edges (the environment's K rows) and
# its scores of those rows are all that count; its circuit is its top ``budget`` candidates.
CandidateReference = Callable[[EdgePatcher, np.ndarray], EdgeRanking]


def reversed_ranking(ranking: EdgeRanking) -> EdgeRanking:
    """``ranking`` with every sign flipped (same passes): a control that must rank below EAP."""
    return EdgeRanking.from_array(
        -ranking.scores, f"{ranking.method}_reversed", ranking.graph, ranking.passes
    )


CANDIDATE_REFERENCES: dict[str, CandidateReference] = {
    "eap": lambda patcher, candidates: eap_ranking(patcher),
    "eap_ig": lambda patcher, candidates: eap_ig_ranking(patcher),
    "gim": lambda patcher, candidates: gradient_ranking(patcher, "gim"),
    "random": lambda patcher, candidates: random_edge_ranking(patcher.graph, 0),
    "eap_ig_reversed": lambda patcher, candidates: reversed_ranking(eap_ig_ranking(patcher)),
    # a control that ranks nothing (every score 0): its order is the episode's fixed random
    # order, so it must score like ``random``; under protocol 1 it scored like EAP-IG (issue 57)
    "constant": lambda patcher, candidates: EdgeRanking.from_array(
        np.zeros(patcher.graph.n_edges), "constant", patcher.graph, {"forward": 0, "backward": 0}
    ),
    # ACDC's whole threshold sweep over every candidate (K = 512 on the zoo: every size the ranking
    # metric reads, up to 290 edges), EAP-IG's order only among edges one threshold level holds.
    # Greedy is not a protocol-2 reference: reaching 290 of 512 candidates is 106,575 circuit runs
    # an episode (sum of 512 - i for i < 290); over 10 it ordered none of the sizes the metric reads.
    "acdc_eap_ig": lambda patcher, candidates: (
        edge_acdc(patcher, eap_ig_ranking(patcher), candidates=candidates).ranking
    ),  # fmt: skip
}


def lm_passes(ranking: EdgeRanking) -> int:
    """Forward + backward passes + patched circuit runs (each counted as one pass)."""
    return int(sum(ranking.passes.get(key, 0) for key in ("forward", "backward", "circuits")))


def reference_table(models: Sequence[str], tasks: Sequence[str], seeds: Sequence[int] = (0,),
                    batch_size: int = 8, references: Sequence[str] = tuple(EDGE_REFERENCES),
                    ablation: str | None = None, out: Path | None = None) -> dict:  # fmt: skip
    """Edge CPR / CMD and LM passes of each reference per (model, task, seed); references in
    the outer loop (the order given), so the first ones cover every cell before the next
    starts. With ``out``, the table is written after every row."""
    import time

    from circuit_gym.benchmark import SPLIT
    from circuit_gym.models import load_model
    from circuit_gym.tasks import get_task

    rows: list[dict] = []
    table: dict = {"split": SPLIT, "batch_size": batch_size, "seeds": list(seeds), "ablation": ablation or "model default",
             "greedy_candidates": GREEDY_CANDIDATES, "acdc_candidates": ACDC_CANDIDATES, "rows": rows}  # fmt: skip
    patchers: dict[tuple[str, str, int], EdgePatcher] = {}
    for name in references:
        for model_name in models:
            model = load_model(model_name)
            for task_name in tasks:
                task = get_task(task_name)
                for seed in seeds:
                    key = (model_name, task_name, int(seed))
                    if key not in patchers:
                        batch = task.batch(model, SPLIT, batch_size, seed=int(seed))
                        patchers[key] = EdgePatcher.for_task(model, task, batch, ablation)
                    patcher = patchers[key]
                    began = time.perf_counter()
                    ranking = EDGE_REFERENCES[name](patcher)
                    seconds = time.perf_counter() - began
                    scores = edge_batch_scores(patcher, ranking)
                    rows.append({"model": model_name, "task": task_name, "seed": int(seed), "reference": name,
                                          "method": ranking.method, "cpr": scores["cpr"], "cmd": scores["cmd"],
                                          "lm_passes": lm_passes(ranking), "passes": dict(ranking.passes),
                                          "seconds": round(seconds, 1), "faithfulness": scores["curve"]["faithfulness"],
                                          "faithfulness_absolute": scores["curve_absolute"]["faithfulness"]})  # fmt: skip
                    row = {k: v for k, v in rows[-1].items() if not k.startswith("faithfulness")}
                    print(json.dumps(row), flush=True)
                    table["targets"] = targets(table)
                    if out is not None:
                        out.write_text(json.dumps(table, indent=1) + "\n")
    return table


CHEAP = ("eap", "eap_ig", "gim")  # at most 50 LM passes, published default settings
COSTLY = ("acdc_eap_ig", "greedy_eap_ig")  # any cost


def targets(table: dict) -> dict:
    """Issue 42's two targets per (model, task, seed) and over all: ``gap`` = the best costly
    reference's CPR minus the best cheap one's (met when the largest gap is >= 0.1), ``spread``
    = the largest minus the smallest cheap CPR (met when the largest spread is >= 0.05)."""
    cells: dict[tuple, dict[str, float]] = {}
    for row in table["rows"]:
        cells.setdefault((row["model"], row["task"], row["seed"]), {})[row["reference"]] = row["cpr"]
    out = []
    for (model, task, seed), cpr in cells.items():
        cheap = [cpr[r] for r in CHEAP if r in cpr]
        costly = [cpr[r] for r in COSTLY if r in cpr]
        out.append({"model": model, "task": task, "seed": seed,
                    "best_cheap": max(cheap) if cheap else None, "best_costly": max(costly) if costly else None,
                    "gap": max(costly) - max(cheap) if cheap and costly else None,
                    "spread": max(cheap) - min(cheap) if len(cheap) > 1 else None})  # fmt: skip
    passes: dict[str, list[int]] = {}
    for row in table["rows"]:
        low, high = passes.get(row["reference"], [row["lm_passes"]] * 2)
        passes[row["reference"]] = [min(low, row["lm_passes"]), max(high, row["lm_passes"])]
    gaps = [c["gap"] for c in out if c["gap"] is not None]
    spreads = [c["spread"] for c in out if c["spread"] is not None]
    return {"cells": out, "lm_passes_range": passes, "max_gap": max(gaps) if gaps else None, "max_spread": max(spreads) if spreads else None,
            "gap_met": bool(gaps) and max(gaps) >= 0.1, "spread_met": bool(spreads) and max(spreads) >= 0.05}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    from circuit_gym.benchmark import HELD_OUT_MODELS, TRANSFER_ABLATION, TRANSFER_HELD_OUT_TASKS

    parser = argparse.ArgumentParser(
        description="edge references on the held-out tasks of the held-out models"
    )
    parser.add_argument("--out", default="docs/results/edges/references.json")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--references", nargs="+", default=["eap", "eap_ig", "gim", "random", "acdc_eap_ig"],
                        choices=sorted(EDGE_REFERENCES))  # fmt: skip
    args = parser.parse_args(argv)
    # greedy is left out by default: at MIB's sizes the smallest circuit has int(0.001 * 29,089) = 29
    # edges, so greedy changes a curve only with >= 30 candidates (>= 465 circuit runs per episode)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    reference_table(HELD_OUT_MODELS, TRANSFER_HELD_OUT_TASKS, args.seeds, references=args.references,
                    ablation=TRANSFER_ABLATION, out=out)  # fmt: skip


if __name__ == "__main__":
    main()
