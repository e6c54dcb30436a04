"""Names of the edge graph's nodes, ports and edges, built here only (MIB's strings).

At the bottom of the package (it imports nothing of it), beside ``heads.py``'s head names, so
that both the edge level (``circuit_gym.edges``) and the planted models' edge truth
(``circuit_gym.models.planted``) use it without one importing the other.

As TransformerLens builds every hook name with one function (``get_act_name``), every
node and edge name of the edge level comes from :func:`node_name` and :func:`edge_name`,
spelled as MIB's circuit files and EAP-IG's ``eap.graph.Graph`` spell them:

- nodes ``input``, ``a{L}.h{H}`` (attention heads), ``m{L}`` (MLPs), ``logits``;
- an edge ``{sender}->{receiver}``, with the port of a head receiver in angle brackets:
  ``a0.h1->a2.h3<q>``, ``input->a0.h0<k>``, ``a11.h3->logits``, ``a0.h1->m0``.

:func:`parse_edge_name` is the inverse and refuses anything else, so a file written by
anyone either names an edge of the graph or is rejected.
"""

from __future__ import annotations

import re

PORTS = ("q", "k", "v")  # a head's three receiving inputs, in MIB's order
INPUT, LOGITS = "input", "logits"
_HEAD = re.compile(r"a(\d+)\.h(\d+)")
_MLP = re.compile(r"m(\d+)")
_EDGE = re.compile(r"([^<>\-]+)->([^<>\-]+)(?:<([qkv])>)?")


def node_name(kind: str, layer: int | None = None, head: int | None = None) -> str:
    """``"input"``, ``"logits"``, ``node_name("head", L, H) == "a{L}.h{H}"``, ``node_name("mlp", L) == "m{L}"``."""
    if kind in (INPUT, LOGITS):
        return kind
    if kind == "head" and layer is not None and head is not None:
        return f"a{int(layer)}.h{int(head)}"
    if kind == "mlp" and layer is not None:
        return f"m{int(layer)}"
    raise ValueError(f"no node of kind {kind!r} with layer={layer!r}, head={head!r}")


def edge_name(sender: str, receiver: str, port: str | None = None) -> str:
    """``sender->receiver<port>`` (``port`` only for head receivers: q, k or v)."""
    if port is None:
        return f"{sender}->{receiver}"
    if port not in PORTS:
        raise ValueError(f"port must be one of {PORTS}, got {port!r}")
    return f"{sender}->{receiver}<{port}>"


def parse_node_name(name: str) -> tuple[str, int | None, int | None]:
    """``(kind, layer, head)`` of a node name; ValueError for anything else."""
    if name in (INPUT, LOGITS):
        return name, None, None
    if head := _HEAD.fullmatch(name):
        return "head", int(head[1]), int(head[2])
    if mlp := _MLP.fullmatch(name):
        return "mlp", int(mlp[1]), None
    raise ValueError(f"not a node name: {name[:60]!r}")


def parse_edge_name(name: str) -> tuple[str, str, str | None]:
    """``(sender, receiver, port)`` of an edge name; ValueError when it is not one."""
    match = _EDGE.fullmatch(name) if isinstance(name, str) else None
    if not match:
        raise ValueError(f"not an edge name 'sender->receiver<port>': {str(name)[:60]!r}")
    sender, receiver, port = match[1], match[2], match[3]
    for node in (sender, receiver):
        parse_node_name(node)
    if (parse_node_name(receiver)[0] == "head") != (port is not None):
        raise ValueError(
            f"edge {name[:60]!r}: a head receiver needs a port <q>/<k>/<v>, other receivers none"
        )
    return sender, receiver, port
