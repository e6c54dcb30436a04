"""Does a model really do the tasks? Behaviour metrics on held-out templates and fillers.

Used by the model card (``scripts/model_card.py``) and by the tests on the shipped
weights. Attention-pattern head scores follow the usual definitions:
induction score = attention from a repeated token to the token after its earlier copy;
previous-token score = attention to the previous position; duplicate-token score =
attention to the earlier copy itself; all on BOS + random tokens repeated twice.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from circuit_gym.heads import pattern_hook
from circuit_gym.models.loading import model_device
from circuit_gym.tasks import PromptBatch, Task, get_task


def _batches(model, task: Task, split: str, n_batches: int, batch_size: int) -> Iterator[PromptBatch]:
    """``task``'s batches of seeds 0 .. n_batches - 1 of ``split``, on the model's device (the
    seed is the batch's index, so every metric here reads the same, reproducible prompts)."""
    for seed in range(n_batches):
        yield task.batch(model, split, batch_size, seed).to(model_device(model))


@torch.no_grad()
def induction_metrics(model, split: str = "eval", n_batches: int = 4, batch_size: int = 16,
                      task: str = "induction") -> dict:  # fmt: skip
    """Losses on the two halves and per-head attention scores, on ``task``'s repeated prompts
    (``"induction"`` or ``"induction_seen"``)."""
    task = get_task(task)
    n_layers, n_heads = int(model.cfg.n_layers), int(model.cfg.n_heads)
    first, repeated = [], []
    scores = {k: np.zeros((n_layers, n_heads)) for k in ("induction", "previous_token", "duplicate_token")}
    names = {pattern_hook(layer) for layer in range(n_layers)}
    for batch in _batches(model, task, split, n_batches, batch_size):
        tokens = batch.tokens
        L = (tokens.shape[1] - 1) // 2
        logits, cache = model.run_with_cache(tokens, names_filter=lambda n: n in names)
        logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, tokens[:, 1:, None])[..., 0]
        first.append(float(-logp[:, 1:L].mean()))  # predicting tokens 2..L of the first half
        repeated.append(float(-logp[:, L + 1 :].mean()))  # predicting tokens 2..L of the repeat
        q = torch.arange(L + 1, 2 * L + 1, device=tokens.device)
        for layer in range(n_layers):
            pat = cache[pattern_hook(layer)]
            scores["induction"][layer] += pat[:, :, q, q - L + 1].mean((0, 2)).cpu().numpy() / n_batches
            scores["previous_token"][layer] += pat[:, :, q, q - 1].mean((0, 2)).cpu().numpy() / n_batches
            scores["duplicate_token"][layer] += pat[:, :, q, q - L].mean((0, 2)).cpu().numpy() / n_batches
    return {
        "loss_first_half": float(np.mean(first)), "loss_repeated_half": float(np.mean(repeated)),
        "head_scores": {k: np.round(v, 3).tolist() for k, v in scores.items()},
    }  # fmt: skip


@torch.no_grad()
def ioi_metrics(model, split: str = "eval", n_batches: int = 8, batch_size: int = 32) -> dict:
    task = get_task("ioi")
    correct, diffs = [], []
    for batch in _batches(model, task, split, n_batches, batch_size):
        d = task.score(model(batch.tokens), batch)
        diffs += d.tolist()
        correct += (d > 0).tolist()
    return {"accuracy": float(np.mean(correct)), "logit_diff": float(np.mean(diffs)), "prompts": len(diffs)}


@torch.no_grad()
def docstring_metrics(model, split: str = "eval", n_batches: int = 8, batch_size: int = 32) -> dict:
    """Top-1 over the vocabulary, and 3-way accuracy among the signature's parameters."""
    task = get_task("docstring")
    top1, three_way = [], []
    for batch in _batches(model, task, split, n_batches, batch_size):
        last = model(batch.tokens)[:, -1]
        answer = batch.answers[:, 0]
        top1 += (last.argmax(-1) == answer).tolist()
        cands = torch.cat([batch.distractors[:, 0], answer[:, None]], dim=1)  # answer is index 2
        three_way += (last.gather(-1, cands).argmax(-1) == 2).tolist()
    return {"top1_accuracy": float(np.mean(top1)), "three_way_accuracy": float(np.mean(three_way)),
            "three_way_chance": 1 / 3, "prompts": len(top1)}  # fmt: skip


@torch.no_grad()
def task_metrics(model, name: str, split: str = "test", n_batches: int = 8, batch_size: int = 16) -> dict:
    """Clean accuracy (``Task.correct``) and mean metric of any registered task."""
    task = get_task(name)
    acc, metric = [], []
    for batch in _batches(model, task, split, n_batches, batch_size):
        logits = model(batch.tokens)
        acc += task.correct(logits, batch).tolist()
        metric += task.score(logits, batch).tolist()
    return {"accuracy": float(np.mean(acc)), "metric": float(np.mean(metric)), "unit": task.unit,
            "prompts": len(acc)}  # fmt: skip
