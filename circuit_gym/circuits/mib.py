"""MIB's circuit JSON layout, out and in (head-level circuits).

The layout (``EAP-IG/src/eap/graph.py``, ``to_json``; example: ``circuits/ioi-eap-ig.json``
in ``hannamw/MIB-circuit-track``)::

    {"cfg": {"n_layers": 12, "n_heads": 12, "parallel_attn_mlp": false, "d_model": 768},
     "nodes": {"input": {"in_graph": true}, "a0.h0": {"in_graph": false, "score": ...}, ...,
               "m0": {...}, ..., "logits": {"in_graph": true}},
     "edges": {"input->a0.h0<q>": {"score": ..., "in_graph": ...}, ...}}

What this module writes:

- nodes in MIB's order: ``input``, then per layer ``a{l}.h0 .. a{l}.h{H-1}`` and ``m{l}``,
  then ``logits``. A head's ``in_graph`` is its membership of the circuit and its
  ``score`` the ranking's score; a score that is not finite (ACDC's ``+inf``) or absent is
  written ``null``: the file is strict JSON (no bare ``NaN`` / ``Infinity``).
- MLP nodes ``m{l}``: this package never ablates MLPs, so on models with MLPs (GPT-2) they
  are written ``{"in_graph": true, "score": null}``; attention-only models (the embedded
  ones, the planted model) have none, so no ``m{l}`` node or edge is written, and ``cfg``
  says ``"attn_only": true`` (an extra key MIB's reader does not need).
- edges as MIB enumerates them: into head ``a{l}.h{h}`` from ``input``, every head of
  earlier layers and every earlier MLP, once per input ``<q>``, ``<k>``, ``<v>``; into
  ``m{l}`` from ``input``, the heads of layers ``<= l`` and earlier MLPs; into ``logits``
  from everything. An edge is ``in_graph`` when both its ends are (the node circuit implies
  its edges); edge ``score`` is ``null`` (heads are scored, not edges).

Reading (:func:`circuit_from_mib`) takes a head's membership from its node's ``in_graph``
(edges are not needed at node level) and a :class:`Ranking` when every head has a finite
score. Files come from elsewhere, so the reader checks everything: strict JSON (no NaN or
Infinity, no duplicate keys), a size limit, the model's shape, node names, ``in_graph``
types and score types.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

from circuit_gym.circuits.circuit import Circuit
from circuit_gym.circuits.ranking import Ranking

MAX_BYTES = 64 * 2**20  # MIB's GPT-2 example file is 2.4 MB
QKV = ("q", "k", "v")
_HEAD = re.compile(r"a(\d+)\.h(\d+)")
_MLP = re.compile(r"m(\d+)")


def node_names(n_layers: int, n_heads: int, has_mlp: bool) -> list[str]:
    """MIB's node order."""
    names = ["input"]
    for layer in range(n_layers):
        names += [f"a{layer}.h{h}" for h in range(n_heads)]
        names += [f"m{layer}"] if has_mlp else []
    return [*names, "logits"]


def edge_names(n_layers: int, n_heads: int, has_mlp: bool) -> list[tuple[str, str]]:
    """(edge name, upstream node) pairs, in MIB's order: by downstream layer (its heads, then
    its MLP), then upstream node, then downstream head, then ``<q>``, ``<k>``, ``<v>``."""
    edges = []
    upstream = ["input"]
    for layer in range(n_layers):
        heads = [f"a{layer}.h{h}" for h in range(n_heads)]
        edges += [(f"{u}->{head}<{letter}>", u) for u in upstream for head in heads for letter in QKV]
        upstream = upstream + heads
        if has_mlp:
            edges += [(f"{u}->m{layer}", u) for u in upstream]
            upstream = [*upstream, f"m{layer}"]
    return edges + [(f"{u}->logits", u) for u in upstream]


def _score(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def circuit_to_mib(circuit: Circuit, ranking: Ranking | None = None, *, d_model: int, has_mlp: bool,
                   parallel_attn_mlp: bool = False) -> dict:  # fmt: skip
    """The MIB JSON object of a head circuit (and its ranking's scores)."""
    n_layers, n_heads = circuit.n_layers, circuit.n_heads
    if ranking is not None and (ranking.n_layers, ranking.n_heads) != (n_layers, n_heads):
        raise ValueError("the ranking and the circuit are of different model shapes")
    cfg = {"n_layers": n_layers, "n_heads": n_heads, "parallel_attn_mlp": bool(parallel_attn_mlp),
           "d_model": int(d_model)}  # fmt: skip
    if not has_mlp:
        cfg["attn_only"] = True
    in_graph = {"input": True, "logits": True}
    nodes: dict[str, dict] = {}
    for name in node_names(n_layers, n_heads, has_mlp):
        head = _HEAD.fullmatch(name)
        if head:
            flat = int(head[1]) * n_heads + int(head[2])
            in_graph[name] = flat in circuit.heads
            nodes[name] = {
                "in_graph": in_graph[name],
                "score": _score(ranking.scores[flat] if ranking else None),
            }
        elif _MLP.fullmatch(name):
            in_graph[name] = True
            nodes[name] = {"in_graph": True, "score": None}
        else:
            nodes[name] = {"in_graph": True}
    edges = {}
    for edge, upstream in edge_names(n_layers, n_heads, has_mlp):
        downstream = edge.split("->")[1].split("<")[0]
        edges[edge] = {"score": None, "in_graph": in_graph[upstream] and in_graph[downstream]}
    return {"cfg": cfg, "nodes": nodes, "edges": edges}


def model_layout(model) -> dict:
    """The ``d_model`` / ``has_mlp`` / ``parallel_attn_mlp`` arguments for a loaded model."""
    cfg = model.cfg
    return {"d_model": int(cfg.d_model), "has_mlp": not bool(getattr(cfg, "attn_only", False)),
            "parallel_attn_mlp": bool(getattr(cfg, "parallel_attn_mlp", False))}  # fmt: skip


def write_mib_json(path: str | Path, circuit: Circuit, ranking: Ranking | None = None, **layout) -> Path:
    """Write :func:`circuit_to_mib` as strict JSON (``layout``: see :func:`model_layout`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(circuit_to_mib(circuit, ranking, **layout), allow_nan=False))
    return path


# ------------------------------------------------------------------------------ reading
def _reject_constant(name: str):
    raise ValueError(f"not strict JSON: {name} is not a number JSON allows")


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"duplicate keys in the JSON object: {dup[:5]}")
    return dict(pairs)


def parse_mib_json(text: str | bytes, max_bytes: int = MAX_BYTES) -> dict:
    """Strict parse of an untrusted MIB file: size limit, no NaN/Infinity, no duplicate keys."""
    if len(text) > max_bytes:
        raise ValueError(f"MIB circuit file is {len(text)} bytes, more than the limit of {max_bytes}")
    data = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    if not isinstance(data, dict):
        raise ValueError("a MIB circuit file is a JSON object with 'cfg' and 'nodes'")
    return data


def circuit_from_mib(data: dict, n_layers: int | None = None, n_heads: int | None = None,
                     method: str = "mib") -> tuple[Circuit, Ranking | None]:  # fmt: skip
    """The head circuit of a MIB circuit object, and its ranking when every head has a finite score.

    ``n_layers`` / ``n_heads``: the model it will run on; the file's ``cfg`` must agree.
    """
    cfg, nodes = data.get("cfg"), data.get("nodes")
    if not isinstance(cfg, dict) or not isinstance(nodes, dict):
        raise ValueError("a MIB circuit object needs a 'cfg' object and a 'nodes' object")
    shape = []
    for key, expected in (("n_layers", n_layers), ("n_heads", n_heads)):
        value = cfg.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 4096:
            raise ValueError(f"cfg.{key} must be a positive integer, got {value!r}")
        if expected is not None and value != expected:
            raise ValueError(f"the file is for a model with {key} = {value}; this model has {expected}")
        shape.append(value)
    n_layers, n_heads = shape
    members, scores = set(), [None] * (n_layers * n_heads)
    for name, node in nodes.items():
        if name in ("input", "logits"):
            continue
        mlp, head = _MLP.fullmatch(name), _HEAD.fullmatch(name)
        if mlp and int(mlp[1]) < n_layers:
            continue  # MLPs are never ablated here
        if not head or int(head[1]) >= n_layers or int(head[2]) >= n_heads:
            raise ValueError(f"node {name[:40]!r} is not a node of a {n_layers} x {n_heads} model")
        if not isinstance(node, dict) or not isinstance(node.get("in_graph"), bool):
            raise ValueError(f"node {name!r} needs a boolean 'in_graph'")
        score = node.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise ValueError(f"node {name!r}: score must be a number or null, got {type(score).__name__}")
        flat = int(head[1]) * n_heads + int(head[2])
        scores[flat] = score
        if node["in_graph"]:
            members.add(flat)
    missing = [i for i in range(n_layers * n_heads) if f"a{i // n_heads}.h{i % n_heads}" not in nodes]
    if missing:
        raise ValueError(
            f"{len(missing)} heads have no node, e.g. a{missing[0] // n_heads}.h{missing[0] % n_heads}"
        )
    circuit = Circuit(frozenset(members), n_layers, n_heads)
    ranking = None
    if all(s is not None for s in scores):
        ranking = Ranking.from_array([float(s) for s in scores], method, n_layers, n_heads)
    return circuit, ranking


def read_mib_json(path: str | Path, n_layers: int | None = None, n_heads: int | None = None,
                  max_bytes: int = MAX_BYTES) -> tuple[Circuit, Ranking | None]:  # fmt: skip
    """Read a MIB circuit file (found elsewhere, e.g. MIB's own) as a head circuit here."""
    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"{path} is {size} bytes, more than the limit of {max_bytes}")
    return circuit_from_mib(parse_mib_json(path.read_bytes(), max_bytes), n_layers, n_heads, method=path.stem)


def export_circuits(model, rankings: Sequence[Ranking], directory: str | Path, *, size: int | None = None,
                    names: Sequence[str] | None = None) -> list[Path]:  # fmt: skip
    """Write each ranking's circuit of its top ``size`` heads (by signed score; default: 10 % of
    the heads, MIB's 0.1 fraction) as ``{name}.json`` (default name: ``{method}-{i}``) in ``directory``.
    The function a command-line entry point calls."""
    n_total = int(model.cfg.n_layers) * int(model.cfg.n_heads)
    size = int(0.1 * n_total) if size is None else int(size)
    names = [f"{r.method}-{i}" for i, r in enumerate(rankings)] if names is None else list(names)
    if len(names) != len(rankings):
        raise ValueError("give one name per ranking")
    layout = model_layout(model)
    return [write_mib_json(Path(directory) / f"{name}.json", r.top(size), r, **layout)
            for name, r in zip(names, rankings, strict=True)]  # fmt: skip
