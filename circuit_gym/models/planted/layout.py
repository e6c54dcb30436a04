"""Where things live in a generated planted model: its shape, vocabulary and residual subspaces.

Every model of one generator version has the same :class:`Layout`; only which head does what
changes with the seed. The residual stream (``d_model`` dimensions) is split into named blocks,
each one dimension per *symbol* of the version's vocabulary (BOS + its words of
``circuit_gym.tasks.planted``) unless said otherwise:

- ``TOK``: the current token (the embedding writes it);
- ``POS``: one dimension per position ``0 .. N_POS - 1`` (positions past the prompts'
  lengths get a small random vector: only the reference text is that long);
- ``FLAG``: one dimension, 1 on the tagged letters (the redundant circuit's cue);
- ``ANCHOR`` (version 3): one dimension holding a large constant at every position, which
  nothing reads: it dominates every LayerNorm's scale, so a LayerNorm divides by nearly the same
  number at every position and layer (the fix of version 2's defect, docs/planted.md);
- ``PREV_INDUCTION``, ``HOP1``, ``HOP2``, ``PREV_SUPPRESSION`` (and, version 3,
  ``PREV_SELF_REPAIR``, ``DONE``): private channels of the circuits (a symbol identity written
  by one circuit head, read by the next); ``AND_LEFT``, ``AND_RIGHT`` (version 3): positions
  (``N_POS`` wide) written by the AND circuit's senders;
- ``ANSWER_REDUNDANT``: where the two redundant heads put the answer for their reader;
- ``OUT``: read by the unembedding only (logit of each symbol); heads that predict write here.

Decoys and distractors write along the all-ones direction, which LayerNorm removes
(:func:`~circuit_gym.models.planted.heads.move_unread`): no block is needed for what nothing reads.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from circuit_gym.models.loading import embedded_dir
from circuit_gym.tasks.planted import WORDS, WORDS_V3, vocabulary_ids

N_LAYERS, N_HEADS = 12, 12  # GPT-2 small's head grid: 144 heads with GPT-2's flat ids
N_CTX = 48  # the general-damage reference rows are 48 tokens
N_POS = 16  # one-hot positions: every planted prompt is shorter
TOKENIZER_MODEL = "toy"  # the planted models use the embedded model's tokenizer
SYMBOL_WIDE, POSITION_WIDE = "symbol", "position"  # block widths that depend on the vocabulary


@dataclass(frozen=True)
class Layout:
    """The vocabulary (``words``, BOS first as symbol 0) and the residual blocks of one version."""

    words: tuple[str, ...]
    blocks: tuple[tuple[str, str | int], ...]  # (name, width: SYMBOL_WIDE, POSITION_WIDE or an int)

    @functools.cached_property
    def symbols(self) -> tuple[str, ...]:
        return ("BOS", *self.words)  # index = dimension inside a symbol-wide block

    @property
    def n_symbols(self) -> int:
        return len(self.symbols)

    @property
    def d_head(self) -> int:
        return max(self.n_symbols, N_POS)  # a head can move a whole symbol identity or a position

    @functools.cached_property
    def block_start(self) -> dict[str, int]:
        start, offset = {}, 0
        for name, width in self.blocks:
            start[name] = offset
            offset += (
                self.n_symbols if width == SYMBOL_WIDE else N_POS if width == POSITION_WIDE else int(width)
            )
        start["_end"] = offset
        return start

    @property
    def d_model(self) -> int:
        return self.block_start["_end"]

    def has(self, block: str) -> bool:
        return any(name == block for name, _ in self.blocks)

    def dim(self, block: str, symbol: str | int = 0) -> int:
        """The residual dimension of ``symbol`` (a word, ``"BOS"`` or an index) in ``block``."""
        return self.block_start[block] + (self.symbols.index(symbol) if isinstance(symbol, str) else symbol)

    def symbol(self, word: str) -> int:
        return self.symbols.index(word)

    def symbol_token_ids(self) -> tuple[int, ...]:
        """Token id of each symbol under the planted models' tokenizer (BOS first)."""
        bos, ids = _tokenizer_ids()
        return (bos, *(ids[w] for w in self.words))

    def config(self) -> dict:
        """The TransformerLens-native ``config.json`` of every model of this layout."""
        return {
            "n_layers": N_LAYERS, "n_heads": N_HEADS, "d_model": self.d_model, "d_head": self.d_head,
            "n_ctx": N_CTX, "d_vocab": d_vocab(), "attn_only": True, "normalization_type": "LN",
            "positional_embedding_type": "standard", "act_fn": "gelu", "architecture": "TransformerLensNative",
        }  # fmt: skip


S, P = SYMBOL_WIDE, POSITION_WIDE
LAYOUT_V2 = Layout(WORDS, (
    ("TOK", S), ("POS", P), ("FLAG", 1), ("PREV_INDUCTION", S), ("HOP1", S), ("HOP2", S),
    ("PREV_SUPPRESSION", S), ("ANSWER_REDUNDANT", S), ("OUT", S),
))  # fmt: skip
LAYOUT_V3 = Layout(WORDS_V3, (
    ("TOK", S), ("POS", P), ("FLAG", 1), ("ANCHOR", 1), ("PREV_INDUCTION", S), ("HOP1", S), ("HOP2", S),
    ("PREV_SUPPRESSION", S), ("ANSWER_REDUNDANT", S), ("PREV_SELF_REPAIR", S), ("DONE", S),
    ("AND_LEFT", P), ("AND_RIGHT", P), ("OUT", S),
))  # fmt: skip


@functools.cache
def tokenizer_dir():
    return embedded_dir(TOKENIZER_MODEL)


@functools.cache
def d_vocab() -> int:
    return int(json.loads((tokenizer_dir() / "config.json").read_text())["d_vocab"])


@functools.cache
def _tokenizer_ids() -> tuple[int, dict[str, int]]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    return int(tokenizer.bos_token_id), vocabulary_ids(tokenizer)
