"""The tasks of the generated planted-circuit models (``circuit_gym.models.planted``).

A small synthetic vocabulary, written as words of the embedded model's tokenizer (each a
single token there; the planted models use that tokenizer):

- 18 **letters** ``A``-``P``, ``R``, ``S`` (``Q`` is not a single token) fill the prompts;
  the six letters ``A``-``F`` are **tagged** (the redundant circuit looks for them);
- five **markers**, one role each: ``->`` (multi-hop marker), ``=`` (multi-hop query),
  ``:`` (redundant query), ``#`` (suppression marker), ``!`` (suppression query); generator
  version 3 adds five: ``*`` and ``+`` (self-repair marker and query), ``<``, ``>`` and ``|``
  (AND brackets and query);
- BOS (the tokenizer's, id 0).

One task per circuit kind (``KINDS``: generator version 2's four; ``KINDS_V3``: six); each prompt is ``BOS`` + fillers + the kind's cue; the metric
is the logit difference of the answer against three other letters of the prompt
(:func:`~circuit_gym.tasks.base.logit_diff`). Every prompt of a batch has one length; the
splits differ in template (length: train 10 tokens, eval 11, test 12). The counterfactual
prompt is another draw of the same template (other letters, another answer, the cue
elsewhere; induction's repeats the same letter), so resample ablation replaces a head's
output by one that carries another answer, while heads that only see the cue are unchanged.

========================  =========================================================  =========
task                      prompt (letters are random, distinct)                       answer
========================  =========================================================  =========
``planted_induction``     ``BOS K F A M C ... A``: the last letter occurred once      ``M``
``planted_multihop``      ``BOS K F -> A M C ... =``                                  ``M``: two after ``->``
``planted_redundant``     ``BOS K B G M H ... :``: one tagged letter (``A``-``F``)    ``B``
``planted_suppression``   ``BOS K F # M C ... !``                                     ``M``: after ``#``
``planted_self_repair``   ``BOS K F * M C ... +`` (a counterfactual's answer is       ``M``: after ``*``
                          absent from its prompt)
``planted_and``           ``BOS K F < M > C ... |`` (a counterfactual's brackets      ``M``: between
                          sit elsewhere)                                              the brackets
========================  =========================================================  =========

These tasks are registered when this module is imported (``circuit_gym.models.planted``
and the Planted environments import it), not with the built-in tasks: they need the
planted models, and the embedded model's suite and training should not see them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from circuit_gym.tasks.base import PromptBatch, Task, get_task, list_tasks, logit_diff, register_task
from circuit_gym.tasks.fillers import SPLITS

LETTERS = ("A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "R", "S")
TAGGED = LETTERS[:6]  # the redundant circuit's retrieval class
UNTAGGED = LETTERS[6:]
MARKERS = {"multihop_marker": "->", "multihop_query": "=", "redundant_query": ":",
           "suppression_marker": "#", "suppression_query": "!"}  # fmt: skip
# Generator version 3's two new kinds need five more markers (each a single token here too).
MARKERS_V3 = {**MARKERS, "self_repair_marker": "*", "self_repair_query": "+", "and_left": "<",
              "and_right": ">", "and_query": "|"}  # fmt: skip
WORDS = LETTERS + tuple(MARKERS.values())  # generator version 2's synthetic vocabulary, BOS aside
WORDS_V3 = LETTERS + tuple(MARKERS_V3.values())  # version 3's: version 2's words first
PROMPT_LENGTHS = dict(zip(SPLITS, (10, 11, 12), strict=True))  # BOS included
N_DISTRACTORS = 3
KINDS = ("induction", "multihop", "redundant", "suppression")  # generator version 2's (a retired board's)
KINDS_V3 = (*KINDS, "self_repair", "and")  # generator version 3's


def task_name(kind: str) -> str:
    return f"planted_{kind}"


def vocabulary_ids(tokenizer, words: tuple[str, ...] = WORDS_V3) -> dict[str, int]:
    """Word -> token id (``" A"`` is the token of ``A``); a clear error if one is not a single token."""
    ids, bad = {}, []
    for word in words:
        enc = tokenizer.encode(" " + word, add_special_tokens=False)
        if len(enc) == 1:
            ids[word] = int(enc[0])
        else:
            bad.append(repr(" " + word))
    if bad:
        raise ValueError(
            f"the planted vocabulary needs single tokens; not single tokens here: {', '.join(bad)}"
        )
    return ids


# A drawn prompt: its words (BOS excluded), the answer, and the letters it may use as distractors.
Draw = tuple[list[str], str, list[str]]


def _letters(rng: np.random.Generator, pool, n: int) -> list[str]:
    return [str(w) for w in rng.choice(pool, size=n, replace=False)]


def _induction(rng: np.random.Generator, length: int, like: Draw | None) -> Draw:
    """Distinct letters, then a repeat of one of them (not the last): the answer follows it.
    A counterfactual (``like`` given) repeats the same letter, followed by another answer."""
    while True:
        body = _letters(rng, LETTERS, length - 2)
        if like is not None:  # put like's repeated letter somewhere, not last
            cue = like[0][-1]
            if cue not in body:
                body[int(rng.integers(len(body) - 1))] = cue
            elif body.index(cue) == len(body) - 1:
                continue
        j = body.index(like[0][-1]) if like is not None else int(rng.integers(len(body) - 1))
        if like is None or body[j + 1] != like[1]:
            return [*body, body[j]], body[j + 1], [w for w in body if w not in (body[j], body[j + 1])]


def _after_marker(
    marker: str, query: str, hops: int
) -> Callable[[np.random.Generator, int, Draw | None], Draw]:
    """Letters with ``marker`` inserted; the answer is the letter ``hops`` after it; ``query`` last."""

    def draw(rng: np.random.Generator, length: int, like: Draw | None) -> Draw:
        letters = _letters(rng, LETTERS, length - 3)  # BOS, marker and query aside
        m = int(rng.integers(len(letters) - hops + 1))
        body = [*letters[:m], marker, *letters[m:]]
        answer = body[m + hops]
        return [*body, query], answer, [w for w in letters if w != answer]

    return draw


def _redundant(rng: np.random.Generator, length: int, like: Draw | None) -> Draw:
    """Untagged letters and exactly one tagged one (not ``like``'s: the counterfactual's differs)."""
    tagged = str(rng.choice([w for w in TAGGED if like is None or w != like[1]]))
    body = _letters(rng, UNTAGGED, length - 3)
    body.insert(int(rng.integers(len(body) + 1)), tagged)
    return [*body, MARKERS["redundant_query"]], tagged, [w for w in body if w != tagged]


def _self_repair(rng: np.random.Generator, length: int, like: Draw | None) -> Draw:
    """``BOS x.. * X x.. +`` (answer ``X``). A counterfactual's answer is a letter absent from
    ``like``'s prompt, so the primary head's resampled output raises no letter the metric reads."""
    if like is None:
        return _after_marker(MARKERS_V3["self_repair_marker"], MARKERS_V3["self_repair_query"], hops=1)(
            rng, length, None
        )
    answer = str(rng.choice([w for w in LETTERS if w not in like[0]]))
    letters = _letters(rng, [w for w in LETTERS if w != answer], length - 4)
    m = int(rng.integers(len(letters) + 1))
    body = [*letters[:m], MARKERS_V3["self_repair_marker"], answer, *letters[m:]]
    return [*body, MARKERS_V3["self_repair_query"]], answer, letters


def _and(rng: np.random.Generator, length: int, like: Draw | None) -> Draw:
    """``BOS x.. < Y > x.. |`` (answer ``Y``, between the brackets). A counterfactual puts its
    brackets at another position, so each sender's (positional) output differs from the prompt's."""
    letters = _letters(rng, LETTERS, length - 4)  # BOS, two brackets and the query aside
    taken = like[0].index(MARKERS_V3["and_left"]) if like is not None else None
    m = int(rng.choice([i for i in range(len(letters)) if i != taken]))
    body = [*letters[:m], MARKERS_V3["and_left"], letters[m], MARKERS_V3["and_right"], *letters[m + 1 :]]
    return [*body, MARKERS_V3["and_query"]], letters[m], [w for w in letters if w != letters[m]]


# kind -> draw(rng, length, like): a prompt, or with ``like`` its counterfactual (the same cue)
DRAWS: dict[str, Callable[[np.random.Generator, int, Draw | None], Draw]] = {
    "induction": _induction,
    "multihop": _after_marker(MARKERS["multihop_marker"], MARKERS["multihop_query"], hops=2),
    "redundant": _redundant,
    "suppression": _after_marker(MARKERS["suppression_marker"], MARKERS["suppression_query"], hops=1),
    "self_repair": _self_repair,
    "and": _and,
}
TEMPLATES = {
    "induction": "BOS x1 .. xn xj -> x(j+1)",
    "multihop": "BOS x.. -> y X x.. = -> X",
    "redundant": "BOS x.. T x.. : -> T (T tagged)",
    "suppression": "BOS x.. # X x.. ! -> X",
    "self_repair": "BOS x.. * X x.. + -> X",
    "and": "BOS x.. < Y > x.. | -> Y",
}


def make_batch_of(kind: str):
    """The ``make_batch`` of a kind's task (see the module docstring)."""
    draw = DRAWS[kind]

    def make_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        ids = vocabulary_ids(tokenizer)
        bos = tokenizer.bos_token_id
        length = PROMPT_LENGTHS[split]
        tokens, cf, answers, distractors = [], [], [], []
        for _ in range(batch_size):
            prompt = draw(rng, length, None)
            words, answer, others = prompt
            while True:  # the counterfactual carries another answer
                cf_words, cf_answer, _ = draw(rng, length, prompt)
                if cf_answer != answer:
                    break
            tokens.append([bos, *(ids[w] for w in words)])
            cf.append([bos, *(ids[w] for w in cf_words)])
            answers.append([ids[answer]])
            distractors.append([[ids[w] for w in _letters(rng, others, N_DISTRACTORS)]])
        return PromptBatch(
            task=task_name(kind), split=split, seed=0, template=TEMPLATES[kind],
            tokens=torch.tensor(tokens), positions=torch.tensor([length - 1]),
            answers=torch.tensor(answers), distractors=torch.tensor(distractors), counterfactual=torch.tensor(cf),
        )  # fmt: skip

    make_batch.__name__ = make_batch.__qualname__ = f"make_{kind}_batch"
    return make_batch


DESCRIPTIONS = {
    "induction": "planted induction: after a repeated letter, predict the letter that followed it",
    "multihop": "planted multi-hop: the letter two after '->' (three heads in a chain)",
    "redundant": "planted redundant: the one tagged letter (two heads that each suffice, then a reader)",
    "suppression": "planted suppression: the letter after '#' (a mover and a head that suppresses it)",
    "self_repair": "planted self-repair: the letter after '*' (a mover, and a backup that acts when it is ablated)",
    "and": "planted AND: the letter between '<' and '>' (a receiver whose query needs two senders at once)",
}
PLANTED_TASKS = {
    kind: Task(
        task_name(kind),
        make_batch_of(kind),
        logit_diff,
        DESCRIPTIONS[kind],
        family="planted",
        unit="logit difference",
    )  # fmt: skip
    for kind in KINDS_V3
}


def register_planted_tasks() -> None:
    """Register the six tasks (idempotent)."""
    for task in PLANTED_TASKS.values():
        if task.name not in list_tasks():
            register_task(task)
        elif get_task(task.name) is not task:
            raise ValueError(f"another task is registered as {task.name!r}")


register_planted_tasks()
