"""Recall and comparison: two mechanisms besides copying.

- ``capital``: a fact stored in the weights ("The capital of France is" -> " Paris"), as in
  the factual-recall circuits of Meng et al. 2022 and Geva et al. 2023. Nothing in the prompt
  can be copied: the answer must come from what the model read in training.
- ``minimum``: the smallest of three two-digit numbers ("The smallest of 42, 17 and 63 is"
  -> " 17"): a head must *select* a token by comparing values, not by position or
  by a previous-token match.

One frame per batch, so every prompt has one token length; held-out splits are unseen
combinations (``circuit_gym.tasks.fillers``).
"""

from __future__ import annotations

import numpy as np

from circuit_gym.tasks import fillers as F
from circuit_gym.tasks.base import (
    PromptBatch,
    logit_diff,
    next_token_batch,
    register_metric_task,
    same_frame,
    single_token_ids,
)

_MAX_DRAWS = 10_000  # rejection sampling of minimum triples: a split holds ~15% of them


def make_capital_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
    """'The capital of France is' -> ' Paris' (not the counterfactual country's capital).

    The counterfactual names another country in the same frame, which flips the answer;
    its capital is the distractor.
    """
    single_token_ids(tokenizer, tuple(F.CAPITALS))
    cities = single_token_ids(tokenizer, tuple(F.CAPITALS.values()))
    pool = same_frame(rng, F.capital_items(split), "capital items", split)
    frame = pool[0][0]
    countries = tuple(F.CAPITALS)
    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        _, country = pool[int(rng.integers(len(pool)))]
        other = countries[int(rng.integers(len(countries)))]
        while other == country:
            other = countries[int(rng.integers(len(countries)))]
        texts.append(frame.format(X=country))
        cf_texts.append(frame.format(X=other))
        answers.append([cities[F.CAPITALS[country]]])
        distractors.append([[cities[F.CAPITALS[other]]]])
    return next_token_batch(tokenizer, "capital", split, frame, texts, cf_texts, answers, distractors)


def draw_minimum_triple(rng: np.random.Generator, frame: str, split: str) -> tuple[int, int, int]:
    """Three distinct numbers whose (frame, order) combination belongs to ``split``."""
    F.check_split(split)
    for _ in range(_MAX_DRAWS):
        triple = tuple(int(x) for x in rng.choice(F.MINIMUM_NUMBERS, size=3, replace=False))
        if F.minimum_split(frame, triple) == split:
            return triple  # type: ignore[return-value]
    raise ValueError(f"no minimum triple of the {split!r} split in {_MAX_DRAWS} draws")


def make_minimum_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
    """'The smallest of 42, 17 and 63 is' -> ' 17' (not ' 42' or ' 63').

    The distractors are the two larger numbers. The counterfactual draws another triple
    in the same frame, whose smallest number differs, which moves the answer.
    """
    numbers = single_token_ids(tokenizer, tuple(str(n) for n in F.MINIMUM_NUMBERS))
    frame = F.MINIMUM_FRAMES[int(rng.integers(len(F.MINIMUM_FRAMES)))]
    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        triple = draw_minimum_triple(rng, frame, split)
        other = draw_minimum_triple(rng, frame, split)
        while min(other) == min(triple):
            other = draw_minimum_triple(rng, frame, split)
        a, b, c = (str(n) for n in triple)
        texts.append(frame.format(A=a, B=b, C=c))
        cf_texts.append(frame.format(A=other[0], B=other[1], C=other[2]))
        answers.append([numbers[str(min(triple))]])
        distractors.append([[numbers[str(n)] for n in sorted(triple)[1:]]])
    return next_token_batch(tokenizer, "minimum", split, frame, texts, cf_texts, answers, distractors)


CAPITAL = register_metric_task("capital", make_capital_batch, logit_diff,
                               "factual recall: a country's capital city", family="knowledge")  # fmt: skip
MINIMUM = register_metric_task("minimum", make_minimum_batch, logit_diff,
                               "the smallest of three two-digit numbers", family="comparison")  # fmt: skip
