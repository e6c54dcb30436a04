"""Hand-written attention heads: what a head attends to (QK) and what it moves (OV).

A head is four matrices in the TransformerLens-native layout of one head (``q``, ``k``, ``v``:
``[d_head, d_model]``; ``o``: ``[d_model, d_head]``) and a query bias, written for one
:class:`~circuit_gym.models.planted.layout.Layout` with one set of :class:`Gains` (both come
with the generator version). Each function below writes one pattern into a
:class:`HeadWeights`; a head gets one attention pattern (optionally with a BOS fallback) and
one or two output maps.

Version 2's gains are in units of the LayerNorm'ed residual: a one-hot entry of the residual
reads as about 3-6 after ``ln1`` (the stream has a few unit entries among ``d_model``
dimensions), so ``attend`` squared over ``sqrt(d_head)`` makes a matched key win by e^10 or
more, and the BOS fallback sits in between a match and no match. Version 3's are derived
from its anchored LayerNorm scale (:func:`anchored_gains`): a match scores ``MATCH_SCORE``, the
fallback half of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from circuit_gym.models.planted.layout import N_POS, Layout

FALLBACK_COORD = 0  # d_head coordinate of the BOS fallback; identity matches skip BOS's coordinate


@dataclass(frozen=True)
class Gains:
    attend: float  # query and key gain of a match
    fallback: float  # query bias towards BOS when nothing matches: below a match, far above no match
    sink: float  # query bias of a BOS-sink distractor: it always attends BOS
    move: float  # output gain of a head that moves a symbol into a channel
    predict: float  # output gain of a head that writes a logit (OUT)
    copy_decoy: float  # output gain of a copy decoy (it writes at every position)


GAINS_V2 = Gains(attend=5.0, fallback=3.0, sink=12.0, move=0.6, predict=2.0, copy_decoy=0.25)
MATCH_SCORE = 40.0  # version 3: the attention score of one matched key (e^40 over an unmatched one)
FALLBACK_SHARE = 0.5  # version 3: the BOS fallback's score, as a share of one match's


def anchored_gains(layout: Layout, anchor: float) -> Gains:
    """Gains for ``layout`` with an ``anchor`` constant at every position: ``unit`` is what a
    one-hot entry reads after a LayerNorm (the anchor sets the scale), so a match scores
    ``MATCH_SCORE``, the BOS fallback half of it, a moved symbol is a unit entry again and a
    predicting head writes a logit of about 3."""
    d = layout.d_model
    mean = (anchor + 2) / d  # anchor, token and position entries
    unit = (1 - mean) / np.sqrt((anchor**2 + 2) / d - mean**2)
    attend = float(np.sqrt(MATCH_SCORE * np.sqrt(layout.d_head)) / unit)
    fallback = float(FALLBACK_SHARE * MATCH_SCORE * np.sqrt(layout.d_head) / (attend * unit))
    return Gains(attend=attend, fallback=fallback, sink=3 * fallback, move=float(1 / unit),
                 predict=float(3 / unit), copy_decoy=float(0.4 / unit))  # fmt: skip


@dataclass
class HeadWeights:
    layout: Layout
    gains: Gains
    q: np.ndarray = field(init=False)
    k: np.ndarray = field(init=False)
    v: np.ndarray = field(init=False)
    o: np.ndarray = field(init=False)
    q_bias: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        d_head, d_model = self.layout.d_head, self.layout.d_model
        self.q, self.k, self.v = (np.zeros((d_head, d_model), np.float32) for _ in range(3))
        self.o = np.zeros((d_model, d_head), np.float32)
        self.q_bias = np.zeros(d_head, np.float32)


# ------------------------------------------------------------------------ attention (QK)
def attend_previous(head: HeadWeights) -> None:
    """Position ``p + 1`` attends to position ``p`` (a previous-token head)."""
    dim, a = head.layout.dim, head.gains.attend
    for p in range(N_POS - 1):
        head.q[p, dim("POS", p + 1)] = a
        head.k[p, dim("POS", p)] = a


def attend_current(head: HeadWeights) -> None:
    """Every position attends to itself."""
    dim, a = head.layout.dim, head.gains.attend
    for p in range(N_POS):
        head.q[p, dim("POS", p)] = a
        head.k[p, dim("POS", p)] = a


def attend_same_symbol(head: HeadWeights, query_block: str, key_block: str) -> None:
    """Attend to the keys whose ``key_block`` symbol is the query's ``query_block`` symbol
    (BOS excluded), else to BOS: induction (``TOK`` -> ``PREV_*``) and the redundant reader."""
    dim, a = head.layout.dim, head.gains.attend
    for s in range(1, head.layout.n_symbols):
        head.q[s, dim(query_block, s)] = a
        head.k[s, dim(key_block, s)] = a
    _fallback(head)


def attend_cue(head: HeadWeights, query_dim: int, key_dim: int, row: int = 1) -> None:
    """At queries with ``query_dim`` set (a cue token), attend to the keys with ``key_dim``
    set, else to BOS."""
    head.q[row, query_dim] = head.gains.attend
    head.k[row, key_dim] = head.gains.attend
    _fallback(head)


def attend_cue_unless_done(head: HeadWeights, query_dim: int, key_dim: int, done_block: str,
                           symbols: Iterable[int], suppression: float) -> None:  # fmt: skip
    """:func:`attend_cue` (on the last coordinate, clear of the symbols'), minus ``suppression``
    times a match on the key's letter when the query's ``done_block`` already holds that letter:
    a backup that attends the cued letter only when no earlier head has moved it."""
    dim, a = head.layout.dim, head.gains.attend
    attend_cue(head, query_dim, key_dim, row=head.layout.d_head - 1)
    for s in symbols:
        head.q[s, dim(done_block, s)] = -suppression * a
        head.k[s, dim("TOK", s)] = a


def attend_between(head: HeadWeights, left_block: str, right_block: str, fallback_share: float) -> None:
    """Attend to the position ``p`` with ``p - 1`` in ``left_block`` and ``p + 1`` in
    ``right_block`` (two senders' positions), else to BOS; the BOS fallback is raised to
    ``fallback_share`` of two matches, so one sender's match alone loses to it (an AND)."""
    dim, a = head.layout.dim, head.gains.attend
    for r in range(1, N_POS - 2):  # row r: the left marker at r, the key at r + 1, the right at r + 2
        head.q[r, dim(left_block, r)] = a
        head.q[r, dim(right_block, r + 2)] = a
        head.k[r, dim("POS", r + 1)] = a
    # anchored gains put the fallback at FALLBACK_SHARE of one match
    _fallback(head, scale=fallback_share * 2 / FALLBACK_SHARE)


def attend_bos(head: HeadWeights) -> None:
    """Always attend to BOS (a sink)."""
    head.q_bias[FALLBACK_COORD] = head.gains.sink
    head.k[FALLBACK_COORD, head.layout.dim("TOK", "BOS")] = head.gains.attend


def _fallback(head: HeadWeights, scale: float = 1.0) -> None:
    head.q_bias[FALLBACK_COORD] = head.gains.fallback * scale
    head.k[FALLBACK_COORD, head.layout.dim("TOK", "BOS")] = head.gains.attend


# --------------------------------------------------------------------------- output (OV)
def move(head: HeadWeights, source: str, target: str, gain: float,
         symbols: Sequence[int] | None = None) -> None:  # fmt: skip
    """Copy the attended position's ``source`` symbol into ``target``, times ``gain``."""
    dim = head.layout.dim
    for s in range(head.layout.n_symbols) if symbols is None else symbols:
        head.v[s, dim(source, s)] = 1.0
        head.o[dim(target, s), s] = gain


def move_unread(head: HeadWeights, source: str, gain: float, symbols: Sequence[int] | None = None) -> None:
    """Read like :func:`move`, but write along the all-ones direction of the residual, which
    every LayerNorm removes (it subtracts the mean): an output as large as a moved symbol's
    that nothing downstream can read, exactly."""
    dim = head.layout.dim
    for s in range(head.layout.n_symbols) if symbols is None else symbols:
        head.v[s, dim(source, s)] = 1.0
        head.o[:, s] = gain / np.sqrt(head.layout.d_model)
