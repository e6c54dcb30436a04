"""Greedy edge search over a candidate set: each step's pick is the best addition, found
here by patching each candidate circuit one at a time."""

from __future__ import annotations

import numpy as np

from circuit_gym.edges import EdgeCircuit
from circuit_gym.edges.attribution import eap_ig_ranking
from circuit_gym.edges.greedy import greedy_edge_ranking
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.tasks import get_task


def test_greedy_picks_the_best_addition_at_every_step(tiny_model):
    task = get_task("ioi")
    patcher = EdgePatcher.for_task(tiny_model, task, task.batch(tiny_model, "eval", 4, seed=4))
    prior = eap_ig_ranking(patcher)
    k = 5
    ranking = greedy_edge_ranking(patcher, prior, k)
    picked = ranking.order()[:k].tolist()
    assert set(picked) == set(prior.candidates(k).tolist())
    kept: list[int] = []
    for step in range(k):
        options = [e for e in prior.candidates(k).tolist() if e not in kept]
        values = [patcher.metric([EdgeCircuit.of([*kept, e], patcher.graph)])[0] for e in options]
        assert picked[step] == options[int(np.argmax(values))]
        kept.append(picked[step])
    assert ranking.passes["circuits"] == 5 + 4 + 3 + 2 + 1
    below = [e for e in ranking.order()[k:].tolist()]
    assert below == [
        e for e in prior.order().tolist() if e not in kept
    ]  # the prior's order after the greedy edges
