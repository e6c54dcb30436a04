"""Numeric behaviours: greater-than over years, and successor in ordered sequences.

Both are known circuits in GPT-2 small (greater-than: Hanna et al. 2023; successor heads:
Gould et al. 2023). A batch uses one frame (so every prompt has one token length);
held-out splits are unseen combinations of frame, filler and number
(``circuit_gym.tasks.fillers``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import torch

from circuit_gym.tasks import fillers as F
from circuit_gym.tasks.base import (
    PromptBatch,
    Task,
    logit_diff,
    next_token_batch,
    register_task,
    same_frame,
    single_token_ids,
)

TWO_DIGITS = tuple(f"{i:02d}" for i in range(100))


# ------------------------------------------------------------------- greater-than
@functools.lru_cache(maxsize=8)
def split_years(tokenizer) -> frozenset[tuple[str, int]]:
    """(century, YY) whose year ``" CCYY"`` this tokenizer cuts into ``" CC"`` + ``"YY"``.

    As in Hanna et al., years that a tokenizer writes otherwise (GPT-2 has ``" 1900"``
    as one token) are left out: the prompt must end in the century token alone.
    """
    return frozenset(
        (c, yy)
        for c in F.GT_CENTURIES
        for yy in (1, *F.GT_YEARS)
        if len(tokenizer.encode(f" {c}{yy:02d}", add_special_tokens=False)) == 2
    )


def make_greater_than_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator, *,
                            items: Callable[[str], tuple] = F.gt_items, task_name: str = "greater_than") -> PromptBatch:  # fmt: skip
    """'The war lasted from 1732 to 17' -> a two-digit year above 32.

    ``items`` and ``task_name``: another task's (frame, noun, century, YY) combinations
    (``circuit_gym.tasks.robustness``).

    ``answers`` holds the start year's two-digit token (the threshold) and
    ``distractors`` the 100 two-digit tokens 00..99 in numeric order: the metric
    compares probability mass above and below the threshold. The counterfactual
    starts in ``CC01`` (the paper's "01" baseline), which leaves almost every year valid.
    """
    digits = single_token_ids(tokenizer, TWO_DIGITS, prefix="")
    single_token_ids(tokenizer, F.GT_CENTURIES)
    single_token_ids(tokenizer, F.GT_NOUNS)
    candidates = [digits[d] for d in TWO_DIGITS]
    valid = split_years(tokenizer)
    usable = tuple(it for it in items(split) if (it[2], it[3]) in valid and (it[2], 1) in valid)
    pool = same_frame(rng, usable, "year items (of this tokenizer)", split)
    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        frame, noun, century, yy = pool[int(rng.integers(len(pool)))]
        texts.append(frame.format(N=noun, C=century, Y=f"{yy:02d}"))
        cf_texts.append(frame.format(N=noun, C=century, Y="01"))
        answers.append([digits[f"{yy:02d}"]])
        distractors.append([candidates])
    return next_token_batch(tokenizer, task_name, split, pool[0][0], texts, cf_texts, answers, distractors)


def _year_probabilities(logits: torch.Tensor, batch: PromptBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(probabilities of the years 00..99 [batch, P, 100], threshold index [batch, P])."""
    probs = torch.softmax(logits.float(), dim=-1).gather(-1, batch.distractors)
    threshold = (batch.distractors == batch.answers[..., None]).float().argmax(-1)
    return probs, threshold


def year_prob_diff(logits: torch.Tensor, batch: PromptBatch) -> torch.Tensor:
    """P(year > start) - P(year <= start), summed over the two-digit year tokens."""
    probs, threshold = _year_probabilities(logits, batch)
    above = torch.arange(probs.shape[-1], device=probs.device) > threshold[..., None]
    return (probs * above).sum(-1).sub((probs * ~above).sum(-1)).mean(-1)


def year_above_is_likelier(logits: torch.Tensor, batch: PromptBatch) -> torch.Tensor:
    """Clean accuracy: more probability on later years than on earlier or equal ones."""
    return (year_prob_diff(logits, batch) > 0).float()


# ----------------------------------------------------------------------- successor
def make_successor_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
    """'The order was Monday, Tuesday, Wednesday,' -> ' Thursday' (cyclic).

    Distractors are the three items already listed; the counterfactual starts the same
    sequence elsewhere, so its answer differs.
    """
    words = [w for seq in F.SUCCESSOR_SEQUENCES.values() for w in seq]
    ids = single_token_ids(tokenizer, words)
    # A batch holds one intro and one sequence (one token length).
    pool = same_frame(rng, F.successor_items(split), "sequence items", split, frame_of=lambda it: it[:2])
    intro, name, _ = pool[0]
    seq = F.SUCCESSOR_SEQUENCES[name]

    def listed(start: int) -> list[str]:
        return [seq[(start + i) % len(seq)] for i in range(4)]

    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        start = pool[int(rng.integers(len(pool)))][2]
        items = listed(start)
        texts.append(f"{intro} {items[0]}, {items[1]}, {items[2]},")
        shift = int(rng.integers(2, len(seq) - 1))  # never the same answer
        cf = listed((start + shift) % len(seq))
        cf_texts.append(f"{intro} {cf[0]}, {cf[1]}, {cf[2]},")
        answers.append([ids[items[3]]])
        distractors.append([[ids[w] for w in items[:3]]])
    template = f"{intro} {{X1}}, {{X2}}, {{X3}},  ({name})"
    return next_token_batch(tokenizer, "successor", split, template, texts, cf_texts, answers, distractors)


GREATER_THAN = register_task(
    Task("greater_than", make_greater_than_batch, year_prob_diff,
         "years: P(end year > start) - P(end year <= start)", family="numeric",
         unit="probability difference", accuracy=year_above_is_likelier)
)  # fmt: skip
SUCCESSOR = register_task(
    Task("successor", make_successor_batch, logit_diff, "next day / month / number vs the listed ones",
         family="sequences", unit="logit difference")
)  # fmt: skip
