"""GIM's backward rules (Edin et al. 2025, "GIM: Improved Interpretability for Large Language
Models", arXiv 2505.17630; PyPI ``gim-explain``), as forward hooks that change only the backward
pass, so that they wrap any gradient attribution run inside :func:`gim_backward`.

Why: a gradient sees one component at a time while the others stay put. Attention's softmax
repairs itself (lower one score and the pattern renormalises onto the rest; a saturated pattern
has a near-zero Jacobian), and LayerNorm's scale rescales what the others write, so one-pass
attribution underestimates the heads whose removal the model does notice. GIM's rules:

1. **Frozen norm scale**: every LayerNorm's scale (``hook_scale``: the standard deviation it
   divides by) is treated as a constant in the backward pass (forward unchanged);
2. **Temperature-scaled softmax gradient** (TSG): the attention softmax's backward uses the
   Jacobian of ``softmax(x / T)`` (``T = 2``), forward unchanged. Written on the pattern alone:
   ``softmax(x / T) = p^(1/T) / sum p^(1/T)`` for ``p = softmax(x)``; the hook passes on
   ``g' = s_T (g - <g, s_T>) / p``, which the softmax's own backward ``p (g' - <g', p>)`` turns
   into ``s_T (g - <g, s_T>)``, the package's rule (``<g', p> = 0``);
3. **Q/K/V gradient scaling**: gradients flowing back through queries, keys and values are
   multiplied by 1/4, 1/4 and 1/2 (the package's defaults), dividing the product rule's sum
   over interacting terms.

The package's MLP gate/up scaling has nothing to act on in attention-only models and is not
implemented. The package patches ``torch.softmax`` globally and targets ``HookedTransformer``;
here the rules are hooks on the TransformerBridge's hook points (``hook_scale``,
``hook_pattern``, ``hook_q``/``hook_k``/``hook_v``), so they touch only the model's attention
and norms, never a task metric's own softmax. :data:`GIM_OFF` installs the same hooks as
identities (T = 1, scales 1), which the tests use to check that the machinery is neutral.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.heads import pattern_hook


@dataclass(frozen=True)
class GimRules:
    """Which of GIM's rules apply (defaults: the published ones)."""

    freeze_norm: bool = True
    softmax_temperature: float = 2.0
    q_scale: float = 0.25
    k_scale: float = 0.25
    v_scale: float = 0.5

    def __post_init__(self) -> None:
        if not self.softmax_temperature > 0:
            raise ValueError(f"softmax_temperature must be > 0, got {self.softmax_temperature}")


GIM_DEFAULT = GimRules()
GIM_OFF = GimRules(freeze_norm=False, softmax_temperature=1.0, q_scale=1.0, k_scale=1.0, v_scale=1.0)


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; the gradient times ``scale`` backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad * ctx.scale, None


class _PatternAtTemperature(torch.autograd.Function):
    """Identity forward on an attention pattern ``p`` (softmax over the last dimension);
    backward: the gradient that makes the softmax's own backward give the Jacobian of
    ``softmax(x / T)`` (module docstring, rule 2)."""

    @staticmethod
    def forward(ctx, pattern: torch.Tensor, temperature: float) -> torch.Tensor:
        ctx.save_for_backward(pattern)
        ctx.temperature = temperature
        return pattern.view_as(pattern)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (p,) = ctx.saved_tensors
        p64 = p.double()
        powered = p64.pow(1.0 / ctx.temperature)
        s_t = powered / powered.sum(-1, keepdim=True).clamp_min(1e-300)
        g = grad.double()
        wanted = s_t * (g - (g * s_t).sum(-1, keepdim=True))
        # masked keys (p = 0) have s_T = 0 too: nothing to pass on
        out = torch.where(p64 > 0, wanted / p64.clamp_min(1e-300), torch.zeros_like(wanted))
        return out.to(grad.dtype), None


def scale_grad(x: torch.Tensor, scale: float) -> torch.Tensor:
    """``x`` whose gradient is multiplied by ``scale`` in the backward pass."""
    return _ScaleGrad.apply(x, float(scale))


def softmax_at_temperature_backward(pattern: torch.Tensor, temperature: float) -> torch.Tensor:
    """``pattern`` (a softmax output) whose backward through that softmax is the Jacobian of
    ``softmax(x / temperature)``."""
    return _PatternAtTemperature.apply(pattern, float(temperature))


def gim_hooks(n_layers: int, rules: GimRules = GIM_DEFAULT) -> list[tuple[str, Callable]]:
    """Forward hooks (TransformerBridge hook names) that apply ``rules`` to the backward pass."""
    hooks: list[tuple[str, Callable]] = []
    if rules.freeze_norm:
        names = [f"blocks.{layer}.ln1.hook_scale" for layer in range(n_layers)] + ["ln_final.hook_scale"]
        hooks += [(name, lambda scale, hook: scale.detach()) for name in names]
    temperature = float(rules.softmax_temperature)
    for layer in range(n_layers):
        hooks.append((pattern_hook(layer), lambda p, hook: softmax_at_temperature_backward(p, temperature)))
        for kind, scale in (("q", rules.q_scale), ("k", rules.k_scale), ("v", rules.v_scale)):
            hooks.append(
                (f"blocks.{layer}.attn.hook_{kind}", lambda x, hook, s=float(scale): scale_grad(x, s))
            )
    return hooks


@contextmanager
def gim_backward(model, rules: GimRules = GIM_DEFAULT) -> Iterator[None]:
    """Within the block, every backward pass through ``model`` follows ``rules`` (forward values
    unchanged). Works for any attribution that runs ``model`` inside it."""
    hooks = [(name, fn) for name, fn in gim_hooks(int(model.cfg.n_layers), rules) if name in model.hook_dict]
    with warnings.catch_warnings():
        # the bridge warns that an edited hook_scale leaves HF's fused norm: that is the point
        warnings.filterwarnings("ignore", message=".*hook_scale.*")
        with model.hooks(fwd_hooks=hooks):
            yield


def gim_attribution(model, tokens: torch.Tensor, clean_z: Sequence[torch.Tensor],
                    replacement: Sequence[torch.Tensor], score: Callable[[torch.Tensor], torch.Tensor],
                    rules: GimRules = GIM_DEFAULT) -> np.ndarray:  # fmt: skip
    """GIM at head level: attribution patching (:func:`~circuit_gym.ablation.attribution.
    attribution_patching`, same arguments and units) with the backward pass under ``rules``.
    One forward and one backward pass."""
    with gim_backward(model, rules):
        return attribution_patching(model, tokens, clean_z, replacement, score)


def gim_importance(engine, rules: GimRules = GIM_DEFAULT) -> np.ndarray:
    """GIM's estimate of how much ablating each head alone lowers an
    :class:`~circuit_gym.ablation.engine.AblationEngine`'s batch-mean score (higher = more
    important; the engine's replacement values are the ablation), flat head ids."""
    ev = engine.ev
    change = gim_attribution(engine.model, ev.tokens, engine.clean_z, engine.replacement,
                             lambda logits: ev.score(logits[:, ev.positions]).mean(), rules)  # fmt: skip
    return -change
