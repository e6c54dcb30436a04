"""The head roles of a generated planted model, and the weights each role gets.

A role is a recipe: one attention pattern and one or two output maps of
:mod:`~circuit_gym.models.planted.heads`. Three groups:

- **circuit roles**, per kind (``circuit_gym.tasks.planted.KINDS_V3``; a generator version
  places its own kinds), in the order a circuit needs them (each reads what an earlier layer wrote):

  ============  ===================================================================
  induction     ``previous_token`` (TOK -> PREV_INDUCTION), ``induction`` (the letter
                whose previous token is the current letter -> OUT)
  multihop      ``previous_token`` (TOK -> HOP1), ``second_previous`` (HOP1 of the
                previous position -> HOP2), ``mover`` (at ``=``: the position whose HOP2
                is ``->``, its letter -> OUT)
  redundant     ``retriever_1``, ``retriever_2`` (at ``:``: the tagged letter ->
                ANSWER_REDUNDANT, each alone enough), ``reader`` (the position holding
                the letter in ANSWER_REDUNDANT, its letter -> OUT)
  suppression   ``previous_token`` (TOK -> PREV_SUPPRESSION), ``mover`` (at ``!``: the
                position after ``#``, its letter -> OUT), ``suppressor`` (the same
                attention, minus 0.4 of that letter -> OUT)
  self_repair   ``previous_token`` (TOK -> PREV_SELF_REPAIR), ``primary`` (at ``+``: the
                position after ``*``, its letter -> OUT and -> DONE), ``backup`` (the same
                attention unless the letter is already in DONE: it acts only when the
                primary's output is gone; 0.8 of the primary's logit -> OUT)
  and           ``sender_left``, ``sender_right`` (at ``|``: the position of ``<`` / ``>``
                -> AND_LEFT / AND_RIGHT), ``receiver`` (the position right of the left
                marker and left of the right one, both at once; its letter -> OUT)
  ============  ===================================================================

- **decoys**: the attention pattern of a circuit role, exactly, and an output as large as
  the circuit head's, but along the direction every LayerNorm removes (nothing reads it);
  and ``decoy_copy`` heads that attend to the current token and raise its logit (a copying
  signature on a token that is never an answer nor a distractor, and the same in the
  counterfactual prompt);
- **distractors**: BOS sinks, averaging heads (uniform attention), current-token heads, all
  writing what nothing reads, at a random, smaller gain (the kinds of head the first planted model had).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from circuit_gym.models.planted import heads as H
from circuit_gym.models.planted.layout import N_POS, Layout
from circuit_gym.tasks.planted import LETTERS, MARKERS_V3

SUPPRESSION = 0.4  # the suppressor writes minus this share of what the mover writes
BACKUP_SHARE = 0.8  # the backup writes this share of the primary's logit: it repairs most of it
BACKUP_SUPPRESSION = 1.5  # a letter already in DONE costs the backup's match 1.5 matches: BOS wins
AND_FALLBACK = 0.75  # the AND receiver's fallback: 0.75 of two matches, above one match alone

Attention = Callable[[H.HeadWeights], None]


def _cue(query: str, key_block: str, key_symbol: str | None) -> Attention:
    def attend(head: H.HeadWeights) -> None:
        dim = head.layout.dim
        H.attend_cue(
            head, dim("TOK", query), dim(key_block) if key_symbol is None else dim(key_block, key_symbol)
        )

    return attend


def _backup(head: H.HeadWeights) -> None:
    dim = head.layout.dim
    H.attend_cue_unless_done(head, dim("TOK", M["self_repair_query"]), dim("PREV_SELF_REPAIR", M["self_repair_marker"]),
                             "DONE", letters(head.layout), BACKUP_SUPPRESSION)  # fmt: skip


M = MARKERS_V3
# The attention pattern of every circuit role: (kind, role) -> pattern.
ATTENTION: dict[tuple[str, str], Attention] = {
    ("induction", "previous_token"): H.attend_previous,
    ("induction", "induction"): lambda head: H.attend_same_symbol(head, "TOK", "PREV_INDUCTION"),
    ("multihop", "previous_token"): H.attend_previous,
    ("multihop", "second_previous"): H.attend_previous,
    ("multihop", "mover"): _cue(M["multihop_query"], "HOP2", M["multihop_marker"]),
    ("redundant", "retriever_1"): _cue(M["redundant_query"], "FLAG", None),
    ("redundant", "retriever_2"): _cue(M["redundant_query"], "FLAG", None),
    ("redundant", "reader"): lambda head: H.attend_same_symbol(head, "ANSWER_REDUNDANT", "TOK"),
    ("suppression", "previous_token"): H.attend_previous,
    ("suppression", "mover"): _cue(M["suppression_query"], "PREV_SUPPRESSION", M["suppression_marker"]),
    ("suppression", "suppressor"): _cue(M["suppression_query"], "PREV_SUPPRESSION", M["suppression_marker"]),
    ("self_repair", "previous_token"): H.attend_previous,
    ("self_repair", "primary"): _cue(M["self_repair_query"], "PREV_SELF_REPAIR", M["self_repair_marker"]),
    ("self_repair", "backup"): _backup,
    ("and", "sender_left"): _cue(M["and_query"], "TOK", M["and_left"]),
    ("and", "sender_right"): _cue(M["and_query"], "TOK", M["and_right"]),
    ("and", "receiver"): lambda head: H.attend_between(head, "AND_LEFT", "AND_RIGHT", AND_FALLBACK),
}  # fmt: skip
# What every circuit role writes: (kind, role) -> output maps, each (source block, target block,
# gain (a field of heads.Gains), times this, which symbols: "all", "letters" or "positions").
Output = tuple[str, str, str, float, str]
OUTPUT: dict[tuple[str, str], tuple[Output, ...]] = {
    ("induction", "previous_token"): (("TOK", "PREV_INDUCTION", "move", 1.0, "all"),),
    ("induction", "induction"): (("TOK", "OUT", "predict", 1.0, "letters"),),
    ("multihop", "previous_token"): (("TOK", "HOP1", "move", 1.0, "all"),),
    ("multihop", "second_previous"): (("HOP1", "HOP2", "move", 1.0, "all"),),
    ("multihop", "mover"): (("TOK", "OUT", "predict", 1.0, "letters"),),
    ("redundant", "retriever_1"): (("TOK", "ANSWER_REDUNDANT", "move", 1.0, "letters"),),
    ("redundant", "retriever_2"): (("TOK", "ANSWER_REDUNDANT", "move", 1.0, "letters"),),
    ("redundant", "reader"): (("TOK", "OUT", "predict", 1.0, "letters"),),
    ("suppression", "previous_token"): (("TOK", "PREV_SUPPRESSION", "move", 1.0, "all"),),
    ("suppression", "mover"): (("TOK", "OUT", "predict", 1.0, "letters"),),
    ("suppression", "suppressor"): (("TOK", "OUT", "predict", -SUPPRESSION, "letters"),),
    ("self_repair", "previous_token"): (("TOK", "PREV_SELF_REPAIR", "move", 1.0, "all"),),
    ("self_repair", "primary"): (("TOK", "OUT", "predict", 1.0, "letters"), ("TOK", "DONE", "move", 1.0, "letters")),
    ("self_repair", "backup"): (("TOK", "OUT", "predict", BACKUP_SHARE, "letters"),),
    # BOS sits at position 0: a sender that falls back to BOS moves nothing
    ("and", "sender_left"): (("POS", "AND_LEFT", "move", 1.0, "positions"),),
    ("and", "sender_right"): (("POS", "AND_RIGHT", "move", 1.0, "positions"),),
    ("and", "receiver"): (("TOK", "OUT", "predict", 1.0, "letters"),),
}  # fmt: skip
CIRCUIT_ROLES = {
    "induction": ("previous_token", "induction"),
    "multihop": ("previous_token", "second_previous", "mover"),
    "redundant": ("retriever_1", "retriever_2", "reader"),
    "suppression": ("previous_token", "mover", "suppressor"),
    "self_repair": ("previous_token", "primary", "backup"),
    "and": ("sender_left", "sender_right", "receiver"),
}
# decoy role -> the circuit role whose attention it copies (decoy_copy: its own pattern)
DECOY_OF = {
    "decoy_previous_token": ("induction", "previous_token"),
    "decoy_induction": ("induction", "induction"),
    "decoy_multihop_mover": ("multihop", "mover"),
    "decoy_retriever": ("redundant", "retriever_1"),
    "decoy_reader": ("redundant", "reader"),
    "decoy_suppression_mover": ("suppression", "mover"),
    "decoy_self_repair_primary": ("self_repair", "primary"),
    "decoy_and_sender": ("and", "sender_left"),
}
DECOY_COUNTS_V2 = {
    "decoy_previous_token": 3, "decoy_induction": 2, "decoy_multihop_mover": 1, "decoy_retriever": 1,
    "decoy_reader": 1, "decoy_suppression_mover": 1, "decoy_copy": 3,
}  # fmt: skip
DECOY_COUNTS_V3 = {**DECOY_COUNTS_V2, "decoy_self_repair_primary": 1, "decoy_and_sender": 1}
DISTRACTORS = ("bos_sink", "averaging", "current_token")
DISTRACTOR_GAIN = (0.05, 0.3)  # uniform range of a distractor's output gain (times MOVE's scale)


def letters(layout: Layout) -> tuple[int, ...]:
    return tuple(layout.symbol(w) for w in LETTERS)


def _symbols(layout: Layout, which: str) -> tuple[int, ...] | None:
    return {"all": None, "letters": letters(layout), "positions": tuple(range(1, N_POS))}[which]


def head_weights(
    group: str, role: str, rng: np.random.Generator, layout: Layout, gains: H.Gains
) -> H.HeadWeights:
    """The weights of one head of ``group`` (a kind, ``"decoy"`` or ``"distractor"``) and role."""
    head = H.HeadWeights(layout, gains)
    if group in CIRCUIT_ROLES:
        ATTENTION[(group, role)](head)
        for source, target, gain, times, which in OUTPUT[(group, role)]:
            H.move(head, source, target, getattr(gains, gain) * times, _symbols(layout, which))
    elif group == "decoy" and role == "decoy_copy":
        H.attend_current(head)
        H.move(head, "TOK", "OUT", gains.copy_decoy)
    elif group == "decoy":
        ATTENTION[DECOY_OF[role]](head)
        source, _, gain, times, which = OUTPUT[DECOY_OF[role]][0]
        H.move_unread(head, source, abs(getattr(gains, gain) * times), _symbols(layout, which))
    elif group == "distractor":
        {"bos_sink": H.attend_bos, "averaging": lambda h: None, "current_token": H.attend_current}[role](head)
        H.move_unread(head, "TOK", float(rng.uniform(*DISTRACTOR_GAIN)))
    else:
        raise ValueError(f"unknown head group {group!r} (role {role!r})")
    return head
