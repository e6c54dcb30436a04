"""Which head plays which role in the model of one seed: the ground truth.

Per seed, every circuit of the generator version's kinds gets layers that respect its order (a
head reads only what an earlier layer wrote), anywhere in the 12 layers, and a free head of
each such layer:

- induction: ``previous_token`` < ``induction``;
- multihop: ``previous_token`` < ``second_previous`` < ``mover``;
- redundant: ``retriever_1``, ``retriever_2`` < ``reader`` (the retrievers' layers are
  drawn independently, so they may share one);
- suppression: ``previous_token`` < ``mover``, ``previous_token`` < ``suppressor``;
- self_repair (version 3): ``previous_token`` < ``primary`` < ``backup``;
- and (version 3): ``sender_left``, ``sender_right`` < ``receiver`` (drawn as the redundant ones).

Then the decoys (those that copy a reader's attention sit above the head writing what it
reads, so their pattern is the circuit head's), then a distractor on every other head.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from circuit_gym.models.planted.circuit_edges import BACKUP_ROLES, edges_of, head_node
from circuit_gym.models.planted.layout import N_HEADS, N_LAYERS
from circuit_gym.models.planted.roles import CIRCUIT_ROLES, DISTRACTORS
from circuit_gym.tasks.planted import KINDS_V3

NEGATIVE_ROLES = frozenset({("suppression", "suppressor")})  # circuit heads that lower the metric
EDGE_TRUTH_FROM = 3  # generator versions from this one state edges and backups in their JSON


@dataclass(frozen=True)
class HeadRole:
    head: int  # flat id, layer * N_HEADS + head
    group: str  # a circuit kind, "decoy" or "distractor"
    role: str

    @property
    def layer(self) -> int:
        return self.head // N_HEADS

    @property
    def name(self) -> str:
        return f"{self.head // N_HEADS}.{self.head % N_HEADS}"


@dataclass(frozen=True)
class GroundTruth:
    """Every head's role in the model of ``seed`` (generator ``version``); ``circuits[kind]``
    are the heads a kind's task runs through (its circuit, negative and backup heads included),
    ``roles`` is one entry per head."""

    seed: int
    roles: tuple[HeadRole, ...]
    version: int = 2

    @property
    def kinds(self) -> tuple[str, ...]:
        """The circuit kinds this model has (its generator version's), in the tasks' order."""
        return tuple(k for k in KINDS_V3 if any(r.group == k for r in self.roles))

    @property
    def circuits(self) -> dict[str, frozenset[int]]:
        return {kind: frozenset(r.head for r in self.roles if r.group == kind) for kind in self.kinds}

    def circuit(self, kind: str) -> frozenset[int]:
        if kind not in self.kinds:
            raise ValueError(f"kind must be one of {self.kinds}, got {kind!r}")
        return self.circuits[kind]

    def backups(self, kind: str) -> frozenset[int]:
        """The circuit's backup heads: they act only when another circuit head is ablated."""
        return frozenset(
            r.head for r in self.roles if r.group == self._kind(kind) and (kind, r.role) in BACKUP_ROLES
        )

    def edges(self, kind: str) -> frozenset[str]:
        """The circuit as edges, in MIB's names (``circuit_gym.models.planted.circuit_edges``)."""
        return frozenset(edges_of(self._kind(kind), self._head_of_role(kind)))

    def backup_edges(self, kind: str) -> frozenset[str]:
        """The truth edges into or out of a backup head: they carry nothing until the primary is ablated."""
        backups = {head_node(h) for h in self.backups(kind)}
        return frozenset(e for e in self.edges(kind) if _ends(e) & backups)

    def heads_of(self, group: str, role: str | None = None) -> tuple[int, ...]:
        return tuple(r.head for r in self.roles if r.group == group and role in (None, r.role))

    def role_of(self, head: int) -> HeadRole:
        return self.roles[head]

    def _kind(self, kind: str) -> str:
        self.circuit(kind)  # refuses a kind this model does not have
        return kind

    def _head_of_role(self, kind: str) -> Mapping[str, int]:
        return {r.role: r.head for r in self.roles if r.group == kind}

    def to_json(self, kind: str | None = None) -> dict:
        """A JSON-ready summary: every circuit (or only ``kind``'s), with each head's role (and,
        from version 3, whether it is a backup, and the circuit's edges)."""
        kinds = self.kinds if kind is None else (self._kind(kind),)
        with_edges = self.version >= EDGE_TRUTH_FROM

        def head(k: str, r: HeadRole) -> dict:
            entry = {
                "head": r.head,
                "name": r.name,
                "role": r.role,
                "sign": -1 if (k, r.role) in NEGATIVE_ROLES else 1,
            }
            return {**entry, "backup": (k, r.role) in BACKUP_ROLES} if with_edges else entry

        summary = {
            "seed": self.seed,
            "circuits": {k: [head(k, r) for r in self.roles if r.group == k] for k in kinds},
            "decoys": [
                {"head": r.head, "name": r.name, "role": r.role} for r in self.roles if r.group == "decoy"
            ],
        }
        if with_edges:
            summary["version"] = self.version
            summary["edges"] = {k: sorted(self.edges(k)) for k in kinds}
            summary["backup_edges"] = {k: sorted(self.backup_edges(k)) for k in kinds}
        return summary


def _ends(edge: str) -> set[str]:
    sender, receiver = edge.split("->")
    return {sender, receiver.split("<")[0]}


class _Grid:
    """The heads still free, drawn from with one generator."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.free = {layer: list(range(N_HEADS)) for layer in range(N_LAYERS)}

    def take(self, layers: Iterable[int]) -> int:
        """A free head in one of ``layers`` (drawn uniformly among those heads)."""
        options = [(layer, h) for layer in layers for h in self.free[layer]]
        if not options:
            raise RuntimeError(f"no free head in layers {list(layers)}")
        layer, h = options[int(self.rng.integers(len(options)))]
        self.free[layer].remove(h)
        return layer * N_HEADS + h


def _chain(rng: np.random.Generator, n: int) -> list[int]:
    return sorted(int(x) for x in rng.choice(N_LAYERS, size=n, replace=False))


def _two_below_one(rng: np.random.Generator, first: str, second: str, reader: str) -> dict[str, int]:
    layer = int(rng.integers(1, N_LAYERS))
    return {first: int(rng.integers(layer)), second: int(rng.integers(layer)), reader: layer}


def _circuit_layers(kind: str, rng: np.random.Generator) -> dict[str, int]:
    roles = CIRCUIT_ROLES[kind]
    if kind in ("induction", "multihop", "self_repair"):
        return dict(zip(roles, _chain(rng, len(roles)), strict=True))
    if kind in ("redundant", "and"):
        return _two_below_one(rng, *roles)
    if kind == "suppression":
        prev = int(rng.integers(N_LAYERS - 1))
        return {"previous_token": prev, "mover": int(rng.integers(prev + 1, N_LAYERS)),
                "suppressor": int(rng.integers(prev + 1, N_LAYERS))}  # fmt: skip
    raise ValueError(f"unknown kind {kind!r}")


def place_roles(seed: int, rng: np.random.Generator, kinds: tuple[str, ...],
                decoy_counts: Mapping[str, int], version: int) -> GroundTruth:  # fmt: skip
    """Draw every head's role for ``seed`` with ``rng`` (see the module docstring)."""
    grid = _Grid(rng)
    placed: list[HeadRole] = []
    layer_of: dict[tuple[str, str], int] = {}
    for kind in kinds:
        for role, layer in _circuit_layers(kind, rng).items():
            head = grid.take([layer])
            placed.append(HeadRole(head, kind, role))
            layer_of[(kind, role)] = layer
    # a decoy that reads a circuit channel sits above the circuit head that writes it
    above = {
        "decoy_induction": layer_of[("induction", "previous_token")],
        "decoy_multihop_mover": layer_of[("multihop", "second_previous")],
        "decoy_reader": max(layer_of[("redundant", "retriever_1")], layer_of[("redundant", "retriever_2")]),
        "decoy_suppression_mover": layer_of[("suppression", "previous_token")],
        "decoy_self_repair_primary": layer_of.get(("self_repair", "previous_token"), -1),
    }
    for role, count in decoy_counts.items():
        lowest = above.get(role, -1) + 1
        for _ in range(count):
            placed.append(HeadRole(grid.take(range(lowest, N_LAYERS)), "decoy", role))
    for layer, free in grid.free.items():
        for h in free:
            placed.append(HeadRole(layer * N_HEADS + h, "distractor", str(rng.choice(DISTRACTORS))))
    return GroundTruth(seed, tuple(sorted(placed, key=lambda r: r.head)), version)
