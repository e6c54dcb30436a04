"""Where things live in a generated planted model: its shape, vocabulary and residual subspaces.

Every generated model has the same layout; only which head does what changes with the seed.
The residual stream (``D_MODEL`` dimensions) is split into named blocks, each one dimension
per *symbol* of the synthetic vocabulary (BOS + the words of ``circuit_gym.tasks.planted``)
unless said otherwise:

- ``TOK``: the current token (the embedding writes it);
- ``POS``: one dimension per position ``0 .. N_POS - 1`` (positions past the prompts'
  lengths get a small random vector: only the reference text is that long);
- ``FLAG``: one dimension, 1 on the tagged letters (the redundant circuit's cue);
- ``PREV_INDUCTION``, ``HOP1``, ``HOP2``, ``PREV_SUPPRESSION``: private channels of the
  circuits (a symbol identity written by one circuit head, read by the next);
- ``ANSWER_REDUNDANT``: where the two redundant heads put the answer for their reader;
- ``OUT``: read by the unembedding only (logit of each symbol); heads that predict write here.

Decoys and distractors write along the all-ones direction, which LayerNorm removes
(:func:`~circuit_gym.models.planted.heads.move_unread`): no block is needed for what nothing reads.
"""

from __future__ import annotations

import functools
import json

from circuit_gym.models.loading import embedded_dir
from circuit_gym.tasks.planted import TAGGED, WORDS, vocabulary_ids

N_LAYERS, N_HEADS = 12, 12  # GPT-2 small's head grid: 144 heads with GPT-2's flat ids
N_CTX = 48  # the general-damage reference rows are 48 tokens
N_POS = 16  # one-hot positions: every planted prompt is shorter
TOKENIZER_MODEL = "toy"  # the planted models use the embedded model's tokenizer
SYMBOLS = ("BOS", *WORDS)  # index = dimension inside a symbol-wide block
N_SYMBOLS = len(SYMBOLS)
D_HEAD = max(N_SYMBOLS, N_POS)  # a head can move a whole symbol identity or match a position

_BLOCKS = (
    ("TOK", N_SYMBOLS), ("POS", N_POS), ("FLAG", 1), ("PREV_INDUCTION", N_SYMBOLS), ("HOP1", N_SYMBOLS),
    ("HOP2", N_SYMBOLS), ("PREV_SUPPRESSION", N_SYMBOLS), ("ANSWER_REDUNDANT", N_SYMBOLS),
    ("OUT", N_SYMBOLS),
)  # fmt: skip
BLOCK_START: dict[str, int] = {}
_offset = 0
for _name, _size in _BLOCKS:
    BLOCK_START[_name] = _offset
    _offset += _size
D_MODEL = _offset
CHANNELS = tuple(name for name, size in _BLOCKS if size == N_SYMBOLS)  # symbol-wide blocks


_SYMBOL_INDEX = {s: i for i, s in enumerate(SYMBOLS)}


def dim(block: str, symbol: str | int = 0) -> int:
    """The residual dimension of ``symbol`` (a word, ``"BOS"`` or an index) in ``block``."""
    return BLOCK_START[block] + (_SYMBOL_INDEX[symbol] if isinstance(symbol, str) else symbol)


def tagged_symbols() -> tuple[int, ...]:
    return tuple(SYMBOLS.index(w) for w in TAGGED)


@functools.cache
def tokenizer_dir():
    return embedded_dir(TOKENIZER_MODEL)


@functools.cache
def d_vocab() -> int:
    return int(json.loads((tokenizer_dir() / "config.json").read_text())["d_vocab"])


@functools.cache
def symbol_token_ids() -> tuple[int, ...]:
    """Token id of each symbol under the planted models' tokenizer (BOS first)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    ids = vocabulary_ids(tokenizer)
    return (int(tokenizer.bos_token_id), *(ids[w] for w in WORDS))


def config() -> dict:
    """The TransformerLens-native ``config.json`` of every generated model."""
    return {
        "n_layers": N_LAYERS, "n_heads": N_HEADS, "d_model": D_MODEL, "d_head": D_HEAD, "n_ctx": N_CTX,
        "d_vocab": d_vocab(), "attn_only": True, "normalization_type": "LN",
        "positional_embedding_type": "standard", "act_fn": "gelu", "architecture": "TransformerLensNative",
    }  # fmt: skip
