"""Language behaviours: gendered pronouns and subject-verb agreement.

Gendered pronoun: Mathwin et al. 2023 (GPT-2 small). Agreement across an attractor noun
of the other number: Linzen et al. 2016; Finlayson et al. 2021. One frame per batch;
held-out splits are unseen combinations (``circuit_gym.tasks.fillers``).
"""

from __future__ import annotations

from collections.abc import Callable

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


def make_pronoun_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator, *,
                       items: Callable[[str], tuple] = F.pronoun_items, task_name: str = "pronoun") -> PromptBatch:  # fmt: skip
    """'Mary was tired at the park because' -> ' she' (not ' he').

    The counterfactual replaces the name by one of the other gender, which flips the
    answer. ``items`` and ``task_name``: another task's (frame, name, adjective, place) combinations
    (``circuit_gym.tasks.robustness``).
    """
    single_token_ids(tokenizer, F.FEMALE_NAMES + F.MALE_NAMES)  # a clear error if a name is not one token
    he_she = single_token_ids(tokenizer, ("he", "she"))
    pool = same_frame(rng, items(split), "pronoun items", split)
    frame = pool[0][0]
    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        _, name, adj, place = pool[int(rng.integers(len(pool)))]
        female = name in F.FEMALE_NAMES
        other = F.MALE_NAMES if female else F.FEMALE_NAMES
        texts.append(frame.format(N=name, J=adj, P=place))
        cf_texts.append(frame.format(N=other[int(rng.integers(len(other)))], J=adj, P=place))
        right, wrong = ("she", "he") if female else ("he", "she")
        answers.append([he_she[right]])
        distractors.append([[he_she[wrong]]])
    return next_token_batch(tokenizer, task_name, split, frame, texts, cf_texts, answers, distractors)


def make_agreement_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator, *,
                         items: Callable[[str], tuple] = F.agreement_items,
                         openings: dict[str, tuple[str, str]] = F.AGREEMENT_OPENINGS,
                         task_name: str = "agreement") -> PromptBatch:  # fmt: skip
    """'The keys near the door' -> ' are' (not ' is'): the subject, not the nearest noun.

    The attractor noun always has the other number. The counterfactual flips the
    subject's number (and the attractor's), which flips the answer. ``items``, ``openings``
    (opening -> singular and plural verb) and ``task_name``: another task's
    (``circuit_gym.tasks.robustness``).
    """
    nouns = F.AGREEMENT_NOUNS + tuple(n + "s" for n in F.AGREEMENT_NOUNS)
    single_token_ids(tokenizer, nouns)
    verbs = single_token_ids(tokenizer, sorted({v for pair in openings.values() for v in pair}))
    single_token_ids(tokenizer, F.AGREEMENT_PREPOSITIONS)
    pool = same_frame(rng, items(split), "agreement items", split)
    opening = pool[0][0]
    singular_verb, plural_verb = openings[opening]

    def text(subj: str, prep: str, attr: str, plural: bool) -> str:
        s, a = (subj + "s", attr) if plural else (subj, attr + "s")
        return f"{opening} {s} {prep} the {a}"

    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        _, subj, prep, attr, plural = pool[int(rng.integers(len(pool)))]
        texts.append(text(subj, prep, attr, plural))
        cf_texts.append(text(subj, prep, attr, not plural))
        right, wrong = (plural_verb, singular_verb) if plural else (singular_verb, plural_verb)
        answers.append([verbs[right]])
        distractors.append([[verbs[wrong]]])
    template = f"{opening} {{subject}} {{prep}} the {{attractor}} -> {singular_verb}/{plural_verb}"
    return next_token_batch(tokenizer, task_name, split, template, texts, cf_texts, answers, distractors)


PRONOUN = register_metric_task("pronoun", make_pronoun_batch, logit_diff,
                               "gendered pronoun: ' she'/' he' after a name", family="entities")  # fmt: skip
AGREEMENT = register_metric_task("agreement", make_agreement_batch, logit_diff,
                                 "subject-verb number across an attractor noun", family="syntax")  # fmt: skip
