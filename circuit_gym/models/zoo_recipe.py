"""The model zoo's recipe: which 12 x 12 models are trained, with which seed and placement.

Every member is trained by ``scripts/train_toy_model.py --recipe zoo`` (one public recipe,
one shared tokenizer) and differs in two drawn values: the training seed and
``identity_layers``, the number of first layers held as exact identities while the circuits
form (so its circuits sit in layers ``identity_layers`` and up). Without that knob a new seed
alone keeps every bottleneck in layers 0-1 (measured: docs/zoo.md).

Placements are drawn by a rule, not chosen: the public members take one value from each
stratum of :data:`PLACEMENT_STRATA` in an order and with values drawn by :data:`ZOO_SEED`, so
the zoo spans shallow to deep circuits. The private evaluation model draws its own from a
secret seed the maintainer keeps outside the repository (:func:`private_member`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ZOO_SEED = 2026
PLACEMENT_STRATA = ((0, 1), (2, 4), (5, 6), (7, 8))  # identity layers: shallow ... deep
STEPS = 8000  # as run D: phase 1 at run D's learning rates (5,000 steps did not form induction)
MAX_PHASE1_STEPS = 3500
SEED_LAYERS = 2
VOCAB = 3072  # the recall and comparison fillers need more merges than the toy's 2,048


@dataclass(frozen=True)
class ZooMember:
    """One model of the zoo: its name, training seed and placement knob."""

    name: str
    seed: int
    identity_layers: int
    head_dropout: float = 0.0  # the self-repair knob (zoo v2); 0: none, as every zoo v1 member

    def train_args(self, out: str, work: str, tokenizer: str) -> list[str]:
        """The arguments of ``scripts/train_toy_model.py`` that train this member."""
        return [
            "--out", out, "--work", work, "--recipe", "zoo", "--tokenizer", tokenizer,
            "--seed", str(self.seed), "--identity-layers", str(self.identity_layers),
            "--seed-layers", str(SEED_LAYERS), "--vocab", str(VOCAB), "--steps", str(STEPS),
            "--max-phase1-steps", str(MAX_PHASE1_STEPS), "--eval-every", "250",
        ] + (["--head-dropout", str(self.head_dropout)] if self.head_dropout else [])  # fmt: skip


def public_members(zoo_seed: int = ZOO_SEED) -> tuple[ZooMember, ...]:
    """The public zoo: one member per placement stratum, seeds 1, 2, ..."""
    rng = np.random.default_rng(zoo_seed)
    order = rng.permutation(len(PLACEMENT_STRATA))
    members = []
    for i, stratum in enumerate(order):
        lo, hi = PLACEMENT_STRATA[int(stratum)]
        members.append(ZooMember(f"zoo{i + 1}", seed=i + 1, identity_layers=int(rng.integers(lo, hi + 1))))
    return tuple(members)


def private_member(secret_seed: int) -> ZooMember:
    """The private evaluation model's draw: seed and placement from the maintainer's secret."""
    rng = np.random.default_rng([secret_seed, ZOO_SEED])
    lo, hi = PLACEMENT_STRATA[0][0], PLACEMENT_STRATA[-1][1]
    return ZooMember(
        "private", seed=int(rng.integers(1_000, 2**31)), identity_layers=int(rng.integers(lo, hi + 1))
    )


ZOO = public_members()

# The self-repair pilot (issue 41): one member's draw (zoo2's: seed 2, identity layers 3)
# trained again at two values of the head-dropout knob; zoo2 itself is the knob's 0.
PILOT_BASE = "zoo2"
PILOT_DROPOUTS = (0.1, 0.3)


def pilot_members() -> tuple[ZooMember, ...]:
    """The pilot's models: the base member's seed and placement, one per knob value."""
    base = next(m for m in ZOO if m.name == PILOT_BASE)
    return tuple(
        ZooMember(f"pilot_p{round(p * 100):02d}", base.seed, base.identity_layers, head_dropout=p)
        for p in PILOT_DROPOUTS
    )
