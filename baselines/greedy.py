"""Greedy baseline: rank heads by attribution patching, a one-shot gradient estimate.

For every head, the first-order estimate of ablating it is ``grad . (replacement - z)``,
with the gradient of the task metric (and of the reference loss) with respect to the
head's output ``hook_z``: one forward and one backward pass give all heads at once. The
estimated contrastive reward is ``-d_metric - lam * d_loss``.

This is a **white-box** baseline: unlike the policies, it reads the task metric of the
episode's prompts (not the oracle). ``compare_with_sweep`` reports how well its ranking
agrees with the exact sweep (Spearman correlation, top-1 agreement).

    python -m circuit_gym.baselines.greedy
"""

from __future__ import annotations

import numpy as np
import torch

from circuit_gym.ablation import contrastive_reward
from circuit_gym.ablation.engine import AblationEngine
from circuit_gym.stats import spearman


def _gradient_estimate(engine: AblationEngine) -> np.ndarray:
    """First-order change of the engine's score when each single head is ablated."""
    model, ev = engine.model, engine.ev
    deltas = [torch.zeros_like(z, requires_grad=True) for z in engine.clean_z]

    def add_delta(z: torch.Tensor, hook) -> torch.Tensor:
        return z + deltas[int(hook.name.split(".")[1])]

    with torch.enable_grad():
        hooks = [(f"blocks.{layer}.attn.hook_z", add_delta) for layer in range(engine.n_layers)]
        logits = model.run_with_hooks(ev.tokens, fwd_hooks=hooks)
        score = ev.score(logits[:, ev.positions]).mean()
        grads = torch.autograd.grad(score, deltas)
    est = [
        (g * (repl - z)).sum(dim=(0, 1, 3))  # sum over batch, pos, d_head -> per head
        for g, repl, z in zip(grads, engine.replacement, engine.clean_z, strict=True)
    ]
    # score is a batch mean, so grads already carry the 1/batch factor
    return torch.cat(est).detach().cpu().numpy().astype(np.float64)


def attribution_scores(env) -> np.ndarray:
    """Estimated contrastive reward of ablating each head in the env's current episode."""
    scorer = env.unwrapped.episode.scorer
    d_task = _gradient_estimate(scorer.task_engine)  # change of the task metric
    d_general = _gradient_estimate(scorer.general_engine)  # change of -loss
    return contrastive_reward(-d_task, -d_general, scorer.lam)  # the estimated damages


def compare_with_sweep(env) -> dict:
    """Rank agreement of the estimate with the exact single-head sweep, this episode."""
    est = attribution_scores(env)
    exact = env.unwrapped.episode.table.reward
    return {"spearman": spearman(est, exact), "top1_agree": int(np.argmax(est)) == int(np.argmax(exact))}


if __name__ == "__main__":
    from circuit_gym.baselines.common import evaluate_and_print

    evaluate_and_print("greedy", lambda obs, env: attribution_scores(env))
