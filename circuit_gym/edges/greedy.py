"""Greedy edge search restricted to a candidate set (a reference of any cost).

Exact edge patching of every edge of a 12 x 12 model is 29,089 circuits per step, so the
search runs over ``candidates`` only (e.g. the top K edges of an EAP-IG ranking, as
MechRL's agent acts on the top 3,000): starting from the empty circuit, each step adds the
candidate whose addition gives the highest metric, every remaining candidate tried in one
stacked :meth:`EdgePatcher.metric` call; additions whose metrics tie up to float noise
(:func:`~circuit_gym.edges.ties.best_up_to_ties`: within 1e-4 logits) go to the lowest edge
index, so every CPU takes the same step. The ranking scores the candidates by the step that
added them (earlier = higher), ahead of every other edge by signed and by absolute score,
and every other edge keeps the prior's score (its orders below them); CPR of that ranking is the greedy circuit's curve up to ``len(candidates)``
edges and the prior's beyond. Cost: ``K + (K - 1) + ... `` circuits for ``K`` candidates
(``passes["circuits"]``), on top of the prior ranking's passes.
"""

from __future__ import annotations

import numpy as np

from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking
from circuit_gym.edges.ties import best_up_to_ties


def greedy_edge_ranking(patcher: EdgePatcher, prior: EdgeRanking, k: int = 30) -> EdgeRanking:
    """Greedy insertion over the ``k`` best edges of ``prior`` (by signed score)."""
    if prior.graph != patcher.graph:
        raise ValueError("the prior ranking is of another graph")
    candidates = prior.candidates(int(k)).tolist()
    n_edges = patcher.graph.n_edges
    keep = np.zeros(n_edges, dtype=bool)
    order, tried = [], 0
    remaining = list(candidates)
    while remaining:
        masks = np.repeat(keep[None], len(remaining), axis=0)
        masks[np.arange(len(remaining)), remaining] = True
        metrics = patcher.masks_metric_rows(masks).mean(1)
        tried += len(remaining)
        best = remaining[best_up_to_ties(metrics, remaining)]  # near-ties: the lowest edge index
        keep[best] = True
        order.append(best)
        remaining.remove(best)
    # the greedy edges above every other edge, by signed and by absolute score alike; the
    # others keep the prior's scores (so its signed and absolute orders below them)
    scores = prior.scores.copy()
    finite = np.abs(scores[np.isfinite(scores)])
    top = float(finite.max()) if finite.size else 0.0
    scores[order] = top + len(order) - np.arange(len(order), dtype=np.float64)
    passes = {**prior.passes, "circuits": tried}
    return EdgeRanking.from_array(scores, f"greedy_{prior.method}_{len(candidates)}", patcher.graph, passes)
