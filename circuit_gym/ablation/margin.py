"""A task-free metric: the clean model's own top-1 minus top-2 logit at the metric positions.

The causal observation (``circuit_gym.envs.causal_features``) scores heads and circuits with
this metric instead of the task's: it reads the prompts, the positions the task's metric
reads and the ablation's replacement values (zeros, means, or the counterfactual prompts'
activations), never the answer or distractor labels. For each prompt ``b`` and metric
position ``p``, ``top1[b, p]`` and ``top2[b, p]`` are the two highest logits of the *clean*
run, fixed once; under an ablation the metric is ``logit[top1] - logit[top2]`` at those same
tokens, averaged over positions (one number per prompt, higher = the clean prediction holds).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch

from circuit_gym.ablation.engine import AblationEngine, Evaluation


def top_two(logits: torch.Tensor) -> torch.Tensor:
    """Token ids of the two highest logits, ``[batch, P, 2]`` from logits ``[batch, P, vocab]``."""
    return logits.detach().topk(2, dim=-1).indices


def margin_rows(top2: torch.Tensor) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``score_rows`` of an :class:`Evaluation`: per row, ``logit[top1] - logit[top2]`` at the
    fixed clean ids ``top2`` ([batch, P, 2]), averaged over the metric positions."""

    def score_rows(logits: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        pair = logits.float().gather(-1, top2[rows])  # [rows, P, 2]
        return (pair[..., 0] - pair[..., 1]).mean(-1)

    return score_rows


def margin_engine(engine: AblationEngine, clean_logits: torch.Tensor) -> AblationEngine:
    """A copy of ``engine`` that scores with the top-1 vs top-2 margin; ``clean_logits``
    ``[batch, P, vocab]`` are the clean run's logits at the metric positions (they fix the ids).

    It shares the engine's cached clean residual stream, head outputs and replacement values
    (none of which involves a label), so it runs no pass of its own; ``engine`` is not changed.
    """
    ev = engine.ev
    scores = margin_rows(top_two(clean_logits).to(ev.tokens.device))
    out = copy.copy(engine)
    out.ev = Evaluation(ev.tokens, ev.positions, scores, ev.counterfactual)
    out.clean_rows = out.ev.score(clean_logits.detach())
    out.clean_score = float(out.clean_rows.mean())
    return out
