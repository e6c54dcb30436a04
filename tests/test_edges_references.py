"""The edge references' registry: every reference ranks the model's edges and says what it cost."""

from __future__ import annotations

import numpy as np
import pytest

from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.references import (
    ACDC_CANDIDATES,
    EDGE_REFERENCES,
    GREEDY_CANDIDATES,
    lm_passes,
    targets,
)
from circuit_gym.tasks import get_task


def test_every_reference_ranks_every_edge_and_counts_its_passes(tiny_model):
    task = get_task("ioi")
    patcher = EdgePatcher.for_task(tiny_model, task, task.batch(tiny_model, "eval", 4, seed=6))
    # per copy of the batch: clean + counterfactual, then 1 (EAP, GIM) or 5 (EAP-IG's steps) forward and backward
    expected = {"eap": 2 + 2, "eap_ig": 2 + 2 * 5, "gim": 2 + 2, "random": 0,
                "greedy_eap_ig": 2 + 2 * 5 + GREEDY_CANDIDATES * (GREEDY_CANDIDATES + 1) // 2}  # fmt: skip
    for name, reference in EDGE_REFERENCES.items():
        ranking = reference(patcher)
        assert ranking.graph == patcher.graph and np.isfinite(ranking.scores).all()
        if name == "acdc_eap_ig":  # EAP-IG's passes, m(empty), m(start), at least one run per candidate
            assert lm_passes(ranking) >= 12 + 2 + ACDC_CANDIDATES
        else:
            assert lm_passes(ranking) == expected[name], name
    # the edge environment's setup spends the same passes in the same unit: EAP and EAP-IG sharing the
    # clean and counterfactual passes, and the empty circuit's
    from circuit_gym.envs.edge_building import setup_passes

    assert setup_passes(patcher.ablation) == expected["eap"] + expected["eap_ig"] - 2 + 1


def test_targets_read_the_best_cheap_and_costly_reference_per_cell():
    def row(task, reference, cpr, passes=4):
        return {
            "model": "m",
            "task": task,
            "seed": 0,
            "reference": reference,
            "cpr": cpr,
            "lm_passes": passes,
        }

    table = {"rows": [row("a", "eap", 1.0), row("a", "eap_ig", 1.2), row("a", "gim", 1.1), row("a", "random", 3.0),
                      row("a", "acdc_eap_ig", 1.25, 300), row("b", "eap", 0.5), row("b", "eap_ig", 0.52),
                      row("b", "gim", 0.51), row("b", "acdc_eap_ig", 0.7, 500)]}  # fmt: skip
    out = targets(table)
    gaps = {c["task"]: c["gap"] for c in out["cells"]}
    assert gaps["a"] == pytest.approx(0.05) and gaps["b"] == pytest.approx(0.18)  # random never counts
    assert out["max_gap"] == pytest.approx(0.18) and out["gap_met"]
    assert out["max_spread"] == pytest.approx(0.2) and out["spread_met"]
    assert out["lm_passes_range"]["acdc_eap_ig"] == [300, 500]
