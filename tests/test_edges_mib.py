"""MIB's circuit files at edge level: a file written here by hand (not by the exporter) is
scored; export then import gives the same circuit, scores and faithfulness; names the
model's graph lacks are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from test_edges_patching import hook_patched_metric

from circuit_gym.edges import EdgeCircuit, EdgeGraph, EdgeRanking
from circuit_gym.edges.attribution import eap_ig_ranking
from circuit_gym.edges.mib_files import read_edge_mib_json, score_circuit_file, write_edge_mib_json
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task


def _hand_written(n_layers: int, n_heads: int, d_model: int) -> tuple[dict, set[str]]:
    """A MIB file by hand: the direct paths (input and every head into the logits) and every
    head's value input from the embeddings; two edges listed but not in the graph."""
    heads = [f"a{layer}.h{h}" for layer in range(n_layers) for h in range(n_heads)]
    chosen = {"input->logits", *(f"{h}->logits" for h in heads), *(f"input->{h}<v>" for h in heads)}
    edges = {name: {"score": None, "in_graph": True} for name in sorted(chosen)}
    edges["input->a0.h0<q>"] = {"score": 0.5, "in_graph": False}
    edges["a0.h0->a1.h0<k>"] = {"score": None, "in_graph": False}
    nodes = {
        "input": {"in_graph": True},
        "logits": {"in_graph": True},
        **{h: {"in_graph": True} for h in heads},
    }
    cfg = {"n_layers": n_layers, "n_heads": n_heads, "parallel_attn_mlp": False, "d_model": d_model}
    return {"cfg": cfg, "nodes": nodes, "edges": edges}, chosen


@pytest.fixture(scope="module")
def zoo_file(tmp_path_factory):
    data, chosen = _hand_written(12, 12, 144)
    path = tmp_path_factory.mktemp("mib") / "hand.json"
    path.write_text(json.dumps(data))
    return path, chosen


def test_a_hand_written_mib_file_for_tiny_is_scored(tiny_model, tmp_path):
    data, chosen = _hand_written(4, 4, int(tiny_model.cfg.d_model))
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(data))
    result = score_circuit_file(path, tiny_model, "ioi", split="eval", batch_size=4, seeds=(0, 1))
    task = get_task("ioi")
    for seed, batch_result in zip((0, 1), result["per_batch"], strict=True):
        patcher = EdgePatcher.for_task(tiny_model, task, task.batch(tiny_model, "eval", 4, seed=seed))
        m_c, m_e = patcher.metric(
            [EdgeCircuit.from_names(chosen, patcher.graph), EdgeCircuit.empty(patcher.graph)]
        )
        assert batch_result["faithfulness"] == pytest.approx(
            (m_c - m_e) / (patcher.full_metric - m_e), abs=1e-6
        )
    assert result["edges_in_graph"] == len(chosen) == 1 + 2 * 16


@pytest.mark.slow  # loads a 12 x 12 model (about a minute on the shared machine)
def test_a_hand_written_mib_file_for_a_zoo_model_is_scored(zoo_file):
    path, chosen = zoo_file
    model, task = load_model("zoo2"), get_task("ioi")
    result = score_circuit_file(path, model, task, batch_size=4, seeds=(0,))
    assert result["edges_in_graph"] == len(chosen) == 1 + 2 * 144 and result["n_edges"] == 29_089
    batch = task.batch(model, "test", 4, seed=0)
    patcher = EdgePatcher.for_task(model, task, batch)
    circuit = EdgeCircuit.from_names(chosen, patcher.graph)
    m_c, m_e = patcher.metric([circuit, EdgeCircuit.empty(patcher.graph)])
    assert result["per_batch"][0]["metric"] == pytest.approx(m_c, abs=1e-6)
    assert result["faithfulness"] == pytest.approx((m_c - m_e) / (patcher.full_metric - m_e), abs=1e-6)
    assert not result["scored"] and result["model"] == "zoo2" and result["task"] == "ioi"


@pytest.mark.slow
def test_the_hand_written_file_scores_as_plain_hooks_patch_it(zoo_file):
    path, chosen = zoo_file
    model, task = load_model("zoo2"), get_task("ioi")
    result = score_circuit_file(path, "zoo2", "ioi", batch_size=3, seeds=(1,))
    batch = task.batch(model, "test", 3, seed=1)
    m_c = hook_patched_metric(model, task, batch, "resample", chosen)
    m_e = hook_patched_metric(model, task, batch, "resample", set())
    with torch.no_grad():
        m_full = float(task.metric(model(batch.tokens)[:, batch.positions], batch).mean())
    assert result["faithfulness"] == pytest.approx((m_c - m_e) / (m_full - m_e), abs=1e-4)


def test_export_then_import_gives_the_same_circuit_scores_and_faithfulness(tiny_model, tmp_path):
    task = get_task("ioi")
    patcher = EdgePatcher.for_task(tiny_model, task, task.batch(tiny_model, "eval", 4, seed=3))
    ranking = eap_ig_ranking(patcher)
    circuit = ranking.top(40)
    path = write_edge_mib_json(tmp_path / "c.json", circuit, ranking, d_model=int(tiny_model.cfg.d_model))
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    back, scores = read_edge_mib_json(path, patcher.graph)
    assert back == circuit and scores is not None
    np.testing.assert_array_equal(scores.scores, ranking.scores)
    assert patcher.metric([back])[0] == patcher.metric([circuit])[0]
    data = json.loads(text)
    assert list(data["edges"]) == list(patcher.graph.names) and data["cfg"]["attn_only"] is True


def test_infinite_scores_are_written_null(tmp_path):
    graph = EdgeGraph(2, 2)
    scores = np.arange(graph.n_edges, dtype=float)
    scores[0] = np.inf
    ranking = EdgeRanking.from_array(scores, "acdc", graph)
    path = write_edge_mib_json(tmp_path / "inf.json", ranking.top(3), ranking, d_model=8)
    edge = json.loads(path.read_text())["edges"][graph.names[0]]
    assert edge["score"] is None and edge["in_graph"] is True
    _, back = read_edge_mib_json(path, graph)
    assert back is None  # not every edge has a finite score


@pytest.mark.parametrize(
    "bad",
    ["a0.h0->m0", "a4.h0->logits", "a0.h4->a1.h0<q>", "a1.h0->a0.h0<q>", "a0.h0->a1.h0", "a0.h0->a1.h0<x>"],
)
def test_names_the_graph_lacks_are_refused(tmp_path, bad):
    data, _ = _hand_written(4, 4, 8)
    data["edges"][bad] = {"score": 1.0, "in_graph": True}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError):
        read_edge_mib_json(path, EdgeGraph(4, 4))


@pytest.mark.parametrize("edit", ["mlp_node", "nan", "shape", "in_graph"])
def test_malformed_files_are_refused(tmp_path, edit):
    data, _ = _hand_written(4, 4, 8)
    if edit == "mlp_node":
        data["nodes"]["m0"] = {"in_graph": True}
    elif edit == "shape":
        data["cfg"]["n_layers"] = 12
    elif edit == "in_graph":
        data["edges"]["input->logits"]["in_graph"] = "yes"
    text = json.dumps(data)
    if edit == "nan":
        text = text.replace('"score": 0.5', '"score": NaN')
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError):
        read_edge_mib_json(path, EdgeGraph(4, 4))
