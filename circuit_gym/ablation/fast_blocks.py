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

Attention has two paths (``attention``), each exact to float tolerance against the bridge
(``tests/test_engine_paths.py``) but not bit for bit equal to each other:

- ``"sdpa"`` (the default; every table before issue 46): ``scaled_dot_product_attention``.
  On CPU with 12-dimensional heads its kernel spends most of its time in per-(row, head)
  overhead, not arithmetic (issue 46: 56% of a sweep's time for 3% of its FLOPs);
- ``"matmul"``: for short sequences and small heads (:func:`uses_matmul`, a rule measured by
  ``benchmarks/bench_attention.py``), one batched product over every (row, head) for the
  scores with the causal mask added, a softmax, and one batched product with the values;
  other shapes stay on SDPA. Caches keep the two apart (``engine.attention_cache_fields``).

:func:`causal_attention` is the one attention formula, also for callers with their own
q / k / v (edge patching, whose q, k and v inputs come from different residual streams).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

ZHook = Callable[..., torch.Tensor]  # (z [batch, seq, head, d_head], hook=None) -> z

ATTENTION_PATHS = ("sdpa", "matmul")
# The matmul path's rule, read from benchmarks/bench_attention.py's kernel grid (CPU time, one
# thread, 2026-11-26, benchmarks/results/attention.json): with 12 x 12 heads of 12 or 32
# dimensions on 96 rows the batched products beat SDPA up to 24 positions (1.0-1.9x) and lose
# from 32 on; with 64-dimensional heads (GPT-2's) they never win. Anything else stays on SDPA.
# Changing it changes numbers on the matmul path: bump MATMUL_RULE_VERSION with it.
MATMUL_MAX_SEQ = 24
MATMUL_MAX_D_HEAD = 32
MATMUL_RULE_VERSION = 1


def check_attention(path: str) -> str:
    if path not in ATTENTION_PATHS:
        raise ValueError(f"attention must be one of {ATTENTION_PATHS}, got {path!r}")
    return path


def uses_matmul(path: str, seq: int, d_head: int) -> bool:
    """Whether attention over ``seq`` positions with ``d_head``-dimensional heads takes
    :func:`matmul_attention` on ``path``."""
    return check_attention(path) == "matmul" and seq <= MATMUL_MAX_SEQ and d_head <= MATMUL_MAX_D_HEAD


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, path: str = "sdpa") -> torch.Tensor:
    """Causal softmax attention with scale ``1 / sqrt(d_head)``: per-head outputs ``z``
    [batch, seq, head, d_head] from ``q``, ``k``, ``v`` [batch, head, seq, d_head], by SDPA or,
    for short sequences on the matmul path, by :func:`matmul_attention`. Each (row, head) is
    computed on its own on both, so its ``z`` does not depend on the other rows or heads in the
    call (the masked replay relies on it)."""
    if uses_matmul(path, q.shape[2], q.shape[3]):
        return matmul_attention(q, k, v)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)


def matmul_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """:func:`causal_attention` by batched products over every (row, head): ``z``
    [batch, seq, head, d_head] from ``q``, ``k``, ``v`` [batch, head, seq, d_head]."""
    batch, heads, seq, d_head = q.shape
    q3 = (q * (1.0 / math.sqrt(d_head))).reshape(batch * heads, seq, d_head)  # scaled first, as SDPA does
    k3 = k.reshape(batch * heads, seq, d_head)
    v3 = v.reshape(batch * heads, seq, d_head)
    # Scores kept as [row * head, key, query], the softmax over keys on dim 1: torch's softmax
    # over a last dimension shorter than its vector width runs scalar code (measured 3-4x
    # slower at 15 positions), and over a middle one it vectorises across the queries.
    causal = torch.full((seq, seq), float("-inf"), dtype=q.dtype, device=q.device).tril(-1)  # key > query
    pattern = torch.baddbmm(causal, k3, q3.transpose(1, 2)).softmax(1)
    return torch.bmm(pattern.transpose(1, 2), v3).view(batch, heads, seq, d_head).transpose(1, 2)


class FastBlocks:
    """Weights of every block, stacked for one Q/K/V product, and the attention path."""

    def __init__(self, model, attention: str = "sdpa") -> None:
        self.attention = check_attention(attention)
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
    def for_model(cls, model, attention: str = "sdpa") -> FastBlocks | None:
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
            return cls(model, attention)
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
        return causal_attention(q, k, v, self.attention)  # [b, t, head, e]

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
