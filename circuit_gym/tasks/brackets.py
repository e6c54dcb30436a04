"""Code behaviour: close the innermost open bracket.

``x = run(file, [index, count`` -> ``]`` (not ``)`` or ``}``): the model has to find the
innermost unclosed bracket a few tokens back. One variable/function shape per batch;
held-out splits are unseen combinations (``circuit_gym.tasks.fillers``).
"""

from __future__ import annotations

import numpy as np

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


def bracket_text(var: str, fn: str, bracket: str, outer: str, in1: str, in2: str) -> str:
    return f"{var} = {fn}({outer}, {bracket}{in1}, {in2}"


def make_brackets_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
    """The answer closes the inner bracket; distractors are the other two closers.

    The counterfactual opens another kind of inner bracket (another answer).
    """
    closers = single_token_ids(tokenizer, tuple(F.BRACKET_PAIRS.values()), prefix="")
    words = F.BRACKET_IDENTIFIERS[:12]
    single_token_ids(tokenizer, words, prefix="")
    single_token_ids(tokenizer, words)
    pool = same_frame(rng, F.bracket_items(split), "bracket items", split)
    var = pool[0][0]
    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        _, fn, bracket, outer, in1, in2 = pool[int(rng.integers(len(pool)))]
        texts.append(bracket_text(var, fn, bracket, outer, in1, in2))
        others = [b for b in F.BRACKET_PAIRS if b != bracket]
        cf_texts.append(bracket_text(var, fn, others[int(rng.integers(2))], outer, in1, in2))
        answer = F.BRACKET_PAIRS[bracket]
        answers.append([closers[answer]])
        distractors.append([[closers[c] for c in F.BRACKET_PAIRS.values() if c != answer]])
    template = bracket_text(var, "{fn}", "{bracket}", "{a}", "{b}", "{c}")
    return next_token_batch(tokenizer, "brackets", split, template, texts, cf_texts, answers, distractors)


BRACKETS = register_task(
    Task("brackets", make_brackets_batch, logit_diff, "close the innermost bracket: ] vs ) vs }",
         family="code", unit="logit difference")
)  # fmt: skip
