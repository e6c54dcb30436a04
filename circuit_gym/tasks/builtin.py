"""The first built-in tasks: induction (two token pools), IOI and docstring completion.

Each works with any tokenizer in which its fillers are single tokens (the embedded
model's, by construction; GPT-2's for the name and parameter lists used here). Splits
use disjoint fillers and templates (``circuit_gym.tasks.fillers``).
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from circuit_gym.tasks import fillers as F
from circuit_gym.tasks.base import (
    PromptBatch,
    answer_logprob,
    logit_diff,
    next_token_batch,
    pick,
    register_metric_task,
    single_token_ids,
)

INDUCTION_LENGTH = 16  # random tokens before the repeat; prompt = BOS + 2 * 16 tokens


# ------------------------------------------------------------------------------ IOI
def make_ioi_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
    """'When Mary and John went to the store, John gave a drink to' -> ' Mary' (not ' John').

    A batch is one template in one name order, as in the IOI paper's template list: the
    indirect object first (ABBA) or second (BABA), drawn per batch. Mixing orders inside
    a batch would make the best head depend on the mix: on the embedded model head 1.0
    matters only for ABBA prompts, 2.1 for both. The counterfactual replaces all three
    names by three other names (the IOI paper's "ABC" distribution), so it carries the
    template but no answer.
    """
    ids = single_token_ids(tokenizer, F.NAMES)
    template = pick(rng, F.ioi_templates(split), "templates", split)
    io_first = bool(rng.random() < 0.5)
    pairs = F.ioi_name_pairs(split)
    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        io, s = pick(rng, pairs, "name pairs", split)
        a, b = (io, s) if io_first else (s, io)
        texts.append(template.format(A=a, B=b, S=s))
        others = [n for n in F.NAMES if n not in (io, s)]
        x, y, z = rng.choice(others, size=3, replace=False)
        cf_texts.append(template.format(A=x, B=y, S=z))
        answers.append([ids[io]])
        distractors.append([[ids[s]]])
    first, second = ("{IO}", "{S}") if io_first else ("{S}", "{IO}")
    shown = template.format(A=first, B=second, S="{S}")  # e.g. "When {IO} and {S} ..., {S} gave a drink to"
    return next_token_batch(tokenizer, "ioi", split, shown, texts, cf_texts, answers, distractors)


# ------------------------------------------------------------------------ docstring
def make_docstring_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
    """A signature with three parameters, a docstring documenting two, then ':param'.

    The answer is the third parameter; the distractors are the two already documented.
    The counterfactual uses three other parameter words throughout.
    """
    ids = single_token_ids(tokenizer, F.PARAM_WORDS)
    single_token_ids(tokenizer, F.FUNCTION_NAMES)
    template = pick(rng, F.docstring_templates(split), "templates", split)
    triples = F.docstring_param_triples(split)
    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        a, b, c = pick(rng, triples, "parameter triples", split)
        fn = F.FUNCTION_NAMES[int(rng.integers(len(F.FUNCTION_NAMES)))]
        texts.append(template.format(F=fn, A=a, B=b, C=c))
        others = [w for w in F.PARAM_WORDS if w not in (a, b, c)]
        x, y, z = rng.choice(others, size=3, replace=False)
        cf_texts.append(template.format(F=fn, A=x, B=y, C=z))
        answers.append([ids[c]])
        distractors.append([[ids[a], ids[b]]])
    return next_token_batch(tokenizer, "docstring", split, template, texts, cf_texts, answers, distractors)


# ------------------------------------------------------------------------ induction
# Two induction tasks share one prompt form and differ in the token ids they copy:
# - ``induction``: each split draws from its own third of the vocabulary, so the embedded
#   model's training (random repeats over the train third only) never copied an eval or
#   test token. Copying ids never seen copied is what GPT-2 does; the embedded 12 x 12
#   model does not (top-1 0.01, model card), so this task fails its inclusion gate there.
# - ``induction_seen``: every split draws from the *copy pool*, the train third of the ids,
#   which the embedded model was trained to copy; the splits are disjoint thirds of that
#   pool. The model's training data hold random repeats of these ids (never these
#   prompts: the sequences are random), so this task measures the induction circuit the
#   model has, not generalisation of copying to new ids.
def induction_token_pool(tokenizer, split: str) -> np.ndarray:
    """Ordinary (non-special) token ids of a split: disjoint thirds of the vocabulary."""
    return _ordinary_ids(tokenizer, lambda h: F.SPLITS[h % 3] == split)


def copy_pool(tokenizer) -> np.ndarray:
    """The token ids run D of the embedded model (``toy_d``) was trained to copy: the train third."""
    return induction_token_pool(tokenizer, "train")


def ordinary_token_pool(tokenizer) -> np.ndarray:
    """Every ordinary (non-special) token id: what run F's random repeats copy (all three thirds)."""
    return _ordinary_ids(tokenizer, lambda h: True)


def seen_token_pool(tokenizer, split: str) -> np.ndarray:
    """A split's token ids for ``induction_seen``: disjoint thirds of :func:`copy_pool`."""
    pool = copy_pool(tokenizer)
    return pool[[F.SPLITS[(_token_hash(int(i)) // 3) % 3] == split for i in pool]]


def _ordinary_ids(tokenizer, keep) -> np.ndarray:
    special = set(tokenizer.all_special_ids)
    ids = [i for i in range(len(tokenizer)) if i not in special and keep(_token_hash(i))]
    return np.array(ids, dtype=np.int64)


def _token_hash(token_id: int) -> int:
    return int.from_bytes(hashlib.blake2b(str(token_id).encode(), digest_size=2).digest(), "little")


def _repeat_batch(task: str, pool: np.ndarray, tokenizer, split: str, batch_size: int,
                  rng: np.random.Generator) -> PromptBatch:  # fmt: skip
    """BOS + random tokens + the same tokens again; score the repeated half.

    Metric positions are those whose next token is predictable by copying (the second
    token of the repeat onward). The counterfactual has a second half that does not
    repeat the first.
    """
    L = INDUCTION_LENGTH
    if len(pool) < 2 * L:
        raise ValueError(f"the {split!r} split has only {len(pool)} tokens for {task}")
    first = np.stack([rng.choice(pool, size=L, replace=False) for _ in range(batch_size)])
    other = np.stack([rng.choice(pool, size=L, replace=False) for _ in range(batch_size)])
    bos = np.full((batch_size, 1), tokenizer.bos_token_id)
    tokens = torch.from_numpy(np.concatenate([bos, first, first], axis=1))
    counterfactual = torch.from_numpy(np.concatenate([bos, first, other], axis=1))
    positions = torch.arange(L + 1, 2 * L)
    return PromptBatch(
        task=task, split=split, seed=0, template=f"<bos> x[{L}] x[{L}]", tokens=tokens,
        positions=positions, answers=tokens[:, positions + 1],
        distractors=torch.zeros((batch_size, len(positions), 0), dtype=torch.long),
        counterfactual=counterfactual,
    )  # fmt: skip


def make_induction_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
    """Repeated random tokens from the split's third of the vocabulary (ids never copied in training)."""
    return _repeat_batch(
        "induction", induction_token_pool(tokenizer, split), tokenizer, split, batch_size, rng
    )


def make_induction_seen_batch(
    tokenizer, split: str, batch_size: int, rng: np.random.Generator
) -> PromptBatch:
    """Repeated random tokens from the split's third of the copy pool (ids copied in training)."""
    return _repeat_batch(
        "induction_seen", seen_token_pool(tokenizer, split), tokenizer, split, batch_size, rng
    )


INDUCTION = register_metric_task("induction", make_induction_batch, answer_logprob,
                                 "repeated random tokens: copy what came next", family="copying")  # fmt: skip
INDUCTION_SEEN = register_metric_task(
    "induction_seen", make_induction_seen_batch, answer_logprob,
    "repeated random tokens from the ids the embedded model was trained to copy: copy what came next",
    family="copying",
)  # fmt: skip
IOI = register_metric_task("ioi", make_ioi_batch, logit_diff, "indirect object: IO logit minus S logit",
                           family="entities")  # fmt: skip
DOCSTRING = register_metric_task("docstring", make_docstring_batch, logit_diff, "next :param name vs documented ones",
                                 family="code")  # fmt: skip
