"""The Task API: prompt batches, metrics, and a registry users can extend.

A task turns a tokenizer, a split and a seed into a :class:`PromptBatch` (one template
per batch, so every prompt has the same length and nothing is padded), and scores the
model's logits on it with a metric where **higher means better behaviour**. The metric
reads only the logits at ``batch.positions``; the ablation engine unembeds just those.

Add a task without editing the package::

    from circuit_gym.tasks import Task, register_task
    register_task(Task(name="my_task", make_batch=my_make_batch, metric=logit_diff))
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from circuit_gym.tasks.fillers import SPLITS


@dataclass(frozen=True)
class PromptBatch:
    """Prompts of one task, split and template, ready for the model.

    Attributes:
        tokens: ``[batch, seq]`` token ids, BOS first.
        positions: ``[P]`` positions whose next-token logits the metric reads.
        answers: ``[batch, P]`` correct next token at each metric position.
        distractors: ``[batch, P, D]`` wrong-but-plausible tokens (``D`` may be 0).
        counterfactual: ``[batch, seq]`` prompts with the answer changed, or None.
            Used by resample ablation.
    """

    task: str
    split: str
    seed: int
    template: str
    tokens: torch.Tensor
    positions: torch.Tensor
    answers: torch.Tensor
    distractors: torch.Tensor
    counterfactual: torch.Tensor | None = None

    def __post_init__(self) -> None:
        b, t = self.tokens.shape
        p = self.positions.shape[0]
        if self.answers.shape != (b, p):
            raise ValueError(f"answers must be [batch, P] = {(b, p)}, got {tuple(self.answers.shape)}")
        if self.distractors.shape[:2] != (b, p):
            raise ValueError(f"distractors must be [batch, P, D], got {tuple(self.distractors.shape)}")
        if self.counterfactual is not None and self.counterfactual.shape != (b, t):
            raise ValueError("counterfactual prompts must have the shape of tokens")
        if p == 0 or int(self.positions.max()) >= t or int(self.positions.min()) < 0:
            raise ValueError("positions must be non-empty and inside the prompt")

    @property
    def batch_size(self) -> int:
        return int(self.tokens.shape[0])

    def select(self, rows: torch.Tensor) -> PromptBatch:
        """The prompts at ``rows`` (indices into this batch, repeats allowed)."""
        cf = None if self.counterfactual is None else self.counterfactual[rows]
        return dataclasses.replace(self, tokens=self.tokens[rows], answers=self.answers[rows],
                                   distractors=self.distractors[rows], counterfactual=cf)  # fmt: skip

    def to(self, device: torch.device | str) -> PromptBatch:
        """The same batch with every tensor on ``device``."""
        cf = None if self.counterfactual is None else self.counterfactual.to(device)
        return dataclasses.replace(
            self, tokens=self.tokens.to(device), positions=self.positions.to(device),
            answers=self.answers.to(device), distractors=self.distractors.to(device), counterfactual=cf,
        )  # fmt: skip


MakeBatch = Callable[[object, str, int, np.random.Generator], PromptBatch]
Metric = Callable[[torch.Tensor, PromptBatch], torch.Tensor]
Accuracy = Callable[[torch.Tensor, PromptBatch], torch.Tensor]


def beats_distractors(logits: torch.Tensor, batch: PromptBatch) -> torch.Tensor:
    """Per prompt, the fraction of metric positions where the answer outscores every
    distractor (or, without distractors, is the top-1 prediction over the vocabulary)."""
    answer = logits.gather(-1, batch.answers[..., None])[..., 0]
    if batch.distractors.shape[-1] == 0:
        hit = logits.argmax(-1) == batch.answers
    else:
        hit = answer > logits.gather(-1, batch.distractors).amax(-1)
    return hit.float().mean(-1)


@dataclass(frozen=True)
class Task:
    """A behaviour to find circuits for.

    Attributes:
        name: registry key, e.g. ``"ioi"``.
        make_batch: ``(tokenizer, split, batch_size, rng) -> PromptBatch``; must give
            disjoint fillers per split and raise ``ValueError`` on bad input.
        metric: ``(logits[batch, P, vocab], batch) -> score[batch]``, higher = better.
        description: one line for listings.
        family: what kind of behaviour (``"copying"``, ``"entities"``, ``"code"``,
            ``"numeric"``, ``"syntax"``...); benchmarks hold out whole behaviours.
        unit: the metric's unit, shown with rewards (``"logit difference"``...).
        accuracy: ``(logits, batch) -> [batch]`` in [0, 1], the behaviour's clean accuracy
            (the inclusion gate reads it); default: the answer beats every distractor.
        version: bump when ``make_batch`` or ``metric`` change what they compute; it is
            part of every cache key.
    """

    name: str
    make_batch: MakeBatch
    metric: Metric
    description: str = ""
    family: str = "custom"
    unit: str = "metric units"
    accuracy: Accuracy = beats_distractors
    version: int = 1

    def batch(self, model, split: str, batch_size: int, seed: int) -> PromptBatch:
        """A validated prompt batch for ``model`` (its tokenizer and context length)."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        rng = np.random.default_rng([seed, _stable_id(self.name), SPLITS.index(split)])
        batch = dataclasses.replace(self.make_batch(model.tokenizer, split, batch_size, rng), seed=seed)
        n_ctx = int(model.cfg.n_ctx)
        if batch.tokens.shape[1] > n_ctx:
            raise ValueError(
                f"task {self.name!r}: prompts have {batch.tokens.shape[1]} tokens, more than the "
                f"model's context of {n_ctx}"
            )
        return batch

    def score(self, logits: torch.Tensor, batch: PromptBatch) -> torch.Tensor:
        """Per-prompt metric; accepts full ``[batch, seq, vocab]`` or sliced logits."""
        if logits.shape[1] != batch.positions.shape[0]:
            logits = logits[:, batch.positions]
        return self.metric(logits, batch)

    def correct(self, logits: torch.Tensor, batch: PromptBatch) -> torch.Tensor:
        """Per-prompt clean accuracy in [0, 1] (see ``accuracy``)."""
        if logits.shape[1] != batch.positions.shape[0]:
            logits = logits[:, batch.positions]
        return self.accuracy(logits, batch)


def _stable_id(name: str) -> int:
    """A seed component from the task name that, unlike hash(), is stable across runs."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


# ------------------------------------------------------------------------ registry
_REGISTRY: dict[str, Task] = {}


def register_task(task: Task, *, overwrite: bool = False) -> Task:
    """Make ``task`` available to ``get_task`` and to the environments by name."""
    if not isinstance(task, Task):
        raise TypeError(f"register_task expects a circuit_gym.tasks.Task, got {type(task).__name__}")
    if task.name in _REGISTRY and not overwrite:
        raise ValueError(f"a task named {task.name!r} is already registered (pass overwrite=True)")
    _REGISTRY[task.name] = task
    return task


def get_task(name: str) -> Task:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; registered tasks: {sorted(_REGISTRY)}") from None


def list_tasks() -> list[str]:
    return sorted(_REGISTRY)


# ------------------------------------------------------------------ building blocks
def single_token_ids(tokenizer, words: Sequence[str], *, prefix: str = " ") -> dict[str, int]:
    """Token id of ``prefix + word`` for each word; a clear error if any is not one token."""
    ids, bad = {}, []
    for w in words:
        enc = tokenizer.encode(prefix + w, add_special_tokens=False)
        if len(enc) == 1:
            ids[w] = enc[0]
        else:
            bad.append(repr(prefix + w))
    if bad:
        raise ValueError(
            f"these fillers are not single tokens of this tokenizer: {', '.join(bad)}. "
            "Every filler must be one token so that prompts of a template have one length."
        )
    return ids


def encode_prompts(tokenizer, texts: Sequence[str], task: str) -> torch.Tensor:
    """BOS + tokens for each text; all texts must have the same token length (no padding)."""
    if not texts:
        raise ValueError(f"task {task!r}: no prompts to encode")
    bos = tokenizer.bos_token_id
    rows = [[bos, *tokenizer.encode(t, add_special_tokens=False)] for t in texts]
    lengths = {len(r) for r in rows}
    if len(lengths) != 1:
        raise ValueError(f"task {task!r}: prompts of one template have different lengths {sorted(lengths)}")
    return torch.tensor(rows, dtype=torch.long)


def pick(rng: np.random.Generator, items, what: str, split: str):
    """One item drawn by ``rng``; a clear error if the split has none."""
    if len(items) == 0:
        raise ValueError(f"the {split!r} split has no {what}")
    return items[int(rng.integers(len(items)))]


def same_frame(rng: np.random.Generator, items, what: str, split: str, frame_of=lambda it: it[0]) -> list:
    """The items of a split that share one drawn item's frame (template, opening, ...): a
    batch uses one frame so every prompt has one token length."""
    frame = frame_of(pick(rng, items, what, split))
    return [it for it in items if frame_of(it) == frame]


def next_token_batch(tokenizer, task: str, split: str, template: str, texts: list[str], cf_texts: list[str],
                      answers: list, distractors: list) -> PromptBatch:  # fmt: skip
    """A batch whose metric reads the logits at the last position only."""
    tokens = encode_prompts(tokenizer, texts, task)
    return PromptBatch(
        task=task, split=split, seed=0, template=template, tokens=tokens,
        positions=torch.tensor([tokens.shape[1] - 1]),
        answers=torch.tensor(answers), distractors=torch.tensor(distractors),
        counterfactual=encode_prompts(tokenizer, cf_texts, task),
    )  # fmt: skip


def logit_diff(logits: torch.Tensor, batch: PromptBatch) -> torch.Tensor:
    """Answer logit minus the mean distractor logit, averaged over metric positions."""
    answer = logits.gather(-1, batch.answers[..., None])[..., 0]
    distract = logits.gather(-1, batch.distractors).mean(-1)
    return (answer - distract).mean(-1)


def answer_logprob(logits: torch.Tensor, batch: PromptBatch) -> torch.Tensor:
    """Mean log-probability of the answers (minus the loss of the correct tokens)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, batch.answers[..., None])[..., 0].mean(-1)


# The unit each shared metric is measured in: a task names its metric, and its rewards are shown
# in that metric's unit (written once here, not beside every task that uses the metric).
METRIC_UNITS: dict[Metric, str] = {logit_diff: "logit difference", answer_logprob: "log-probability (nats)"}


def register_metric_task(
    name: str, make_batch: MakeBatch, metric: Metric, description: str, family: str
) -> Task:
    """Register a task scored by one of the shared metrics (:data:`METRIC_UNITS`), in its unit."""
    return register_task(
        Task(name, make_batch, metric, description, family=family, unit=METRIC_UNITS[metric])
    )
