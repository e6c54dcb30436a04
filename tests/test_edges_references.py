"""The edge references' registry: every reference ranks the model's edges and says what it cost."""

from __future__ import annotations

import numpy as np

from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.references import EDGE_REFERENCES, GREEDY_CANDIDATES, lm_passes
from circuit_gym.tasks import get_task


def test_every_reference_ranks_every_edge_and_counts_its_passes(tiny_model):
    task = get_task("ioi")
    patcher = EdgePatcher.for_task(tiny_model, task, task.batch(tiny_model, "eval", 4, seed=6))
    expected = {"eap": 4, "eap_ig": 4, "gim": 4, "random": 0,
                "greedy_eap_ig": 4 + GREEDY_CANDIDATES * (GREEDY_CANDIDATES + 1) // 2}  # fmt: skip
    for name, reference in EDGE_REFERENCES.items():
        ranking = reference(patcher)
        assert ranking.graph == patcher.graph and np.isfinite(ranking.scores).all()
        assert lm_passes(ranking) == expected[name], name
