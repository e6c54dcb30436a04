"""Robustness tasks: new surface forms of the training tasks' mechanisms, on no benchmark list.

Issue 34 asks whether a learned policy finds a head it saw in training when the prompts look
different: each task here keeps a training task's mechanism (so its bottleneck should stay a
head that is frequent among the training tasks' oracle heads) and changes the surface:

- ``robust_pronoun_frames``, ``robust_agreement_openings``, ``robust_greater_than_frames``: the
  training task with frames (openings) the model never read (``PRONOUN_FRAMES``,
  ``AGREEMENT_OPENINGS``, ``GREATER_THAN_FRAMES``), filled with the fillers of one of the
  training task's own frames, so the splits stay the training task's disjoint combinations;
- ``robust_<task>_preamble`` (ioi, pronoun, agreement, greater_than, docstring): the training
  task's own prompts after a line of unrelated text (``PREAMBLES``, drawn per batch): every
  position moves, and every head has more to attend to;
- ``robust_docstring_four``: a docstring skeleton of four parameters, three documented; the
  answer is the fourth (distractors: the documented three).

Candidates, not all kept: ``scripts/robustness_tasks.py`` keeps a (task, model) cell only when the
model performs the task (the model cards' gate, on the eval split) and its bottleneck is frequent
in training (docs/robustness.md). The frames were chosen by clean accuracy on the eval split.

They are **not registered on import** (``circuit_gym.tasks`` never imports this module): a
process that wants them by name, e.g. in ``tasks=`` of an environment, calls
:func:`register_robustness_tasks`. So the package's suite, the benchmark's task lists and the
board never see them.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import torch

from circuit_gym.tasks import fillers as F
from circuit_gym.tasks.base import (
    MakeBatch,
    PromptBatch,
    Task,
    get_task,
    list_tasks,
    logit_diff,
    next_token_batch,
    pick,
    register_task,
    single_token_ids,
)
from circuit_gym.tasks.language import make_agreement_batch, make_pronoun_batch
from circuit_gym.tasks.numeric import make_greater_than_batch

# One line of ordinary text before the prompt. Each ends in a newline: the byte-level BPE
# pre-tokenizer cuts at it, so the preamble's tokens followed by the prompt's are exactly the
# tokens of the joined text (checked in tests/test_robustness_tasks.py).
PREAMBLES = (
    "It rained all day.\n",
    "Here is the next part of the story.\n",
    "Note: read this line with care.\n",
    "The meeting was short, and then we left.\n",
    "Chapter two.\n",
)
PREAMBLE_BASES = ("ioi", "pronoun", "agreement", "greater_than", "docstring")
PREFIX = "robust_"


def with_preamble(base: Task, preambles: tuple[str, ...] = PREAMBLES) -> MakeBatch:
    """A batch maker that draws one preamble per batch and puts it after BOS of ``base``'s prompts
    (and of their counterfactuals); metric positions move with the prompt, answers stay."""

    def make_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
        preamble = pick(rng, preambles, "preambles", split)
        inner = base.make_batch(tokenizer, split, batch_size, rng)
        ids = tokenizer.encode(preamble, add_special_tokens=False)
        if not ids:
            raise ValueError(f"the preamble {preamble!r} encodes to no tokens")
        extra = torch.tensor(ids, dtype=inner.tokens.dtype).expand(inner.batch_size, -1)

        def insert(tokens: torch.Tensor) -> torch.Tensor:
            return torch.cat([tokens[:, :1], extra, tokens[:, 1:]], dim=1)

        cf = None if inner.counterfactual is None else insert(inner.counterfactual)
        return dataclasses.replace(
            inner, task=PREFIX + base.name + "_preamble", template=preamble + inner.template,
            tokens=insert(inner.tokens), positions=inner.positions + len(ids), counterfactual=cf,
        )  # fmt: skip

    return make_batch


# A docstring skeleton of four parameters, three documented: the training task documents two of
# three. Everything in it but its shape is the docstring task's vocabulary.
DOCSTRING_FOUR_BODY = (
    'def {F}(self, {A}, {B}, {C}, {D}):\n    """{summary}\n\n'
    "    :param {A}: {d1}\n    :param {B}: {d2}\n    :param {C}: {d3}\n    :param"
)


def make_docstring_four_batch(
    tokenizer, split: str, batch_size: int, rng: np.random.Generator
) -> PromptBatch:
    """Four parameters, three documented, then ':param' -> the fourth (not the documented three).

    The parameter words of a prompt are a triple of the docstring task's ``split`` plus a fourth
    word, so no prompt shares its first three parameters with another split's. The counterfactual
    writes four other parameter words throughout (another answer, the same skeleton).
    """
    ids = single_token_ids(tokenizer, F.PARAM_WORDS)
    single_token_ids(tokenizer, F.FUNCTION_NAMES)
    summary = pick(rng, F.DOCSTRING_SUMMARIES, "summaries", split)
    d1, d2, d3 = (str(d) for d in rng.choice(F.DOCSTRING_DESCRIPTIONS, size=3, replace=False))
    skeleton = DOCSTRING_FOUR_BODY.replace("{summary}", summary)
    skeleton = skeleton.replace("{d1}", d1).replace("{d2}", d2).replace("{d3}", d3)
    triples = F.docstring_param_triples(split)
    texts, cf_texts, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        a, b, c = pick(rng, triples, "parameter triples", split)
        d = pick(rng, [w for w in F.PARAM_WORDS if w not in (a, b, c)], "fourth parameters", split)
        fn = pick(rng, F.FUNCTION_NAMES, "function names", split)
        texts.append(skeleton.format(F=fn, A=a, B=b, C=c, D=d))
        others = [w for w in F.PARAM_WORDS if w not in (a, b, c, d)]
        w, x, y, z = (str(o) for o in rng.choice(others, size=4, replace=False))
        cf_texts.append(skeleton.format(F=fn, A=w, B=x, C=y, D=z))
        answers.append([ids[d]])
        distractors.append([[ids[a], ids[b], ids[c]]])
    return next_token_batch(tokenizer, PREFIX + "docstring_four", split, skeleton, texts, cf_texts, answers,
                            distractors)  # fmt: skip


# New frames, each filled with the fillers of one frame of the training task (its first pronoun
# frame, its opening "The", its second greater-than frame), whose combinations are split-disjoint.
PRONOUN_FRAMES = ("After work, {N} was {J} at the {P} because", "That day {N} was {J} at the {P} because",
                  "Then {N} was {J} in the {P} because")  # fmt: skip
AGREEMENT_OPENINGS = {"Now the": ("is", "are"), "I see that the": ("is", "are"),
                      "Long ago the": ("was", "were"), "Then the": ("was", "were")}  # fmt: skip
GREATER_THAN_FRAMES = ("The {N} of {C}{Y} lasted to {C}",)


@functools.cache
def pronoun_frame_items(split: str) -> tuple[tuple[str, str, str, str], ...]:
    """(new frame, name, adjective, place): the split's combinations of the first pronoun frame."""
    combos = [it[1:] for it in F.pronoun_items(split) if it[0] == F.PRONOUN_FRAMES[0]]
    return tuple((frame, *c) for frame in PRONOUN_FRAMES for c in combos)


@functools.cache
def agreement_opening_items(split: str) -> tuple[tuple[str, str, str, str, bool], ...]:
    """(new opening, subject, preposition, attractor, plural): the split's combinations of "The"."""
    combos = [it[1:] for it in F.agreement_items(split) if it[0] == "The"]
    return tuple((opening, *c) for opening in AGREEMENT_OPENINGS for c in combos)


@functools.cache
def greater_than_frame_items(split: str) -> tuple[tuple[str, str, str, int], ...]:
    """(new frame, noun, century, YY): the split's combinations of the second greater-than frame."""
    combos = [it[1:] for it in F.gt_items(split) if it[0] == F.GT_FRAMES[1]]
    return tuple((frame, *c) for frame in GREATER_THAN_FRAMES for c in combos)


def _reframed(name: str, base_name: str, make_batch: MakeBatch, what: str) -> Task:
    base = get_task(base_name)
    return Task(name, make_batch, base.metric, f"{what} (robustness, issue 34)", family=base.family,
                unit=base.unit, accuracy=base.accuracy)  # fmt: skip


ROBUSTNESS_TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        _reframed(PREFIX + "pronoun_frames", "pronoun",
                  functools.partial(make_pronoun_batch, items=pronoun_frame_items, task_name=PREFIX + "pronoun_frames"),
                  "gendered pronoun in frames the model never read"),
        _reframed(PREFIX + "agreement_openings", "agreement",
                  functools.partial(make_agreement_batch, items=agreement_opening_items, openings=AGREEMENT_OPENINGS,
                                    task_name=PREFIX + "agreement_openings"),
                  "subject-verb agreement after openings the model never read"),
        _reframed(PREFIX + "greater_than_frames", "greater_than",
                  functools.partial(make_greater_than_batch, items=greater_than_frame_items,
                                    task_name=PREFIX + "greater_than_frames"),
                  "greater-than in a frame the model never read"),
        *(_reframed(PREFIX + b + "_preamble", b, with_preamble(get_task(b)), f"{b} after a line of unrelated text")
          for b in PREAMBLE_BASES),
        Task(PREFIX + "docstring_four", make_docstring_four_batch, logit_diff,
             "docstring with four parameters, three documented (robustness, issue 34)", family="code",
             unit="logit difference"),
    )
}  # fmt: skip
# The training task whose mechanism each robustness task keeps.
BASE_TASK = {name: name.removeprefix(PREFIX).rsplit("_", 1)[0] for name in ROBUSTNESS_TASKS}


def register_robustness_tasks() -> tuple[str, ...]:
    """Register the robustness tasks in this process (idempotent); returns their names."""
    for task in ROBUSTNESS_TASKS.values():
        if task.name not in list_tasks():
            register_task(task)
        elif get_task(task.name) is not task:
            raise ValueError(f"another task is registered as {task.name!r}")
    return tuple(ROBUSTNESS_TASKS)
