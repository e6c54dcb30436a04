"""The edge graph: MIB's names, MIB's order, and the counts derived here independently."""

from __future__ import annotations

import numpy as np
import pytest

from circuit_gym.circuits.mib import edge_names as mib_head_level_edge_names
from circuit_gym.edges import EdgeCircuit, EdgeGraph, EdgeRanking, edge_name, parse_edge_name


def _count_by_hand(n_layers: int, n_heads: int, has_mlp: bool) -> dict[str, int]:
    """Counted from the definition, pair by pair: (sender layer, receiver layer) with the sender earlier."""
    ports = 3 * n_heads  # q, k, v of every head of a layer
    input_to_ports = n_layers * ports
    head_to_ports = sum(n_heads * ports for recv in range(n_layers) for send in range(recv))
    mlp_to_ports = sum(ports for recv in range(n_layers) for send in range(recv)) if has_mlp else 0
    # an MLP reads input, every head of its own and earlier layers, every earlier MLP
    to_mlp = sum(1 + (recv + 1) * n_heads + recv for recv in range(n_layers)) if has_mlp else 0
    to_logits = 1 + n_layers * n_heads + (n_layers if has_mlp else 0)
    total = input_to_ports + head_to_ports + mlp_to_ports + to_mlp + to_logits
    return {"input->port": input_to_ports, "head->port": head_to_ports, "mlp->port": mlp_to_ports,
            "->mlp": to_mlp, "->logits": to_logits, "total": total}  # fmt: skip


def test_attention_only_12x12_counts_are_the_ones_the_field_states():
    counts = EdgeGraph(12, 12).counts
    assert counts == _count_by_hand(12, 12, False)
    assert (counts["input->port"], counts["head->port"], counts["->logits"]) == (432, 28_512, 145)
    assert counts["total"] == 29_089 == len(EdgeGraph(12, 12).names)


def test_gpt2_shape_has_mibs_edge_count():
    graph = EdgeGraph(12, 12, has_mlp=True)
    assert graph.counts == _count_by_hand(12, 12, True)
    assert graph.n_edges == 32_491  # MIB's GPT-2 small edge count


@pytest.mark.parametrize("shape", [(12, 12, False), (12, 12, True), (3, 4, False), (2, 3, True)])
def test_names_and_order_are_mibs(shape):
    """The head-level exporter's edge list was checked against MIB's published GPT-2 file."""
    graph = EdgeGraph(*shape)
    assert list(graph.names) == [name for name, _ in mib_head_level_edge_names(*shape)]
    assert len(set(graph.names)) == graph.n_edges
    step = max(1, graph.n_edges // 500)
    assert all(graph.edge_index(graph.names[i]) == i for i in range(0, graph.n_edges, step))


def test_naming_function_and_parser():
    assert edge_name("a0.h1", "a2.h3", "q") == "a0.h1->a2.h3<q>"
    assert edge_name("input", "a0.h0", "k") == "input->a0.h0<k>"
    assert edge_name("a11.h3", "logits") == "a11.h3->logits"
    assert parse_edge_name("a0.h1->a2.h3<q>") == ("a0.h1", "a2.h3", "q")
    for bad in ("a0.h1->a2.h3", "a0.h1->logits<q>", "x->logits", "a0.h1-a2.h3<q>", "a0.h1->a2.h3<z>"):
        with pytest.raises(ValueError):
            parse_edge_name(bad)


def test_graph_refuses_edges_it_lacks():
    graph = EdgeGraph(4, 4)
    for name in ("a2.h0->a1.h0<q>", "a0.h0->a0.h1<v>", "a0.h0->m0", "a4.h0->logits", "a0.h4->logits"):
        with pytest.raises(ValueError):
            graph.edge_index(name)
    assert graph.edge_index("a0.h0->a1.h0<q>") >= 0


def test_layer_blocks_address_the_edges_patching_reads():
    graph = EdgeGraph(3, 2)
    for block in graph.blocks:
        names = graph.names[block.head_start : block.head_start + block.senders * 2 * 3]
        grid = np.array(names).reshape(block.senders, 2, 3)  # [sender, head, port]
        assert grid[-1, 1, 2] == f"{graph.senders[block.senders - 1]}->a{block.layer}.h1<v>"
    assert graph.names[graph.logits_start] == "input->logits"


def test_circuit_and_ranking_are_frozen_and_pure():
    graph = EdgeGraph(2, 2)
    scores = np.arange(graph.n_edges, dtype=float)
    ranking = EdgeRanking.from_array(scores, "test", graph)
    scores[:] = 0  # the caller's array is theirs
    assert ranking.top(3).edges == frozenset({graph.n_edges - 1, graph.n_edges - 2, graph.n_edges - 3})
    with pytest.raises(ValueError):
        ranking.scores[0] = 1.0
    circuit = EdgeCircuit.from_names(["input->logits"], graph)
    circuit.mask[:] = True
    assert circuit.size == 1 and circuit.names() == ["input->logits"]
    with pytest.raises(ValueError):
        EdgeRanking.from_array(np.full(graph.n_edges, np.nan), "nan", graph)
