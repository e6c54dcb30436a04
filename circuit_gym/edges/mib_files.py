"""MIB's circuit files at edge level, out and in, and :func:`score_circuit_file`.

The layout is MIB's (``EAP-IG/src/eap/graph.py``, ``to_json``; README of ../shared)::

    {"cfg": {"n_layers": 12, "n_heads": 12, "parallel_attn_mlp": false, "d_model": 144},
     "nodes": {"input": {"in_graph": true, "score": null}, "a0.h0": {...}, ..., "logits": {...}},
     "edges": {"input->a0.h0<q>": {"score": 0.12, "in_graph": true}, ...}}

Writing (:func:`edge_circuit_to_mib`): every edge of the graph in MIB's order, ``in_graph``
its membership, ``score`` the ranking's score or ``null`` (not finite, or no ranking: the
file is strict JSON, never a bare ``NaN``); a node is ``in_graph`` when some edge of the
circuit touches it; node scores are ``null`` (edges are what is scored). Attention-only
models add ``"attn_only": true`` to ``cfg``, as the head-level exporter does.

Reading (:func:`edge_circuit_from_mib`): files come from anyone, so the strict parser of
:mod:`circuit_gym.circuits.mib` (size limit, no NaN / Infinity, no duplicate keys) is used,
``cfg`` must match the model, and **every edge and node name must be one of the model's
graph** (an ``m0`` node or a ``...->m0`` edge is refused on an attention-only model). The
circuit is the edges with ``"in_graph": true``; an edge the file leaves out is not in it.
When every edge of the graph has a finite score, the scores also come back as an
:class:`EdgeRanking`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from circuit_gym.circuits.mib import MAX_BYTES, parse_mib_json
from circuit_gym.edges.circuit import EdgeCircuit
from circuit_gym.edges.graph import EdgeGraph
from circuit_gym.edges.ranking import EdgeRanking
from circuit_gym.graph_names import parse_edge_name


def edge_circuit_to_mib(circuit: EdgeCircuit, ranking: EdgeRanking | None = None, *, d_model: int,
                        parallel_attn_mlp: bool = False) -> dict:  # fmt: skip
    """The MIB JSON object of an edge circuit (and its ranking's scores)."""
    graph = circuit.graph
    if ranking is not None and ranking.graph != graph:
        raise ValueError("the ranking and the circuit are of different graphs")
    cfg: dict = {"n_layers": graph.n_layers, "n_heads": graph.n_heads,
                 "parallel_attn_mlp": bool(parallel_attn_mlp), "d_model": int(d_model)}  # fmt: skip
    if not graph.has_mlp:
        cfg["attn_only"] = True
    mask = circuit.mask
    touched: set[str] = set()
    for e in np.flatnonzero(mask).tolist():
        sender, receiver, _ = parse_edge_name(graph.names[e])
        touched.update((sender, receiver))
    nodes = {name: {"in_graph": name in touched, "score": None} for name in graph.nodes}
    scores = ranking.scores if ranking is not None else None
    edges = {
        name: {"score": _finite(scores[i]) if scores is not None else None, "in_graph": bool(mask[i])}
        for i, name in enumerate(graph.names)
    }
    return {"cfg": cfg, "nodes": nodes, "edges": edges}


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def write_edge_mib_json(path: str | Path, circuit: EdgeCircuit, ranking: EdgeRanking | None = None, *,
                        d_model: int, parallel_attn_mlp: bool = False) -> Path:  # fmt: skip
    """Write :func:`edge_circuit_to_mib` as strict JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = edge_circuit_to_mib(circuit, ranking, d_model=d_model, parallel_attn_mlp=parallel_attn_mlp)
    path.write_text(json.dumps(data, allow_nan=False))
    return path


def edge_circuit_from_mib(
    data: dict, graph: EdgeGraph, method: str = "mib"
) -> tuple[EdgeCircuit, EdgeRanking | None]:
    """The edge circuit of a MIB circuit object on ``graph``, and its ranking when every edge has a finite score."""
    cfg, nodes, edges = data.get("cfg"), data.get("nodes", {}), data.get("edges")
    if not isinstance(cfg, dict) or not isinstance(nodes, dict) or not isinstance(edges, dict):
        raise ValueError("a MIB edge circuit needs a 'cfg' object and an 'edges' object ('nodes' optional)")
    for key, expected in (("n_layers", graph.n_layers), ("n_heads", graph.n_heads)):
        if cfg.get(key) != expected or isinstance(cfg.get(key), bool):
            raise ValueError(
                f"the file is for a model with {key} = {cfg.get(key)!r}; this model has {expected}"
            )
    known_nodes = set(graph.nodes)
    unknown = [n for n in nodes if n not in known_nodes]
    if unknown:
        raise ValueError(
            f"node {unknown[0][:60]!r} is not a node of this model's graph ({len(unknown)} such)"
        )
    members, scores = [], np.full(graph.n_edges, np.nan)
    for name, edge in edges.items():
        index = graph.edge_index(name)  # refuses names the graph lacks
        if not isinstance(edge, dict) or not isinstance(edge.get("in_graph"), bool):
            raise ValueError(f"edge {name!r} needs a boolean 'in_graph'")
        score = edge.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise ValueError(f"edge {name!r}: score must be a number or null, got {type(score).__name__}")
        if score is not None:
            scores[index] = float(score)
        if edge["in_graph"]:
            members.append(index)
    circuit = EdgeCircuit(frozenset(members), graph)
    ranking = None
    if np.isfinite(scores).all():
        ranking = EdgeRanking.from_array(scores, method, graph)
    return circuit, ranking


def read_edge_mib_json(
    path: str | Path, graph: EdgeGraph, max_bytes: int = MAX_BYTES
) -> tuple[EdgeCircuit, EdgeRanking | None]:
    """Read a MIB circuit file (written by anyone) as an edge circuit of ``graph``."""
    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"{path} is {size} bytes, more than the limit of {max_bytes}")
    return edge_circuit_from_mib(parse_mib_json(path.read_bytes(), max_bytes), graph, method=path.stem)


def circuit_level(path: str | Path, graph: EdgeGraph, max_bytes: int = MAX_BYTES) -> str:
    """``"heads"`` when the file's in-graph edges are exactly those its in-graph nodes induce (an edge
    is in the graph when both its ends are: a node circuit, as the head-level exporter
    ``circuit_gym.circuits.mib`` writes it), ``"edges"`` otherwise (a circuit chosen edge by edge)."""
    data = parse_mib_json(Path(path).read_bytes(), max_bytes)
    circuit, _ = edge_circuit_from_mib(data, graph)
    nodes = data.get("nodes", {})
    inside = {name for name, node in nodes.items() if isinstance(node, dict) and node.get("in_graph")}
    inside |= {"input", "logits"}
    induced = {
        i for i, (sender, receiver, _) in enumerate(graph.edges)
        if graph.senders[sender] in inside and receiver in inside
    }  # fmt: skip
    return "heads" if nodes and set(circuit.edges) == induced else "edges"


def score_circuit_file(path: str | Path, model, task, *, split: str = "test", batch_size: int = 16,
                       seeds: Sequence[int] = (0,), ablation: str | None = None) -> dict:  # fmt: skip
    """Faithfulness of the edge circuit in a MIB file on ``task``'s prompt batches.

    ``model``: a loaded model or a model name (:func:`circuit_gym.load_model`); ``task``: a
    :class:`~circuit_gym.tasks.Task` or its name. One batch of ``batch_size`` prompts of
    ``split`` per seed; ``ablation`` defaults to the model's (as every circuit score here).
    Returns the mean faithfulness over batches and each batch's ``m(C)``, ``m(empty)``,
    ``m(full)``: what ``circuit-gym circuits score FILE --model M --task T`` prints.
    """
    from circuit_gym.circuits.faithfulness import faithfulness
    from circuit_gym.edges.patching import EdgePatcher
    from circuit_gym.models import load_model
    from circuit_gym.tasks import get_task

    model = load_model(model) if isinstance(model, str) else model
    task = get_task(task) if isinstance(task, str) else task
    circuit, ranking = read_edge_mib_json(path, EdgeGraph.of_model(model))
    per_batch = []
    for seed in seeds:
        patcher = EdgePatcher.for_task(
            model, task, task.batch(model, split, batch_size, seed=int(seed)), ablation
        )
        m_circuit, m_empty = patcher.metric([circuit, EdgeCircuit.empty(circuit.graph)]).tolist()
        f = float(faithfulness(m_circuit, m_empty, patcher.full_metric))
        per_batch.append({"seed": int(seed), "faithfulness": f, "metric": m_circuit, "empty_metric": m_empty,
                          "full_metric": patcher.full_metric})  # fmt: skip
    return {
        "file": str(path), "model": model.circuit_gym_info.name, "task": task.name, "ablation": patcher.ablation,
        "split": split, "edges_in_graph": circuit.size, "n_edges": circuit.graph.n_edges,
        "scored": ranking is not None, "faithfulness": float(np.mean([b["faithfulness"] for b in per_batch])),
        "per_batch": per_batch,
    }  # fmt: skip
