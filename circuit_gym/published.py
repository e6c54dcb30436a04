"""Published GPT-2 small heads, for comparing what agents find with the literature.

IOI circuit: Wang et al. 2023 (as encoded in the ACDC code base). Induction-like heads:
commonly reported strongly induction-like heads of GPT-2 small. Heads are "L.H".
"""

from __future__ import annotations

from circuit_gym import heads

GPT2_IOI_HEADS: dict[str, tuple[str, ...]] = {
    "name mover": ("9.9", "9.6", "10.0"),
    "backup name mover": ("10.10", "10.6", "10.2", "10.1", "11.2", "9.7", "9.0", "11.9"),
    "negative name mover": ("10.7", "11.10"),
    "s-inhibition": ("7.3", "7.9", "8.6", "8.10"),
    "induction": ("5.5", "5.8", "5.9", "6.9"),
    "duplicate token": ("0.1", "0.10", "3.0"),
    "previous token": ("2.2", "4.11"),
}
GPT2_INDUCTION_HEADS: tuple[str, ...] = ("5.1", "5.5", "6.9", "7.2", "7.10")


def head_id(name: str, n_heads: int = 12) -> int:
    """``"L.H"`` -> flat head id (:func:`circuit_gym.heads.head_id`)."""
    return heads.head_id(name, n_heads)


def published_sets(n_heads: int = 12) -> dict[str, set[int]]:
    """Flat head-id sets per task: every IOI-circuit head, and the induction heads."""
    return {
        "ioi": {head_id(h, n_heads) for heads in GPT2_IOI_HEADS.values() for h in heads},
        "induction": {head_id(h, n_heads) for h in GPT2_INDUCTION_HEADS},
    }
