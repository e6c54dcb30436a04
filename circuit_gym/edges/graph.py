"""The edge graph of a model: which sender's output reaches which receiver's input.

Nodes (MIB's, :mod:`circuit_gym.graph_names`): ``input`` (token + position embedding),
every attention head ``a{L}.h{H}``, every MLP ``m{L}`` on models that have them (GPT-2),
and ``logits``. A head receives on three **ports**, its query, key and value inputs (MIB
splits them), an MLP and the logits on one. An edge runs from every node's output to every
port of every later node: a head of layer ``L`` reads ``input``, the heads and MLPs of layers
``< L``; the MLP of layer ``L`` also reads the heads of layer ``L`` (GPT-2's blocks are
sequential); ``logits`` reads everything.

Edges are numbered in MIB's order (the order of its circuit files and of
:func:`circuit_gym.circuits.mib.edge_names`): by receiving layer (its heads' ports, then its
MLP), then sender, then receiving head, then ``q, k, v``; the logits' edges last. In that
order the edges into one layer's heads form one block ``[senders, heads, 3]``, which is how
:mod:`circuit_gym.edges.patching` reads a circuit's mask without any index lookups.

Counts (:attr:`EdgeGraph.counts`; ``tests/test_edges_graph.py`` derives them independently):
12 x 12 attention-only: 432 input->port, 28,512 head->port, 145 ->logits (29,089 edges);
GPT-2 small's shape (MLPs as nodes): 32,491 edges, MIB's count for GPT-2.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from circuit_gym.graph_names import INPUT, LOGITS, PORTS, edge_name, node_name, parse_edge_name


@dataclass(frozen=True)
class LayerBlock:
    """Where one layer's edges sit in the edge order.

    ``heads``: edges into the layer's head ports, ``senders * n_heads * 3`` of them from
    ``head_start`` (the first ``senders`` senders, in sender order); ``mlp``: edges into the
    layer's MLP, ``senders + n_heads`` of them from ``mlp_start`` (-1 without MLPs).
    """

    layer: int
    senders: int
    head_start: int
    mlp_start: int


@dataclass(frozen=True)
class EdgeGraph:
    """The edge graph of an ``n_layers x n_heads`` model, with or without MLP nodes."""

    n_layers: int
    n_heads: int
    has_mlp: bool = False

    def __post_init__(self) -> None:
        if int(self.n_layers) < 1 or int(self.n_heads) < 1:
            raise ValueError(f"n_layers and n_heads must be >= 1, got {self.n_layers} and {self.n_heads}")
        object.__setattr__(self, "n_layers", int(self.n_layers))
        object.__setattr__(self, "n_heads", int(self.n_heads))
        object.__setattr__(self, "has_mlp", bool(self.has_mlp))

    @classmethod
    def of_model(cls, model) -> EdgeGraph:
        """The graph of a loaded model (MLP nodes unless its config says attention-only)."""
        cfg = model.cfg
        return cls(int(cfg.n_layers), int(cfg.n_heads), not bool(getattr(cfg, "attn_only", False)))

    # ------------------------------------------------------------------ nodes
    @cached_property
    def senders(self) -> tuple[str, ...]:
        """Every node with an output, in MIB's node order: input, then per layer its heads and MLP."""
        names = [INPUT]
        for layer in range(self.n_layers):
            names += [node_name("head", layer, h) for h in range(self.n_heads)]
            names += [node_name("mlp", layer)] if self.has_mlp else []
        return tuple(names)

    @property
    def nodes(self) -> tuple[str, ...]:
        """MIB's node order: the senders, then ``logits``."""
        return (*self.senders, LOGITS)

    def senders_before(self, layer: int) -> int:
        """How many senders a head of ``layer`` reads (input and every earlier head and MLP)."""
        return 1 + int(layer) * (self.n_heads + int(self.has_mlp))

    def head_sender(self, layer: int, head: int) -> int:
        """The sender index of head ``a{layer}.h{head}``."""
        return self.senders_before(layer) + int(head)

    # ------------------------------------------------------------------ edges
    @cached_property
    def blocks(self) -> tuple[LayerBlock, ...]:
        out, start = [], 0
        for layer in range(self.n_layers):
            senders = self.senders_before(layer)
            head_start, start = start, start + senders * self.n_heads * len(PORTS)
            mlp_start = -1
            if self.has_mlp:
                mlp_start, start = start, start + senders + self.n_heads
            out.append(LayerBlock(layer, senders, head_start, mlp_start))
        return tuple(out)

    @property
    def logits_start(self) -> int:
        """The first edge into ``logits``; the last ``len(senders)`` edges are the logits'."""
        return self.n_edges - len(self.senders)

    @cached_property
    def edges(self) -> tuple[tuple[int, str, str | None], ...]:
        """Every edge as ``(sender index, receiver node, port)``, in MIB's order."""
        out: list[tuple[int, str, str | None]] = []
        for block in self.blocks:
            heads = [node_name("head", block.layer, h) for h in range(self.n_heads)]
            out += [(s, head, p) for s in range(block.senders) for head in heads for p in PORTS]
            if self.has_mlp:
                mlp = node_name("mlp", block.layer)
                out += [(s, mlp, None) for s in range(block.senders + self.n_heads)]
        return tuple(out + [(s, LOGITS, None) for s in range(len(self.senders))])

    @property
    def n_edges(self) -> int:
        last = self.blocks[-1]
        into_layers = (last.mlp_start + last.senders + self.n_heads) if self.has_mlp else (
            last.head_start + last.senders * self.n_heads * len(PORTS))  # fmt: skip
        return into_layers + len(self.senders)

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Every edge's MIB name, in edge order."""
        return tuple(edge_name(self.senders[s], r, p) for s, r, p in self.edges)

    @cached_property
    def index(self) -> dict[str, int]:
        """Edge name -> edge index."""
        return {name: i for i, name in enumerate(self.names)}

    def edge_index(self, name: str) -> int:
        """The index of an edge name; ValueError when this graph has no such edge."""
        if name in self.index:
            return self.index[name]
        parse_edge_name(name)  # a clearer message for malformed names
        raise ValueError(
            f"edge {name[:60]!r} is not in the graph of a {self.n_layers} x {self.n_heads} model "
            f"({'with' if self.has_mlp else 'without'} MLP nodes)"
        )

    @property
    def counts(self) -> dict[str, int]:
        """Edges by kind: ``input->port`` (into head ports), ``head->port``, ``mlp->port``,
        ``->mlp``, ``->logits``, and ``total``."""
        out = {"input->port": 0, "head->port": 0, "mlp->port": 0, "->mlp": 0, "->logits": 0}
        for s, receiver, port in self.edges:
            if receiver == LOGITS:
                out["->logits"] += 1
            elif port is None:
                out["->mlp"] += 1
            else:
                kind = self.senders[s][0]
                out[{"i": "input->port", "a": "head->port", "m": "mlp->port"}[kind]] += 1
        return {**out, "total": self.n_edges}
