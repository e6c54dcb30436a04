"""Which head plays which role in the model of one seed: the ground truth.

Per seed, every circuit gets layers that respect its order (a head reads only what an
earlier layer wrote), anywhere in the 12 layers, and a free head of each such layer:

- induction: ``previous_token`` < ``induction``;
- multihop: ``previous_token`` < ``second_previous`` < ``mover``;
- redundant: ``retriever_1``, ``retriever_2`` < ``reader`` (the retrievers' layers are
  drawn independently, so they may share one);
- suppression: ``previous_token`` < ``mover``, ``previous_token`` < ``suppressor``.

Then the decoys (those that copy a reader's attention sit above the head writing what it
reads, so their pattern is the circuit head's), then a distractor on every other head.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from circuit_gym.models.planted.layout import N_HEADS, N_LAYERS
from circuit_gym.models.planted.roles import CIRCUIT_ROLES, DECOY_COUNTS, DISTRACTORS
from circuit_gym.tasks.planted import KINDS

NEGATIVE_ROLES = frozenset({("suppression", "suppressor")})  # circuit heads that lower the metric


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
    """Every head's role in the model of ``seed``; ``circuits[kind]`` are the heads a kind's
    task runs through (its circuit, negative heads included), ``roles`` is one entry per head."""

    seed: int
    roles: tuple[HeadRole, ...]

    @property
    def circuits(self) -> dict[str, frozenset[int]]:
        return {kind: frozenset(r.head for r in self.roles if r.group == kind) for kind in KINDS}

    def circuit(self, kind: str) -> frozenset[int]:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        return self.circuits[kind]

    def heads_of(self, group: str, role: str | None = None) -> tuple[int, ...]:
        return tuple(r.head for r in self.roles if r.group == group and role in (None, r.role))

    def role_of(self, head: int) -> HeadRole:
        return self.roles[head]

    def to_json(self, kind: str | None = None) -> dict:
        """A JSON-ready summary: every circuit (or only ``kind``'s), with each head's role."""
        kinds = KINDS if kind is None else (kind,)
        return {
            "seed": self.seed,
            "circuits": {
                k: [
                    {
                        "head": r.head,
                        "name": r.name,
                        "role": r.role,
                        "sign": -1 if (k, r.role) in NEGATIVE_ROLES else 1,
                    }
                    for r in self.roles
                    if r.group == k
                ]  # fmt: skip
                for k in kinds
            },
            "decoys": [
                {"head": r.head, "name": r.name, "role": r.role} for r in self.roles if r.group == "decoy"
            ],
        }


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


def _circuit_layers(kind: str, rng: np.random.Generator) -> dict[str, int]:
    roles = CIRCUIT_ROLES[kind]
    if kind in ("induction", "multihop"):
        return dict(zip(roles, _chain(rng, len(roles)), strict=True))
    if kind == "redundant":
        reader = int(rng.integers(1, N_LAYERS))
        return {
            "retriever_1": int(rng.integers(reader)),
            "retriever_2": int(rng.integers(reader)),
            "reader": reader,
        }
    if kind == "suppression":
        prev = int(rng.integers(N_LAYERS - 1))
        return {"previous_token": prev, "mover": int(rng.integers(prev + 1, N_LAYERS)),
                "suppressor": int(rng.integers(prev + 1, N_LAYERS))}  # fmt: skip
    raise ValueError(f"unknown kind {kind!r}")


def place_roles(seed: int, rng: np.random.Generator) -> GroundTruth:
    """Draw every head's role for ``seed`` with ``rng`` (see the module docstring)."""
    grid = _Grid(rng)
    placed: list[HeadRole] = []
    layer_of: dict[tuple[str, str], int] = {}
    for kind in KINDS:
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
    }
    for role, count in DECOY_COUNTS.items():
        lowest = above.get(role, -1) + 1
        for _ in range(count):
            placed.append(HeadRole(grid.take(range(lowest, N_LAYERS)), "decoy", role))
    for layer, free in grid.free.items():
        for h in free:
            placed.append(HeadRole(layer * N_HEADS + h, "distractor", str(rng.choice(DISTRACTORS))))
    return GroundTruth(seed, tuple(sorted(placed, key=lambda r: r.head)))
