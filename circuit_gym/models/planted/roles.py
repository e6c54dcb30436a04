"""The head roles of a generated planted model, and the weights each role gets.

A role is a recipe: one attention pattern and one output map of
:mod:`~circuit_gym.models.planted.heads`. Three groups:

- **circuit roles**, per kind (``circuit_gym.tasks.planted.KINDS``), in the order a circuit
  needs them (each reads what an earlier layer wrote):

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
from circuit_gym.models.planted.layout import SYMBOLS, dim
from circuit_gym.tasks.planted import LETTERS, MARKERS

LETTER_SYMBOLS = tuple(SYMBOLS.index(w) for w in LETTERS)
SUPPRESSION = 0.4  # the suppressor writes minus this share of what the mover writes

Attention = Callable[[H.HeadWeights], None]


def _cue(query: str, key_block: str, key_symbol: str | None) -> Attention:
    key_dim = dim(key_block) if key_symbol is None else dim(key_block, key_symbol)
    return lambda head: H.attend_cue(head, dim("TOK", query), key_dim)


# The attention pattern of every circuit role: (kind, role) -> pattern.
ATTENTION: dict[tuple[str, str], Attention] = {
    ("induction", "previous_token"): H.attend_previous,
    ("induction", "induction"): lambda head: H.attend_same_symbol(head, "TOK", "PREV_INDUCTION"),
    ("multihop", "previous_token"): H.attend_previous,
    ("multihop", "second_previous"): H.attend_previous,
    ("multihop", "mover"): _cue(MARKERS["multihop_query"], "HOP2", MARKERS["multihop_marker"]),
    ("redundant", "retriever_1"): _cue(MARKERS["redundant_query"], "FLAG", None),
    ("redundant", "retriever_2"): _cue(MARKERS["redundant_query"], "FLAG", None),
    ("redundant", "reader"): lambda head: H.attend_same_symbol(head, "ANSWER_REDUNDANT", "TOK"),
    ("suppression", "previous_token"): H.attend_previous,
    ("suppression", "mover"): _cue(
        MARKERS["suppression_query"], "PREV_SUPPRESSION", MARKERS["suppression_marker"]
    ),
    ("suppression", "suppressor"): _cue(
        MARKERS["suppression_query"], "PREV_SUPPRESSION", MARKERS["suppression_marker"]
    ),
}
# What every circuit role writes: (kind, role) -> (source block, target block, gain, symbols).
OUTPUT: dict[tuple[str, str], tuple[str, str, float, tuple[int, ...] | None]] = {
    ("induction", "previous_token"): ("TOK", "PREV_INDUCTION", H.MOVE, None),
    ("induction", "induction"): ("TOK", "OUT", H.PREDICT, LETTER_SYMBOLS),
    ("multihop", "previous_token"): ("TOK", "HOP1", H.MOVE, None),
    ("multihop", "second_previous"): ("HOP1", "HOP2", H.MOVE, None),
    ("multihop", "mover"): ("TOK", "OUT", H.PREDICT, LETTER_SYMBOLS),
    ("redundant", "retriever_1"): ("TOK", "ANSWER_REDUNDANT", H.MOVE, LETTER_SYMBOLS),
    ("redundant", "retriever_2"): ("TOK", "ANSWER_REDUNDANT", H.MOVE, LETTER_SYMBOLS),
    ("redundant", "reader"): ("TOK", "OUT", H.PREDICT, LETTER_SYMBOLS),
    ("suppression", "previous_token"): ("TOK", "PREV_SUPPRESSION", H.MOVE, None),
    ("suppression", "mover"): ("TOK", "OUT", H.PREDICT, LETTER_SYMBOLS),
    ("suppression", "suppressor"): ("TOK", "OUT", -SUPPRESSION * H.PREDICT, LETTER_SYMBOLS),
}
CIRCUIT_ROLES = {
    "induction": ("previous_token", "induction"),
    "multihop": ("previous_token", "second_previous", "mover"),
    "redundant": ("retriever_1", "retriever_2", "reader"),
    "suppression": ("previous_token", "mover", "suppressor"),
}
# decoy role -> the circuit role whose attention it copies (decoy_copy: its own pattern)
DECOY_OF = {
    "decoy_previous_token": ("induction", "previous_token"),
    "decoy_induction": ("induction", "induction"),
    "decoy_multihop_mover": ("multihop", "mover"),
    "decoy_retriever": ("redundant", "retriever_1"),
    "decoy_reader": ("redundant", "reader"),
    "decoy_suppression_mover": ("suppression", "mover"),
}
DECOY_COUNTS = {
    "decoy_previous_token": 3, "decoy_induction": 2, "decoy_multihop_mover": 1, "decoy_retriever": 1,
    "decoy_reader": 1, "decoy_suppression_mover": 1, "decoy_copy": 3,
}  # fmt: skip
COPY_DECOY_GAIN = 0.25  # small: the copy decoys write at every position, all into one OUT entry
DISTRACTORS = ("bos_sink", "averaging", "current_token")
DISTRACTOR_GAIN = (0.05, 0.3)  # uniform range of a distractor's output gain (times MOVE's scale)


def head_weights(group: str, role: str, rng: np.random.Generator) -> H.HeadWeights:
    """The weights of one head of ``group`` (a kind, ``"decoy"`` or ``"distractor"``) and role."""
    head = H.HeadWeights()
    if group in CIRCUIT_ROLES:
        ATTENTION[(group, role)](head)
        source, target, gain, symbols = OUTPUT[(group, role)]
        H.move(head, source, target, gain, symbols)
    elif group == "decoy" and role == "decoy_copy":
        H.attend_current(head)
        H.move(head, "TOK", "OUT", COPY_DECOY_GAIN)
    elif group == "decoy":
        ATTENTION[DECOY_OF[role]](head)
        source, _, gain, symbols = OUTPUT[DECOY_OF[role]]
        H.move_unread(head, source, abs(gain), symbols)
    elif group == "distractor":
        {"bos_sink": H.attend_bos, "averaging": lambda h: None, "current_token": H.attend_current}[role](head)
        gain = float(rng.uniform(*DISTRACTOR_GAIN))
        H.move_unread(head, "TOK", gain)
    else:
        raise ValueError(f"unknown head group {group!r} (role {role!r})")
    return head
