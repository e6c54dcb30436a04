"""A fast replay of attention-only, pre-LayerNorm blocks for the ablation engine.

The engine re-runs the blocks after an ablated head hundreds of times per sweep. Through
TransformerBridge each block materialises its attention pattern and fires every hook point
(measured on the 12 x 12 embedded model, 96 rows of 39 tokens, one thread: 132 ms per block;
this replay: 32 ms). The replay computes the same function from the bridge's own weights
with ``torch.nn.functional.scaled_dot_product_attention``, and it edits a head's output
(``hook_z``) with the engine's own hook functions, so ablations mean the same thing on both
paths. It is used only for models it reproduces: :meth:`FastBlocks.for_model` returns
``None`` for other architectures (GPT-2's MLP blocks, rotary, other normalisations), and the
engine checks the replay against the bridge's clean pass before using it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

ZHook = Callable[..., torch.Tensor]  # (z [batch, seq, head, d_head], hook=None) -> z


class FastBlocks:
    """Weights of every block, stacked for :func:`scaled_dot_product_attention`."""

    def __init__(self, model) -> None:
        self.layers = []
        for block in model.blocks:
            attn, ln = block.attn, block.ln1.original_component
            n_heads, d_model, d_head = attn.W_Q.shape
            qkv = torch.stack([attn.W_Q, attn.W_K, attn.W_V])  # [3, head, d_model, d_head]
            self.layers.append(
                dict(
                    ln=(tuple(ln.weight.shape), ln.weight.detach(), ln.bias.detach(), float(ln.eps)),
                    # one matmul for Q, K and V: columns ordered (q/k/v, head, d_head)
                    W_QKV=qkv.permute(2, 0, 1, 3).reshape(d_model, -1).detach().contiguous(),
                    b_QKV=torch.stack([attn.b_Q, attn.b_K, attn.b_V]).reshape(-1).detach(),
                    W_O=attn.W_O.reshape(n_heads * d_head, d_model).detach(),
                    b_O=attn.b_O.detach(),
                    shape=(n_heads, d_head),
                )
            )

    @classmethod
    def for_model(cls, model) -> FastBlocks | None:
        """The replay when the architecture is one it implements, else ``None``."""
        cfg = model.cfg
        supported = (
            getattr(cfg, "attn_only", False)
            and getattr(cfg, "normalization_type", None) == "LN"
            and getattr(cfg, "positional_embedding_type", "standard") == "standard"
            and all(hasattr(b.ln1, "original_component") for b in model.blocks)
        )
        if not supported:
            return None
        try:
            return cls(model)
        except (AttributeError, RuntimeError):  # a bridge without these weight views
            return None

    def run(self, layer: int, resid: torch.Tensor, z_hooks: dict[int, list[ZHook]]) -> torch.Tensor:
        """The residual stream after the last block, from ``resid`` entering block ``layer``;
        ``z_hooks[l]`` edit block ``l``'s per-head outputs as ``hook_z`` hooks would."""
        x = resid
        for index in range(layer, len(self.layers)):
            z = self.attend(index, self.normed(index, x), x.shape[0])
            for hook in z_hooks.get(index, []):
                z = hook(z)
            x = self.add_output(index, x, z)
        return x

    def normed(self, index: int, x: torch.Tensor) -> torch.Tensor:
        """Block ``index``'s LayerNorm of ``x`` [batch, seq, d_model], as [batch * seq, d_model]."""
        shape, weight, bias, eps = self.layers[index]["ln"]
        return F.layer_norm(x, shape, weight, bias, eps).reshape(-1, x.shape[-1])

    def attend(
        self, index: int, h: torch.Tensor, batch: int, heads: tuple[int, ...] | None = None
    ) -> torch.Tensor:
        """Per-head outputs ``z`` [batch, seq, len(heads), d_head] of block ``index`` from its
        normalised input ``h`` [batch * seq, d_model]: every head, or only ``heads`` (their
        Q/K/V columns of the same weights; each head's attention is computed on its own, so a
        head's ``z`` does not depend on which other heads are computed with it)."""
        w = self.layers[index]
        n_heads, d_head = w["shape"]
        if heads is None:
            weight, bias, n = w["W_QKV"], w["b_QKV"], n_heads
        else:
            weight, bias = self._qkv_columns(index, heads)
            n = len(heads)
        qkv = torch.addmm(bias, h, weight).view(batch, -1, 3, n, d_head)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [batch, head, seq, d_head]
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)  # [b, t, head, e]

    def add_output(self, index: int, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``x`` plus block ``index``'s attention output from every head's ``z``."""
        return x + self.output(index, z)

    def output(self, index: int, z: torch.Tensor) -> torch.Tensor:
        """Block ``index``'s attention output [batch, seq, d_model] from ``z`` [batch, seq, head, d_head]."""
        w = self.layers[index]
        batch, seq = z.shape[:2]
        return torch.addmm(w["b_O"], z.reshape(batch * seq, -1), w["W_O"]).view(batch, seq, -1)

    def _qkv_columns(self, index: int, heads: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        """The Q/K/V weight columns and biases of ``heads`` only, ordered as in ``W_QKV``."""
        w = self.layers[index]
        cache = w.setdefault("columns", {})
        if heads not in cache:
            n_heads, d_head = w["shape"]
            idx = torch.tensor(heads, device=w["W_QKV"].device)
            weight = (
                w["W_QKV"].view(-1, 3, n_heads, d_head).index_select(2, idx).reshape(w["W_QKV"].shape[0], -1)
            )
            bias = w["b_QKV"].view(3, n_heads, d_head).index_select(1, idx).reshape(-1)
            cache[heads] = (weight.contiguous(), bias.contiguous())
        return cache[heads]
