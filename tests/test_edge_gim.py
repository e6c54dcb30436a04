"""GIM at edge level (circuit_gym.edges.gim) against two independent computations: with the
rules off its gradients are the patcher's own (a different pass: fused kernels, no rule);
with the published rules a head's outgoing edges add up to the head level's GIM score of
that head, which runs the model through TransformerLens hooks (tests/test_gim.py checks it
against finite differences and hand-built self-repair)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from circuit_gym.ablation.gim import GIM_DEFAULT, GIM_OFF, gim_importance
from circuit_gym.edges.attribution import (
    _ig_inputs,
    _port_gradients,
    _ranking,
    eap_ranking,
    gradient_ranking,
)
from circuit_gym.edges.gim import gim_port_gradients
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking
from circuit_gym.tasks import get_task

# floats of a model's kernels, compared to tolerance: `make test` reruns them as another CPU
# rounds (ATEN_CPU_CAPABILITY=default, one thread; issue 58)
pytestmark = pytest.mark.numerics


@pytest.fixture(scope="module")
def patcher(tiny_model):
    task = get_task("ioi")
    return EdgePatcher.for_task(tiny_model, task, task.batch(tiny_model, "eval", 4, seed=3), "resample")


@pytest.mark.parametrize("steps", [1, 3])
def test_rules_off_give_the_patchers_gradients(patcher, steps):
    emb = patcher.clean_input if steps == 1 else _ig_inputs(patcher, steps)
    ours = gim_port_gradients(patcher, emb, steps, GIM_OFF)
    theirs = _port_gradients(patcher, emb, steps)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4 * float(b.abs().max()))
    # the published rules change them (the rules sit inside the pass)
    gim = gim_port_gradients(patcher, emb, steps, GIM_DEFAULT)
    assert max(float((a - b).abs().max()) for a, b in zip(gim, theirs, strict=True)) > 1e-3


def _per_head(ranking: EdgeRanking, n_layers: int, n_heads: int) -> np.ndarray:
    """Sum of each head's outgoing edge scores, flat head ids."""
    sums = np.zeros(n_layers * n_heads)
    for index, name in enumerate(ranking.graph.names):
        sender = name.split("->")[0]
        if sender.startswith("a"):
            layer, head = (int(p[1:]) for p in sender.split("."))
            sums[layer * n_heads + head] += ranking.scores[index]
    return sums


@pytest.mark.parametrize("rules", ["off", "published"])
def test_a_heads_outgoing_edges_add_up_to_its_head_level_gim_score(patcher, rules):
    graph = patcher.graph
    chosen = GIM_OFF if rules == "off" else GIM_DEFAULT
    edges = _ranking(patcher, gim_port_gradients(patcher, patcher.clean_input, 1, chosen), "x", copies=1)
    heads = gim_importance(patcher.engine, chosen)
    summed = _per_head(edges, graph.n_layers, graph.n_heads)
    assert np.abs(heads).max() > 1e-2
    np.testing.assert_allclose(summed, heads, rtol=2e-3, atol=2e-3 * np.abs(heads).max())
    if rules == "published":  # and that differs from plain EAP's sums: the test can tell them apart
        plain = _per_head(eap_ranking(patcher), graph.n_layers, graph.n_heads)
        assert np.abs(plain - heads).max() > 0.05 * np.abs(heads).max()


def test_registered_gim_ranking(patcher):
    ranking = gradient_ranking(patcher, "gim")
    direct = _ranking(patcher, gim_port_gradients(patcher, patcher.clean_input, 1), "gim")
    np.testing.assert_array_equal(ranking.scores, direct.scores)
    assert ranking.method == "gim" and ranking.passes == eap_ranking(patcher).passes
    assert gradient_ranking(patcher, "gim", 2).method == "gim_2"
    with pytest.raises(KeyError):
        gradient_ranking(patcher, "nope")
