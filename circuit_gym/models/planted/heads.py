"""Hand-written attention heads: what a head attends to (QK) and what it moves (OV).

A head is four matrices in the TransformerLens-native layout of one head (``q``, ``k``, ``v``:
``[D_HEAD, D_MODEL]``; ``o``: ``[D_MODEL, D_HEAD]``) and a query bias. Each function below
writes one pattern into a :class:`HeadWeights`; a head gets one attention pattern (optionally
with a BOS fallback) and one output map. Residual dimensions come from
:mod:`~circuit_gym.models.planted.layout`.

Gains are in units of the LayerNorm'ed residual: a one-hot entry of the residual reads as
about 3-6 after ``ln1`` (the stream has a few unit entries among ``D_MODEL`` dimensions), so
``ATTEND`` squared over ``sqrt(D_HEAD)`` makes a matched key win by e^10 or more, and the
BOS fallback sits in between a match and no match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from circuit_gym.models.planted.layout import D_HEAD, D_MODEL, N_POS, N_SYMBOLS, dim

ATTEND = 5.0  # query and key gain of a match
FALLBACK = 3.0  # query bias towards BOS when nothing matches: below a match, far above no match
SINK = 12.0  # query bias of a BOS-sink distractor: it always attends BOS
MOVE = 0.6  # output gain of a head that moves a symbol into a channel (written entries of about 1)
PREDICT = 2.0  # output gain of a head that writes a logit (OUT)
FALLBACK_COORD = 0  # d_head coordinate of the BOS fallback; identity matches skip BOS's coordinate


@dataclass
class HeadWeights:
    q: np.ndarray = field(default_factory=lambda: np.zeros((D_HEAD, D_MODEL), np.float32))
    k: np.ndarray = field(default_factory=lambda: np.zeros((D_HEAD, D_MODEL), np.float32))
    v: np.ndarray = field(default_factory=lambda: np.zeros((D_HEAD, D_MODEL), np.float32))
    o: np.ndarray = field(default_factory=lambda: np.zeros((D_MODEL, D_HEAD), np.float32))
    q_bias: np.ndarray = field(default_factory=lambda: np.zeros(D_HEAD, np.float32))


# ------------------------------------------------------------------------ attention (QK)
def attend_previous(head: HeadWeights) -> None:
    """Position ``p + 1`` attends to position ``p`` (a previous-token head)."""
    for p in range(N_POS - 1):
        head.q[p, dim("POS", p + 1)] = ATTEND
        head.k[p, dim("POS", p)] = ATTEND


def attend_current(head: HeadWeights) -> None:
    """Every position attends to itself."""
    for p in range(N_POS):
        head.q[p, dim("POS", p)] = ATTEND
        head.k[p, dim("POS", p)] = ATTEND


def attend_same_symbol(head: HeadWeights, query_block: str, key_block: str) -> None:
    """Attend to the keys whose ``key_block`` symbol is the query's ``query_block`` symbol
    (BOS excluded), else to BOS: induction (``TOK`` -> ``PREV_*``) and the redundant reader."""
    for s in range(1, N_SYMBOLS):
        head.q[s, dim(query_block, s)] = ATTEND
        head.k[s, dim(key_block, s)] = ATTEND
    _fallback(head)


def attend_cue(head: HeadWeights, query_dim: int, key_dim: int) -> None:
    """At queries with ``query_dim`` set (a cue token), attend to the keys with ``key_dim``
    set, else to BOS."""
    head.q[1, query_dim] = ATTEND
    head.k[1, key_dim] = ATTEND
    _fallback(head)


def attend_bos(head: HeadWeights) -> None:
    """Always attend to BOS (a sink)."""
    head.q_bias[FALLBACK_COORD] = SINK
    head.k[FALLBACK_COORD, dim("TOK", "BOS")] = ATTEND


def _fallback(head: HeadWeights) -> None:
    head.q_bias[FALLBACK_COORD] = FALLBACK
    head.k[FALLBACK_COORD, dim("TOK", "BOS")] = ATTEND


# --------------------------------------------------------------------------- output (OV)
def move(head: HeadWeights, source: str, target: str, gain: float = MOVE,
         symbols: Sequence[int] | None = None) -> None:  # fmt: skip
    """Copy the attended position's ``source`` symbol into ``target``, times ``gain``."""
    for s in range(N_SYMBOLS) if symbols is None else symbols:
        head.v[s, dim(source, s)] = 1.0
        head.o[dim(target, s), s] = gain


def move_unread(
    head: HeadWeights, source: str, gain: float = MOVE, symbols: Sequence[int] | None = None
) -> None:
    """Read like :func:`move`, but write along the all-ones direction of the residual, which
    every LayerNorm removes (it subtracts the mean): an output as large as a moved symbol's
    that nothing downstream can read, exactly."""
    for s in range(N_SYMBOLS) if symbols is None else symbols:
        head.v[s, dim(source, s)] = 1.0
        head.o[:, s] = gain / np.sqrt(D_MODEL)
