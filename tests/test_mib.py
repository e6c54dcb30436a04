"""MIB circuit JSON: layout checked against MIB's published ioi-eap-ig.json (an excerpt), reading attacked."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from circuit_gym.circuits import Circuit, CircuitRunner, Ranking, faithfulness
from circuit_gym.circuits.mib import (
    circuit_from_mib,
    circuit_to_mib,
    edge_names,
    export_circuits,
    node_names,
    parse_mib_json,
    read_mib_json,
    write_mib_json,
)

FIXTURE = Path(__file__).parent / "fixtures" / "mib_ioi_eap_ig_excerpt.json"


@pytest.fixture(scope="module")
def published() -> dict:
    return json.loads(FIXTURE.read_text())


def _in_excerpt(edge: str) -> bool:
    target = edge.split("->")[1]
    return target.startswith("a0.") or target.startswith("a1.h0<") or target in ("m0", "logits")


def test_layout_matches_mibs_published_file(published):
    """GPT-2 small (12 x 12 with MLPs): node names and order as published; edges of the
    excerpt's targets in the published order; the full file's edge count."""
    cfg = published["cfg"]
    written = circuit_to_mib(Circuit.of([1, 2], 12, 12), d_model=cfg["d_model"], has_mlp=True)
    assert written["cfg"] == cfg
    assert list(written["nodes"]) == list(published["nodes"])
    assert [e for e in written["edges"] if _in_excerpt(e)] == list(published["edges"])
    assert len(written["edges"]) == published["_provenance"]["full_file_edges"] == 32491
    # every edge name of the full published file, in its order (hashed: the file is 2.4 MB)
    digest = hashlib.sha256("\n".join(written["edges"]).encode()).hexdigest()
    assert digest == published["_provenance"]["full_file_edge_names_sha256"]
    for name, node in published["nodes"].items():  # same field types where MIB writes them
        assert set(node) <= set(written["nodes"][name]) and isinstance(
            written["nodes"][name]["in_graph"], bool
        )
    assert set(next(iter(published["edges"].values()))) == set(next(iter(written["edges"].values())))


def test_published_edges_in_graph_only_between_nodes_in_graph(published):
    """What the writer assumes (a node circuit implies its edges) holds in MIB's own file."""
    nodes = published["nodes"]
    for edge, value in published["edges"].items():
        upstream, downstream = edge.split("->")[0], edge.split("->")[1].split("<")[0]
        if value["in_graph"]:
            assert nodes[upstream]["in_graph"] and nodes[downstream]["in_graph"]


def test_reads_the_published_circuit(published):
    circuit, ranking = circuit_from_mib(published, 12, 12)
    expected = {
        int(name[1:].split(".h")[0]) * 12 + int(name.split(".h")[1])
        for name, node in published["nodes"].items()
        if name.startswith("a") and node["in_graph"]
    }
    assert circuit.heads == expected and circuit.size == 67
    assert ranking is None  # MIB's file scores edges, not nodes


def test_round_trip_and_strict_json(tmp_path):
    ranking = Ranking.from_array([np.inf, -2.5, 0.0, 1.0] + [0.5] * 12, "acdc", 4, 4)
    path = write_mib_json(tmp_path / "c.json", ranking.top(3), ranking, d_model=128, has_mlp=False)
    text = path.read_text()
    assert "Infinity" not in text and "NaN" not in text
    data = json.loads(text)
    assert data["cfg"]["attn_only"] is True and not any(n.startswith("m") for n in data["nodes"])
    assert data["nodes"]["a0.h0"]["score"] is None  # +inf is not JSON
    assert len(data["edges"]) == len(edge_names(4, 4, has_mlp=False))
    circuit, back = read_mib_json(path, 4, 4)
    assert circuit == ranking.top(3) and back is None  # a non-finite score: no ranking
    finite = Ranking.from_array(np.arange(16.0) - 3, "eap_ig", 4, 4)
    circuit, back = read_mib_json(write_mib_json(tmp_path / "f.json", finite.top(5), finite, d_model=128,
                                                 has_mlp=False), 4, 4)  # fmt: skip
    assert circuit == finite.top(5) and back.scores == finite.scores


def test_export_circuits_and_score_a_circuit_read_back(tmp_path, tiny_model):
    from circuit_gym.tasks import get_task

    task = get_task("ioi")
    batch = task.batch(tiny_model, "test", 8, seed=0)
    ranking = Ranking.from_array(np.arange(16.0), "hand", 4, 4)
    (path,) = export_circuits(tiny_model, [ranking], tmp_path, size=5)
    circuit, _ = read_mib_json(path, 4, 4)
    assert circuit.heads == set(range(11, 16))
    runner = CircuitRunner.for_task(tiny_model, task, batch)
    m_empty, m_c = runner.metric([Circuit.empty(4, 4), circuit])
    assert np.isfinite(faithfulness(m_c, m_empty, runner.full_metric))


# ------------------------------------------------------------------ attacks on the reader
def _valid(n_layers=2, n_heads=2) -> dict:
    return circuit_to_mib(Circuit.of([0], n_layers, n_heads), d_model=8, has_mlp=True)


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"cfg": {"n_layers": NaN}}', "strict JSON"),
        ('{"cfg": {"n_layers": Infinity}}', "strict JSON"),
        ('{"cfg": {}, "cfg": {}}', "duplicate"),
        ("[1, 2]", "JSON object"),
    ],
)
def test_reader_rejects_non_strict_json(text, message):
    with pytest.raises(ValueError, match=message):
        parse_mib_json(text)


def test_reader_rejects_oversized_input(tmp_path):
    with pytest.raises(ValueError, match="limit"):
        parse_mib_json("{}" + " " * 100, max_bytes=50)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_valid()) + " " * 2000)
    with pytest.raises(ValueError, match="limit"):
        read_mib_json(path, max_bytes=1000)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["cfg"].update(n_heads=3), "n_heads = 3"),
        (lambda d: d["cfg"].update(n_layers=True), "positive integer"),
        (lambda d: d["cfg"].update(n_layers=10**9), "positive integer"),
        (lambda d: d["nodes"].update({"a0.h7": {"in_graph": True}}), "not a node"),
        (lambda d: d["nodes"].update({"a9.h0": {"in_graph": True}}), "not a node"),
        (lambda d: d["nodes"].update({"__import__('os')": {"in_graph": True}}), "not a node"),
        (lambda d: d["nodes"]["a0.h1"].update(in_graph="yes"), "boolean"),
        (lambda d: d["nodes"]["a0.h1"].update(score="1e3"), "number or null"),
        (lambda d: d["nodes"]["a0.h1"].update(score=[1]), "number or null"),
        (lambda d: d["nodes"].pop("a1.h1"), "no node"),
        (lambda d: d.update(nodes=[]), "'nodes' object"),
        (lambda d: d.pop("cfg"), "'cfg' object"),
    ],
)
def test_reader_rejects_malformed_circuits(edit, message):
    data = _valid()
    edit(data)
    with pytest.raises(ValueError, match=message):
        circuit_from_mib(data, 2, 2)


def test_reader_accepts_the_valid_baseline():
    circuit, ranking = circuit_from_mib(_valid(), 2, 2)
    assert circuit.heads == {0} and ranking is None
    assert node_names(2, 2, True)[-1] == "logits"
