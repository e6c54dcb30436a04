"""EAP and EAP-IG edge scores: the metric's gradient with respect to every receiver port.

For an edge ``s -> r`` both score

    score(s -> r) = (out(s) - corrupt(s)) . g(r)

summed over prompts, positions and ``d_model`` (``m`` is the batch-mean metric), i.e. minus
the first-order change of ``m`` when the edge is patched: higher = keeping the edge raises
the metric more, the rule every ranking here follows. ``out(s) - corrupt(s)`` is the
sender's clean minus counterfactual output (:meth:`EdgePatcher.sender_differences`, the
head engine's replacements); ``g(r)`` is the gradient of ``m`` with respect to ``r``'s
input, taken through the patcher's own per-port pass (so the gradient of every port, q, k
and v apart, comes from one backward pass):

- **EAP** (Syed et al. 2023; Hanna et al.'s ``get_scores_eap``): ``g`` at the clean run.
  Cost: the patcher's clean and counterfactual passes, then **one** forward and **one**
  backward pass.
- **EAP-IG, inputs variant** (Hanna et al. 2024, ``get_scores_eap_ig``, MIB's ``EAP-IG-inputs``):
  ``g`` averaged over runs whose **input embeddings** are interpolated,
  ``corrupt(input) + alpha * (clean(input) - corrupt(input))`` with ``alpha = j / steps``
  for ``j = 0 .. steps - 1`` (Hanna's grid: it includes the corrupted end, not the clean
  one; the head level's :mod:`circuit_gym.ablation.integrated_gradients` interpolates head
  outputs on ``j = 1 .. steps`` instead). Default ``steps = 5``, as at head level (Hanna's
  default is 30). The steps are stacked along the batch: one forward and one backward pass
  over ``steps`` x the batch, counted as ``steps`` passes each (per copy of the batch).

- **GIM** (Edin et al. 2025, MIB's current leader): ``g`` at the clean run, as EAP, but
  with the gradient flowing back by GIM's rules (frozen LayerNorm scales, the softmax's
  Jacobian at temperature 2, Q/K/V gradients times 1/4, 1/4, 1/2; the head level's
  :mod:`circuit_gym.ablation.gim`), through :func:`circuit_gym.edges.gim.gim_port_gradients`.
  Cost: EAP's. With ``steps > 1`` the gradient is averaged over EAP-IG's input grid instead.

:data:`GRADIENT_HOOKS` maps a rule's name to a function ``(patcher, steps) -> per-port
gradients``; :func:`gradient_ranking` turns any of them into edge scores.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from circuit_gym.edges.gim import gim_port_gradients
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking


def eap_ranking(patcher: EdgePatcher) -> EdgeRanking:
    """EAP edge scores (one forward + one backward pass after the patcher's own passes)."""
    return _ranking(patcher, _port_gradients(patcher, patcher.clean_input, 1), "eap", copies=1)


def eap_ig_ranking(patcher: EdgePatcher, steps: int = 5) -> EdgeRanking:
    """EAP-IG (inputs) edge scores with ``steps`` interpolation steps (one stacked forward and
    backward pass over ``steps`` copies of the batch: ``steps`` passes each)."""
    steps = _check_steps(steps)
    grads = _port_gradients(patcher, _ig_inputs(patcher, steps), steps)
    return _ranking(patcher, grads, f"eap_ig_{steps}", copies=steps)


def _gim_gradients(patcher: EdgePatcher, steps: int) -> list[torch.Tensor]:
    """GIM's per-port gradients: at the clean run for one step, else over EAP-IG's input grid."""
    emb = patcher.clean_input if steps == 1 else _ig_inputs(patcher, steps)
    return gim_port_gradients(patcher, emb, steps)


# name -> (patcher, steps) -> list of per-port gradients (the layout of _port_gradients' result)
GRADIENT_HOOKS: dict[str, Callable[[EdgePatcher, int], list[torch.Tensor]]] = {"gim": _gim_gradients}


def gradient_ranking(patcher: EdgePatcher, name: str, steps: int = 1) -> EdgeRanking:
    """Edge scores from a registered gradient rule (:data:`GRADIENT_HOOKS`, e.g. ``"gim"``);
    the method is ``name`` (with ``_{steps}`` for more than one step)."""
    if name not in GRADIENT_HOOKS:
        raise KeyError(f"no gradient rule {name!r}; registered: {sorted(GRADIENT_HOOKS)}")
    steps = _check_steps(steps)
    method = name if steps == 1 else f"{name}_{steps}"
    return _ranking(patcher, GRADIENT_HOOKS[name](patcher, steps), method, copies=steps)


def _check_steps(steps: int) -> int:
    if isinstance(steps, bool) or int(steps) < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    return int(steps)


def _ig_inputs(patcher: EdgePatcher, steps: int) -> torch.Tensor:
    """EAP-IG's input grid: ``corrupt + (j / steps)(clean - corrupt)``, ``j = 0 .. steps - 1``,
    stacked along the batch ``[steps * batch, seq, d]``."""
    clean, corrupt = patcher.clean_input, patcher.corrupt_input
    alphas = torch.arange(steps, dtype=clean.dtype, device=clean.device) / steps
    return (corrupt[None] + alphas[:, None, None, None] * (clean - corrupt)[None]).flatten(0, 1)


def _port_gradients(patcher: EdgePatcher, emb: torch.Tensor, copies: int) -> list[torch.Tensor]:
    """Gradient of the mean metric over ``emb``'s rows (``copies`` stacked batches, no edge
    patched) with respect to every port's input: per layer ``[3 * H, batch * seq, d]``
    (ports q, k, v major), then the logits port's ``[batch, P, d]``; the copies are summed,
    so with the mean over all rows the result is the mean of the copies' gradients."""
    graph, batch = patcher.graph, patcher.batch_size
    seq, d = emb.shape[1], emb.shape[2]
    n_positions = len(patcher.engine.ev.positions)
    leaves = [torch.zeros(1, 3 * graph.n_heads, batch * seq, d, requires_grad=True) for _ in graph.blocks]
    leaves.append(torch.zeros(1, batch, n_positions, d, requires_grad=True))
    with torch.enable_grad():
        final = patcher._final_positions(emb, None, port_grads=leaves)
        metric = patcher.score_rows(final).mean()
        grads = torch.autograd.grad(metric, leaves)
    return [g[0].detach() for g in grads]


def _ranking(patcher: EdgePatcher, grads: list[torch.Tensor], method: str, copies: int = 1) -> EdgeRanking:
    """``(out - corrupt) . g`` for every edge, in the graph's edge order. Passes are counted per
    copy of the batch (a stacked pass over ``copies`` batches is ``copies`` passes), as the head
    level counts EAP-IG's steps and the edge environment its setup."""
    graph = patcher.graph
    diffs = -patcher.sender_differences()  # out(s) - corrupt(s), [senders, batch*seq*d]
    scores = np.empty(graph.n_edges, dtype=np.float64)
    for block, grad in zip(graph.blocks, grads[:-1], strict=False):
        n_heads = graph.n_heads
        per_port = diffs[: block.senders] @ grad.reshape(3 * n_heads, -1).T  # [senders, (port, head)]
        per_port = per_port.view(block.senders, 3, n_heads).transpose(1, 2)  # edge order: sender, head, port
        end = block.head_start + block.senders * n_heads * 3
        scores[block.head_start : end] = per_port.reshape(-1).double().cpu().numpy()
    positions = patcher.engine.ev.positions
    batch, d = patcher.batch_size, patcher.clean_input.shape[-1]
    at_positions = diffs.view(len(graph.senders), batch, -1, d)[:, :, positions].reshape(
        len(graph.senders), -1
    )
    scores[graph.logits_start :] = (at_positions @ grads[-1].reshape(-1)).double().cpu().numpy()
    forward = 1 + (patcher.ablation == "resample")  # the patcher's clean and counterfactual passes
    return EdgeRanking.from_array(scores, method, graph, {"forward": forward + copies, "backward": copies})
