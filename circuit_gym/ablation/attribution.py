"""Attribution patching: every head's first-order ablation effect from one backward pass.

For a scalar ``score(logits)`` and each head's output ``z`` (``hook_z``), the estimated
change of the score when the head's output is replaced by ``replacement`` is
``grad_z(score) . (replacement - z)``, summed over batch, positions and ``d_head``. It is
exact for a score linear in ``z`` and an approximation otherwise (Nanda 2023,
"Attribution patching"). The greedy baseline scores task metrics with it; the prediction
features score the model's own top prediction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from circuit_gym.heads import hook_layer, z_hook


def attribution_patching(model, tokens: torch.Tensor, clean_z: Sequence[torch.Tensor],
                         replacement: Sequence[torch.Tensor],
                         score: Callable[[torch.Tensor], torch.Tensor]) -> np.ndarray:  # fmt: skip
    """Estimated change of ``score(logits)`` per head, flat head ids, float64.

    ``clean_z[layer]`` and ``replacement[layer]`` are ``[batch, pos, n_heads, d_head]``; the
    forward pass runs on ``tokens`` with zero perturbations added at every ``hook_z`` so the
    gradient is taken with respect to each layer's head outputs, through all later layers.
    """
    deltas = [torch.zeros_like(z, requires_grad=True) for z in clean_z]

    def add_delta(z: torch.Tensor, hook) -> torch.Tensor:
        return z + deltas[hook_layer(hook.name)]

    with torch.enable_grad():
        hooks = [(z_hook(layer), add_delta) for layer in range(len(clean_z))]
        logits = model.run_with_hooks(tokens, fwd_hooks=hooks)
        grads = torch.autograd.grad(score(logits), deltas)
    per_layer = [
        (g * (repl - z)).sum(dim=(0, 1, 3))  # sum over batch, pos, d_head -> per head
        for g, repl, z in zip(grads, replacement, clean_z, strict=True)
    ]
    return torch.cat(per_layer).detach().cpu().numpy().astype(np.float64)
