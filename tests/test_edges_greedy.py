"""Greedy edge search over a candidate set: each step's pick is the best addition, found
here by patching each candidate circuit one at a time; near-equal additions (float noise apart,
which another CPU's kernels can reorder) go to the lowest edge index (issue 58, item 5)."""

from __future__ import annotations

import numpy as np
import pytest

from circuit_gym.edges import EdgeCircuit, EdgeGraph, EdgeRanking
from circuit_gym.edges.attribution import eap_ig_ranking
from circuit_gym.edges.greedy import greedy_edge_ranking
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ties import NEAR_TIE_ATOL, best_up_to_ties, near_tie_tolerance
from circuit_gym.tasks import get_task


@pytest.mark.numerics
def test_greedy_picks_the_best_addition_at_every_step(tiny_model):
    """Up to ties: the pick's metric (patched alone here) is within the tie tolerance of the best
    option's, and no lower-indexed option ties with the best clearly (within half the tolerance, so
    noise between this loop and the stacked call cannot move it across). On this batch every single
    edge adds the same 1.3742062 logits +- 1e-6, an AVX-512 machine's argmax once took edge 349,
    this one's 344: the rule makes the order the candidates' index order on every CPU."""
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
        values = dict(zip(options, (float(patcher.metric([EdgeCircuit.of([*kept, e], patcher.graph)])[0])
                                    for e in options), strict=True))  # fmt: skip
        best = max(values.values())
        assert values[picked[step]] >= best - near_tie_tolerance(best)
        clear = [e for e, v in values.items() if v >= best - near_tie_tolerance(best) / 2]
        assert picked[step] <= min(clear)
        kept.append(picked[step])
    assert ranking.passes["circuits"] == 5 + 4 + 3 + 2 + 1
    below = [e for e in ranking.order()[k:].tolist()]
    assert below == [
        e for e in prior.order().tolist() if e not in kept
    ]  # the prior's order after the greedy edges


def test_a_near_tie_goes_to_the_lowest_key_and_a_real_gap_does_not():
    # hand-made: 5.0 and 5.0 - 3e-5 tie (5.0 + 1e-4 + 5e-5 wide), 5.0 - 1e-3 does not
    assert best_up_to_ties([5.0, 5.0 - 3e-5, 4.0], [9, 3, 1]) == 1
    assert best_up_to_ties([5.0 - 3e-5, 5.0, 4.0], [9, 3, 1]) == 1  # noise the other way: same pick
    assert best_up_to_ties([5.0, 5.0 - 1e-3], [9, 3]) == 0  # 1e-3 logits is a real difference
    assert best_up_to_ties([1.0, 1.0 + 2 * NEAR_TIE_ATOL], [0, 1]) == 1
    with pytest.raises(ValueError):
        best_up_to_ties([1.0, float("nan")], [0, 1])


class _AdditivePatcher:
    """A patcher stub: a circuit's metric is the sum of its edges' values plus noise of +-1e-6 that
    depends on ``noise_seed`` (another CPU's rounding)."""

    def __init__(self, graph: EdgeGraph, values: np.ndarray, noise_seed: int) -> None:
        self.graph, self.values = graph, values
        self.rng = np.random.default_rng(noise_seed)

    def masks_metric_rows(self, keep: np.ndarray) -> np.ndarray:
        exact = keep.astype(np.float64) @ self.values
        return (exact + self.rng.uniform(-1e-6, 1e-6, size=exact.shape))[:, None]


def test_greedy_takes_the_same_steps_under_any_float_noise():
    """Edges 40 and 7 add exactly 1.0 each, edge 12 adds 2.0, edge 3 adds 0.5: under noise that
    reorders the ties, greedy's order is 12, 7, 40, 3 every time (ties by edge index); the old
    argmax followed the noise."""
    graph = EdgeGraph(2, 4)
    values = np.zeros(graph.n_edges)
    values[[40, 7, 12, 3]] = [1.0, 1.0, 2.0, 0.5]
    prior = EdgeRanking.from_array(values + np.arange(graph.n_edges) * 1e-9, "prior", graph)
    orders = {
        tuple(greedy_edge_ranking(_AdditivePatcher(graph, values, s), prior, 4).order()[:4].tolist())  # type: ignore[arg-type]
        for s in range(20)
    }
    assert orders == {(12, 7, 40, 3)}
