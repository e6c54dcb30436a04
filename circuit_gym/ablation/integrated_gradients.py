"""Integrated-gradients attribution of every head (the node-level EAP-IG of ``baselines.eap_ig``).

For an :class:`~circuit_gym.ablation.engine.AblationEngine` (its clean head outputs ``z``, its
replacement values ``z_ablated`` and its :class:`~circuit_gym.ablation.engine.Evaluation`), a
head's score is

    score(h) = (z_clean(h) - z_ablated(h)) . mean_{alpha} d m / d z(h) |_alpha

summed over prompts, positions and ``d_head``, with ``m`` the evaluation's score averaged over
the batch. At step ``alpha`` every head's output is set to ``z_ablated + alpha * (z -
z_ablated)`` (``z``: what the head computes in that pass), ``alpha = k / steps`` for ``k =
1..steps``; the ``steps`` copies of the batch run stacked, so the cost is **one** forward and
**one** backward pass. ``circuit_gym/baselines/eap_ig.py`` explains the method and its choices; this module
holds the computation so that the environments' causal features (``circuit_gym.envs.
causal_features``) use the same code with another score (the model's own top-1 vs top-2 margin).
"""

from __future__ import annotations

import numpy as np
import torch

from circuit_gym.ablation.engine import AblationEngine


def integrated_gradients(engine: AblationEngine, steps: int = 5) -> np.ndarray:
    """Integrated-gradients attribution of every head (flat ids, float64); higher = keeping
    the head raises the engine's score more."""
    if isinstance(steps, bool) or int(steps) < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    steps = int(steps)
    ev, model = engine.ev, engine.model
    batch = ev.tokens.shape[0]
    alphas = torch.arange(1, steps + 1, dtype=engine.clean_z[0].dtype, device=ev.tokens.device) / steps
    alpha_rows = alphas.repeat_interleave(batch)[:, None, None, None]  # copy k of the batch: alphas[k]
    ablated = [z.repeat(steps, 1, 1, 1) for z in engine.replacement]
    deltas = [torch.zeros_like(z, requires_grad=True) for z in ablated]

    def interpolate(z: torch.Tensor, hook) -> torch.Tensor:
        layer = int(hook.name.split(".")[1])
        return ablated[layer] + alpha_rows * (z - ablated[layer]) + deltas[layer]

    with torch.enable_grad():
        hooks = [(f"blocks.{layer}.attn.hook_z", interpolate) for layer in range(engine.n_layers)]
        logits = model.run_with_hooks(ev.tokens.repeat(steps, 1), fwd_hooks=hooks)
        rows = torch.arange(steps * batch, device=ev.tokens.device) % batch
        # the mean over the stacked batch = the mean over alphas of the batch-mean score
        metric = ev.score_rows(logits[:, ev.positions], rows).mean()
        grads = torch.autograd.grad(metric, deltas)
    per_layer = []
    for layer, grad in enumerate(grads):
        mean_grad = grad.view(steps, batch, *grad.shape[1:]).sum(0)  # sum over alphas of grad/(steps*batch)
        diff = engine.clean_z[layer] - engine.replacement[layer]
        per_layer.append((mean_grad * diff).sum(dim=(0, 1, 3)))
    return torch.cat(per_layer).detach().cpu().numpy().astype(np.float64)
