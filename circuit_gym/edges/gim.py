"""GIM's backward rules at edge level: the metric's gradient with respect to every receiver
port, with the gradient flowing back as GIM says (:mod:`circuit_gym.ablation.gim`).

The patcher's own pass (:class:`~circuit_gym.edges.patching.EdgePatcher`) runs LayerNorm
and attention as fused kernels (``F.layer_norm``, scaled-dot-product attention), where no
backward rule can be inserted, so this module writes the same unpatched pass out op by op:
per port ``input -> LayerNorm -> Q/K/V`` (each port its own input, as the patcher's), the
causal softmax as a pattern, ``z @ W_O``, the residual sum, then ``ln_final``, the unembedding
and the task's per-row score. GIM's rules act where the head level puts them, with the head
level's functions (one formula in one place):

- every LayerNorm's scale (the blocks' ``ln1`` and ``ln_final``) is a constant backward
  (``GimRules.freeze_norm``);
- the attention pattern passes through
  :func:`~circuit_gym.ablation.gim.softmax_at_temperature_backward` (temperature 2);
- queries, keys and values pass through :func:`~circuit_gym.ablation.gim.scale_grad` (1/4,
  1/4, 1/2).

Forward values equal the patcher's clean pass; with :data:`~circuit_gym.ablation.gim.GIM_OFF`
the gradients equal the patcher's own (``tests/test_edge_gim.py`` checks both, and that the
edge scores of a head's outgoing edges add up to the head level's GIM score of that head).
The result has the layout of :func:`circuit_gym.edges.attribution._port_gradients`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from circuit_gym.ablation.fast_blocks import FastBlocks
from circuit_gym.ablation.gim import GIM_DEFAULT, GimRules, scale_grad, softmax_at_temperature_backward

if TYPE_CHECKING:
    from circuit_gym.edges.patching import EdgePatcher


def gim_port_gradients(patcher: EdgePatcher, emb: torch.Tensor, copies: int,
                       rules: GimRules = GIM_DEFAULT) -> list[torch.Tensor]:  # fmt: skip
    """Gradient, under ``rules``, of the mean metric over ``emb``'s rows (``copies`` stacked
    batches, no edge patched) with respect to every port's input: per layer ``[3 * H, batch *
    seq, d]`` (ports q, k, v major), then the logits port's ``[batch, P, d]``; the copies'
    gradients are averaged (one forward and one backward pass)."""
    model = patcher.engine.model
    fast = FastBlocks.for_model(model)
    if fast is None:
        raise ValueError("GIM at edge level needs an attention-only, pre-LayerNorm model")
    graph, batch = patcher.graph, patcher.batch_size
    rows, seq, d = emb.shape
    if rows != copies * batch:
        raise ValueError(f"emb has {rows} rows, expected {copies} copies of {batch} prompts")
    positions = patcher.engine.ev.positions
    leaves = [torch.zeros(1, 3 * graph.n_heads, batch * seq, d, requires_grad=True) for _ in graph.blocks]
    leaves.append(torch.zeros(1, batch, len(positions), d, requires_grad=True))
    with torch.enable_grad():
        x = emb.detach()
        for layer, w in enumerate(fast.layers):
            n_heads, d_head = w["shape"]
            ports = x.reshape(copies, 1, batch * seq, d).expand(copies, 3 * n_heads, batch * seq, d)
            normed = _layer_norm(ports + leaves[layer], w["ln"], rules.freeze_norm)
            weight = w["W_QKV"].view(d, 3 * n_heads, d_head).permute(1, 0, 2)  # [3H, d, d_head]
            qkv = torch.matmul(normed, weight) + w["b_QKV"].view(3 * n_heads, 1, d_head)
            qkv = qkv.view(copies, 3, n_heads, batch, seq, d_head)
            q, k, v = (
                scale_grad(qkv[:, i], s) for i, s in enumerate((rules.q_scale, rules.k_scale, rules.v_scale))
            )
            scores = q @ k.transpose(-1, -2) / math.sqrt(d_head)  # [copies, H, batch, seq, seq]
            causal = torch.ones(seq, seq, dtype=torch.bool, device=scores.device).triu(1)
            pattern = torch.softmax(scores.masked_fill(causal, float("-inf")), -1)
            pattern = softmax_at_temperature_backward(pattern, rules.softmax_temperature)
            z = pattern @ v  # [copies, H, batch, seq, d_head]
            out = torch.einsum("chbse,hed->cbsd", z, w["W_O"].view(n_heads, d_head, d))
            x = x + out.reshape(rows, seq, d) + w["b_O"]
        final = x[:, positions].reshape(copies, batch, len(positions), d) + leaves[-1]
        ln = model.ln_final.original_component
        ln_params = (tuple(ln.weight.shape), ln.weight.detach(), ln.bias.detach(), float(ln.eps))
        normed = _layer_norm(final.reshape(rows, len(positions), d), ln_params, rules.freeze_norm)
        index = torch.arange(rows, device=normed.device) % batch  # stacked copies of the batch
        metric = patcher.engine.ev.score_rows(model.unembed(normed), index).mean()
        grads = torch.autograd.grad(metric, leaves)
    return [g[0].detach() for g in grads]


def _layer_norm(x: torch.Tensor, params: tuple, freeze_scale: bool) -> torch.Tensor:
    """LayerNorm over the last dimension (forward as ``F.layer_norm``); with ``freeze_scale``
    the standard deviation it divides by is a constant in the backward pass (GIM's rule 1)."""
    _, weight, bias, eps = params
    centred = x - x.mean(-1, keepdim=True)
    scale = (centred.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    if freeze_scale:
        scale = scale.detach()
    return centred / scale * weight + bias
