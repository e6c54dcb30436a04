"""Attribution and exact ablation **on top of a set of heads already ablated** (the knock-out track).

A gradient sees each head while every other head keeps its output. A backup head (one that
acts only when another head is ablated) then looks silent: its first-order effect is about
zero while the head it backs up works. Re-measured on the model with that head ablated, it is
the largest effect left. These functions measure every head **conditional on** ``ablated``,
a set of flat head ids whose ``hook_z`` output is replaced by the engine's replacement value
(the engine's ablation: zeros, means or the counterfactual prompts' activations):

- :func:`conditional_attribution`: attribution patching (Nanda 2023) on the ablated model, one
  forward and one backward pass: ``grad_z(score) . (replacement - z)`` with ``z`` each head's
  output in the ablated run (0 for heads already ablated);
- :func:`conditional_integrated_gradients`: EAP-IG at node level on the ablated model, the
  ``steps`` interpolation copies stacked in one forward and one backward pass; the path runs
  from every remaining head ablated to the ablated model (heads in ``ablated`` stay ablated
  along it);
(The exact metric of an ablated set is :mod:`circuit_gym.circuits.ablated_sets`'s: it runs circuits,
which sit above the engine.)

With ``ablated`` empty the first two are the package's ``attribution_patching`` and
``integrated_gradients``. The score is any function of the logits at the engine's metric
positions (the task metric, or the task-free margin of ``circuit_gym.ablation.margin``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch

from circuit_gym.ablation.engine import AblationEngine
from circuit_gym.heads import hook_layer, z_hook

# score(logits at the metric positions [rows, P, vocab], batch rows [rows]) -> per-row scores
RowScore = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _masks(engine: AblationEngine, ablated: Iterable[int]) -> list[torch.Tensor]:
    """Per layer, a ``[1, 1, n_heads, 1]`` bool mask of the heads in ``ablated``."""
    device = engine.ev.tokens.device
    masks = [torch.zeros(engine.n_heads, dtype=torch.bool, device=device) for _ in range(engine.n_layers)]
    for h in ablated:
        layer, head = engine.head_layer(int(h))
        masks[layer][head] = True
    return [m[None, None, :, None] for m in masks]


def conditional_attribution(engine: AblationEngine, ablated: Iterable[int], score_rows: RowScore,
                            on_logits: Callable[[torch.Tensor], None] | None = None) -> np.ndarray:  # fmt: skip
    """Estimated change of the batch-mean ``score_rows`` when each head is ablated on top of
    ``ablated`` (flat ids, float64; exactly 0 for heads in ``ablated``). One forward and one
    backward pass. ``on_logits`` receives the (detached) logits at the metric positions of the
    ablated run, so a caller can read them without a pass of its own."""
    ev, model = engine.ev, engine.model
    masks = _masks(engine, ablated)
    deltas = [torch.zeros_like(z, requires_grad=True) for z in engine.clean_z]
    current: list[torch.Tensor | None] = [None] * engine.n_layers

    def patch(z: torch.Tensor, hook) -> torch.Tensor:
        layer = hook_layer(hook.name)
        z = torch.where(masks[layer], engine.replacement[layer], z)
        current[layer] = z.detach()
        return z + deltas[layer]

    with torch.enable_grad():
        logits = model.run_with_hooks(
            ev.tokens, fwd_hooks=[(z_hook(layer), patch) for layer in range(engine.n_layers)]
        )
        at = logits[:, ev.positions]
        if on_logits is not None:
            on_logits(at.detach())
        rows = torch.arange(at.shape[0], device=at.device)
        grads = torch.autograd.grad(score_rows(at, rows).mean(), deltas)
    per_layer = [(g * (repl - z)).sum(dim=(0, 1, 3))
                 for g, repl, z in zip(grads, engine.replacement, current, strict=True)]  # fmt: skip
    return torch.cat(per_layer).detach().cpu().numpy().astype(np.float64)


def conditional_integrated_gradients(engine: AblationEngine, ablated: Iterable[int], score_rows: RowScore,
                                     steps: int = 5) -> np.ndarray:  # fmt: skip
    """EAP-IG of every head on the model with ``ablated`` ablated (flat ids, float64; higher =
    keeping the head raises the batch-mean score more; 0 for heads in ``ablated``). At step
    ``alpha = k / steps`` every remaining head outputs ``z_ablated + alpha * (z - z_ablated)``; a
    head's score is ``(z(1) - z_ablated) . mean_alpha grad`` with ``z(1)`` its output in the
    ablated model (the ``alpha = 1`` copy). One forward and one backward pass."""
    if isinstance(steps, bool) or int(steps) < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    steps = int(steps)
    ev, model = engine.ev, engine.model
    batch = ev.tokens.shape[0]
    masks = _masks(engine, ablated)
    alphas = torch.arange(1, steps + 1, dtype=engine.clean_z[0].dtype, device=ev.tokens.device) / steps
    alpha_rows = alphas.repeat_interleave(batch)[:, None, None, None]
    repl = [r.repeat(steps, 1, 1, 1) for r in engine.replacement]
    deltas = [torch.zeros_like(r, requires_grad=True) for r in repl]
    at_one: list[torch.Tensor | None] = [None] * engine.n_layers

    def interpolate(z: torch.Tensor, hook) -> torch.Tensor:
        layer = hook_layer(hook.name)
        z = torch.where(masks[layer], repl[layer], z)  # ablated heads stay ablated on the whole path
        at_one[layer] = z[(steps - 1) * batch :].detach()  # the alpha = 1 copy: the ablated model itself
        return repl[layer] + alpha_rows * (z - repl[layer]) + deltas[layer]

    with torch.enable_grad():
        hooks = [(z_hook(layer), interpolate) for layer in range(engine.n_layers)]
        logits = model.run_with_hooks(ev.tokens.repeat(steps, 1), fwd_hooks=hooks)
        rows = torch.arange(steps * batch, device=ev.tokens.device) % batch
        grads = torch.autograd.grad(score_rows(logits[:, ev.positions], rows).mean(), deltas)
    per_layer = []
    for layer, grad in enumerate(grads):
        mean_grad = grad.view(steps, batch, *grad.shape[1:]).sum(0)
        per_layer.append((mean_grad * (at_one[layer] - engine.replacement[layer])).sum(dim=(0, 1, 3)))
    return torch.cat(per_layer).detach().cpu().numpy().astype(np.float64)
