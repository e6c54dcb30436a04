"""Exact edge patching: the only code that runs a model with edges cut.

A circuit keeps some edges; every other edge carries its sender's **counterfactual**
output into its receiver's port. Each receiver port sees its own mix of senders, so a
port's input is computed on its own, during one forward pass:

    input(r) = resid(r) + sum_s (1 - keep[s -> r]) * (corrupt(s) - out(s))

``resid(r)`` is the residual stream entering ``r``'s layer in this (patched) run, i.e. the
sum of every earlier sender's output in this run plus the constant biases; ``out(s)`` is
sender ``s``'s output in this run and ``corrupt(s)`` its output in the counterfactual run
(``resample``: the counterfactual prompt; ``mean``: the batch mean per position; ``zero``:
zeros), as the head engine's ablations define them (:mod:`circuit_gym.ablation.engine`:
a head's output is ``z @ W_O``, with ``z`` replaced as its ``hook_z`` replacement; the
``input`` node's output is the token + position embedding). A head's q, k and v ports get
three different inputs, each through the block's LayerNorm (MIB's / EAP-IG's split q/k/v
inputs); ``logits`` reads ``ln_final`` of its own input. This is MIB's definition
(``EAP-IG/src/eap/evaluate.py``, ``evaluate_graph``): a circuit of every edge is the
clean run, the empty circuit is the corrupted run (with ``resample``, the counterfactual
prompt's own run).

How it is computed: per layer, the senders' differences ``corrupt - out`` of every circuit
are one tensor ``[circuits, senders, batch * seq * d_model]``; a layer's port inputs are
one batched matrix product with the circuits' cut masks ``[circuits, ports, senders]``
(the edges of one layer's heads are one contiguous block in MIB's edge order,
:class:`~circuit_gym.edges.graph.LayerBlock`), then LayerNorm per port, the heads' Q/K/V
weights per port, attention. The weights are the fast replay's
(:class:`~circuit_gym.ablation.fast_blocks.FastBlocks`); the clean pass and the
replacements are the head engine's, read, never changed. Several circuits run at once,
stacked along the batch, in chunks of at most :data:`EDGE_BUDGET` floats.

Models: attention-only ones (toy, zoo, planted). GPT-2's graph (MLP nodes) is described by
:class:`~circuit_gym.edges.graph.EdgeGraph` but not patched here yet (``NotImplementedError``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from circuit_gym.ablation.circuit_metric import CircuitMetric
from circuit_gym.ablation.engine import AblationEngine
from circuit_gym.ablation.fast_blocks import FastBlocks
from circuit_gym.edges.circuit import EdgeCircuit
from circuit_gym.edges.graph import EdgeGraph

# Floats held per pass for the senders' differences and the ports' inputs (stacked circuits).
EDGE_BUDGET = 40_000_000


class EdgePatcher(CircuitMetric[EdgeCircuit]):
    """Task metric of any edge circuit on one prompt batch (higher = better behaviour); m(full)
    keeps every edge. ``EdgePatcher.for_task(model, task, batch, ablation)`` builds its engine."""

    def __init__(self, engine: AblationEngine) -> None:
        super().__init__(engine)
        model = engine.model
        self.graph = EdgeGraph.of_model(model)
        if self.graph.has_mlp:
            raise NotImplementedError(
                "edge patching runs attention-only models (toy, zoo, planted); the graph of a model with "
                "MLP nodes (GPT-2) is available as EdgeGraph, its patching is not implemented yet"
            )
        fast = engine._fast or FastBlocks.for_model(model)
        if fast is None:
            raise ValueError(
                "edge patching needs an attention-only, pre-LayerNorm model the fast replay supports"
            )
        self._layers = [_port_weights(layer) for layer in fast.layers]
        self._ln_final = model.ln_final
        with torch.no_grad():
            self.clean_input = engine.resid_pre[0]  # the input node's output: embeddings
            self.corrupt_input = self._corrupt_input()
            # corrupt(s) for every head: its replacement z through its own W_O rows, [H, batch*seq*d]
            self.corrupt_out = [self._head_outputs(i, z).flatten(1) for i, z in enumerate(engine.replacement)]
            diffs: list[torch.Tensor] = []
            full = self._final_positions(self.clean_input, None, diffs=diffs)
            rows = engine._score_rows_chunked(self._ln_final(full))
            self._differences = torch.cat(diffs)
        if not torch.allclose(rows, engine.clean_rows, atol=1e-4, rtol=1e-4):
            raise RuntimeError("the edge replay does not reproduce the model's clean pass on this batch")

    # ------------------------------------------------------------------ public
    @torch.no_grad()
    def metric_rows(self, circuits: Sequence[EdgeCircuit]) -> np.ndarray:
        """Per-prompt task metric of each circuit, ``[len(circuits), batch]``, float64. A circuit
        of every edge is the clean pass (its rows are the engine's clean rows, exactly)."""
        for c in circuits:
            if c.graph != self.graph:
                raise ValueError(f"a circuit of {c.graph} cannot run on this model's {self.graph}")
        out = np.empty((len(circuits), self.batch_size), dtype=np.float64)
        todo = [i for i, c in enumerate(circuits) if not c.is_full]
        out[[i for i, c in enumerate(circuits) if c.is_full]] = self.engine.clean_rows.double().cpu().numpy()
        per_pass = self.circuits_per_pass()
        for first in range(0, len(todo), per_pass):
            chunk = todo[first : first + per_pass]
            keep = np.stack([circuits[i].mask for i in chunk])
            out[chunk] = self.masks_metric_rows(keep)
        return out

    def circuits_per_pass(self) -> int:
        """How many circuits one stacked pass runs (bounded by :data:`EDGE_BUDGET`)."""
        tokens = self.engine.ev.tokens
        per_circuit = (
            tokens.numel() * self.clean_input.shape[-1] * (len(self.graph.senders) + 6 * self.graph.n_heads)
        )
        return max(1, EDGE_BUDGET // per_circuit)

    @torch.no_grad()
    def masks_metric_rows(self, keep: np.ndarray) -> np.ndarray:
        """Per-prompt metric of the circuits whose kept edges are ``keep`` ``[k, n_edges]`` (bool),
        computed even when a mask keeps every edge (no shortcut): ``[k, batch]`` float64."""
        keep = np.asarray(keep, dtype=bool)
        if keep.ndim != 2 or keep.shape[1] != self.graph.n_edges:
            raise ValueError(f"masks must be [k, {self.graph.n_edges}], got {keep.shape}")
        emb = self.clean_input.repeat(keep.shape[0], 1, 1)
        rows = self.engine._score_rows_chunked(self._ln_final(self._final_positions(emb, keep)))
        return rows.view(keep.shape[0], self.batch_size).double().cpu().numpy()

    def sender_differences(self) -> torch.Tensor:
        """``corrupt(s) - out(s)`` of every sender in the clean run, ``[senders, batch*seq*d]``
        (what attribution multiplies gradients by; recorded by the replay that checks the
        clean pass, a new tensor on every call)."""
        return self._differences.clone()

    def score_rows(self, final: torch.Tensor) -> torch.Tensor:
        """Per-row metric from the logits port's input at the metric positions ``[rows, P, d]``."""
        return self.engine._score_rows_chunked(self._ln_final(final))

    # ------------------------------------------------------------------ the pass
    def _final_positions(self, emb: torch.Tensor, keep: np.ndarray | None,
                         port_grads: Sequence[torch.Tensor] | None = None,
                         diffs: list[torch.Tensor] | None = None) -> torch.Tensor:  # fmt: skip
        """The logits port's input at the metric positions, ``[rows, P, d_model]``.

        ``emb``: the input node's output, ``k`` stacked copies of the batch ``[k * batch, seq, d]``;
        ``keep``: ``[k, n_edges]`` bool, False for patched edges (``None``: nothing patched, no
        differences kept). ``port_grads``: zero tensors added to every port's input (one per layer
        ``[1 or k, 3 * H, batch * seq, d]``, ports q, k, v major, then the logits' ``[1 or k, batch, P, d]``), so that
        autograd gives the metric's gradient with respect to each port. ``diffs``: when given
        (and ``keep`` is None), every sender's ``corrupt - out`` of this run is appended to it.
        """
        graph, batch = self.graph, self.batch_size
        rows, seq, d = emb.shape
        k, n = rows // batch, batch * seq * d
        positions = self.engine.ev.positions
        x = emb
        senders = None
        if keep is not None:
            senders = emb.new_empty(k, len(graph.senders), n)  # corrupt(s) - out(s), per circuit
            senders[:, 0] = (self.corrupt_input.repeat(k, 1, 1) - emb).view(k, n)
            totals = senders[:, 0].clone()  # the sum of every sender so far, per circuit
        elif diffs is not None:
            diffs.append((self.corrupt_input - emb).view(1, n))
        for block, w in zip(graph.blocks, self._layers, strict=True):
            n_heads = w["W_O"].shape[0]
            if senders is not None and keep is not None:
                block_keep = keep[:, block.head_start : block.head_start + block.senders * n_heads * 3]
                # [k, (port, head), senders]: the ports come out in the order the Q/K/V weights are stacked
                block_keep = block_keep.reshape(k, block.senders, n_heads, 3).transpose(0, 3, 2, 1)
                block_keep = block_keep.reshape(k, 3 * n_heads, block.senders)
                qkv = torch.stack([_circuit_qkv(w, x.view(k, n)[i], block_keep[i], senders[i, : block.senders],
                                                totals[i], (batch * seq, d)) for i in range(k)])  # fmt: skip
            else:
                ports = x.view(k, 1, n).expand(k, 3 * n_heads, n).view(k, 3 * n_heads, batch * seq, d)
                if port_grads is not None:
                    ports = ports + port_grads[block.layer]
                qkv = _port_qkv(w, ports)
            z = _attention(qkv, batch, seq)  # [H, rows, seq, d_head]
            out = torch.bmm(z.reshape(n_heads, rows * seq, -1), w["W_O"])  # [H, rows*seq, d]
            x = x + out.sum(0).view(rows, seq, d) + w["b_O"]
            first = graph.head_sender(block.layer, 0)
            if senders is not None:
                senders[:, first : first + n_heads] = self.corrupt_out[block.layer].view(1, n_heads, n) - out.view(
                    n_heads, k, n).transpose(0, 1)  # fmt: skip
                totals += senders[:, first : first + n_heads].sum(1)
            elif diffs is not None:
                diffs.append(self.corrupt_out[block.layer] - out.view(n_heads, n))
        if senders is not None and keep is not None:
            x = _mix(x.view(k, 1, n), keep[:, graph.logits_start :, None].transpose(0, 2, 1), senders, totals)
            x = x.view(rows, seq, d)
        final = x[:, positions]
        if port_grads is not None:
            final = (final.view(-1, batch, *final.shape[1:]) + port_grads[-1]).view(rows, len(positions), d)
        return final

    # ------------------------------------------------------------------ setup
    def _corrupt_input(self) -> torch.Tensor:
        """The input node's counterfactual output: zeros, the batch mean per position, or the
        counterfactual prompts' embeddings (their run's ``hook_resid_pre`` of block 0)."""
        clean = self.clean_input
        if self.ablation == "zero":
            return torch.zeros_like(clean)
        if self.ablation == "mean":
            return clean.mean(0, keepdim=True).expand_as(clean).clone()
        name = "blocks.0.hook_resid_pre"
        _, cache = self.engine.model.run_with_cache(
            self.engine.ev.counterfactual, names_filter=lambda x: x == name
        )
        return cache[name]

    def _head_outputs(self, layer: int, z: torch.Tensor) -> torch.Tensor:
        """Each head's output ``z_h @ W_O[h]`` of ``z`` [batch, seq, H, d_head]: ``[H, batch*seq, d]``."""
        w = self._layers[layer]
        n_heads = w["W_O"].shape[0]
        return torch.bmm(z.permute(2, 0, 1, 3).reshape(n_heads, -1, z.shape[-1]), w["W_O"])


# Below this share of nonzeros a port x sender matrix is multiplied as a sparse (CSR) matrix.
SPARSE_BELOW = 0.2


def _mix(
    base: torch.Tensor, keep: np.ndarray, senders: torch.Tensor, totals: torch.Tensor | None = None
) -> torch.Tensor:
    """``base + (1 - keep) @ senders`` per circuit: ``base`` [k, 1, n], ``keep`` [k, ports, S]
    (bool), ``senders`` [k, S, n] -> [k, ports, n]; ``totals`` [k, n]: each circuit's sum of
    ``senders`` over S when the caller keeps it (else summed here).

    The cost is the product's, so each circuit takes the cheaper of two equal sums: the cut
    edges' differences, or all of them (one sum, shared by every port) minus the kept edges'.
    The matrix multiplied (cut or kept) has at most half the entries nonzero; below
    :data:`SPARSE_BELOW` it is multiplied as a sparse matrix (a small circuit, or nearly the
    full one, costs nearly nothing)."""
    k, n_ports, _ = keep.shape
    out = base.new_empty(k, n_ports, base.shape[-1])
    for i in range(k):
        kept = int(keep[i].sum())
        cut = keep[i].size - kept
        if cut == 0:
            out[i] = base[i]
        elif kept <= cut:  # few kept: every port takes all differences, then the kept ones are taken back
            out[i] = base[i] + (senders[i].sum(0) if totals is None else totals[i])
            if kept:
                out[i] -= _matmul(keep[i], senders[i])
        else:
            out[i] = base[i] + _matmul(~keep[i], senders[i])
    return out


def _matmul(mask: np.ndarray, values: torch.Tensor) -> torch.Tensor:
    """``mask @ values`` for a bool ``mask`` [ports, S], sparse when it is mostly zeros."""
    if mask.mean() < SPARSE_BELOW:
        rows, cols = np.nonzero(mask)
        index = torch.as_tensor(np.stack([rows, cols]), device=values.device)
        ones = torch.ones(len(rows), dtype=values.dtype, device=values.device)
        # indices built here are valid by construction: no invariant check (and no warning saying so)
        return (
            torch.sparse_coo_tensor(index, ones, mask.shape, is_coalesced=True, check_invariants=False)
            @ values
        )
    return torch.as_tensor(mask, dtype=values.dtype, device=values.device) @ values


def _port_weights(layer: dict) -> dict:
    """One block's weights per port: ``W`` [3 * H, d, d_head] (q, k, v major), ``b``
    [3 * H, 1, d_head], ``W_O`` [H, d_head, d], ``b_O``, LayerNorm."""
    n_heads, d_head = layer["shape"]
    d = layer["W_QKV"].shape[0]
    weight = layer["W_QKV"].view(d, 3 * n_heads, d_head).permute(1, 0, 2).contiguous()
    return {"W": weight, "W_stacked": layer["W_QKV"], "b": layer["b_QKV"].view(3 * n_heads, 1, d_head), "ln": layer["ln"],
            "W_O": layer["W_O"].view(n_heads, d_head, d), "b_O": layer["b_O"]}  # fmt: skip


def _port_qkv(w: dict, ports: torch.Tensor) -> torch.Tensor:
    """Q/K/V ``[k, 3 * H, batch * seq, d_head]`` from per-port inputs ``[k, 3 * H, batch * seq, d]``
    (ports q, k, v major, then heads): LayerNorm on each port's own input, each head's
    Q/K/V weights on its own port."""
    shape, ln_w, ln_b, eps = w["ln"]
    return torch.matmul(F.layer_norm(ports, shape, ln_w, ln_b, eps), w["W"]) + w["b"]


def _circuit_qkv(w: dict, x: torch.Tensor, keep: np.ndarray, senders: torch.Tensor, total: torch.Tensor,
                 shape: tuple[int, int]) -> torch.Tensor:  # fmt: skip
    """One circuit's Q/K/V ``[3 * H, batch * seq, d_head]`` of a layer: ``x`` [n] its residual
    stream, ``keep`` [3 * H, S] which edges into each port it keeps, ``senders`` [S, n] their
    differences and ``total`` [n] their sum. Ports with the same kept senders get the same input, so each distinct input
    is mixed and normalised once (in a small circuit most ports keep nothing); when every
    port's input is the same, one product with the layer's stacked Q/K/V weights serves all."""
    ln_shape, ln_w, ln_b, eps = w["ln"]
    distinct, inverse = np.unique(keep, axis=0, return_inverse=True)
    inputs = _mix(x.view(1, 1, -1), distinct[None], senders[None], total[None])[0]  # [U, n]
    normed = F.layer_norm(inputs.view(len(distinct), *shape), ln_shape, ln_w, ln_b, eps)
    if len(distinct) == 1:
        n_ports, d_head = w["W"].shape[0], w["W"].shape[2]
        qkv = torch.addmm(w["b"].reshape(-1), normed[0], w["W_stacked"])  # columns (port, head, d_head)
        return qkv.view(-1, n_ports, d_head).transpose(0, 1)
    index = torch.as_tensor(inverse.reshape(-1), device=normed.device)
    return torch.baddbmm(w["b"], normed.index_select(0, index), w["W"])


def _attention(qkv: torch.Tensor, batch: int, seq: int) -> torch.Tensor:
    """Per-head outputs ``z`` ``[H, k * batch, seq, d_head]`` from Q/K/V ``[k, 3 * H, batch * seq, d_head]``."""
    k, n_ports = qkv.shape[:2]
    n_heads = n_ports // 3
    qkv = (
        qkv.view(k, 3, n_heads, batch, seq, -1)
        .permute(1, 0, 3, 2, 4, 5)
        .reshape(3, k * batch, n_heads, seq, -1)
    )
    z = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)  # [rows, H, seq, d_head]
    return z.transpose(0, 1)
