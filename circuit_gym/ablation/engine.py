"""Head ablation on one fixed input batch: exact scores for any head set, and fast sweeps.

An :class:`Evaluation` is an input batch plus a score where higher is better: the task
metric on a prompt batch, or minus the next-token loss on the reference batch. An
:class:`AblationEngine` runs the clean pass once, caching every layer's residual stream
and head outputs, and then answers "what is the score with these heads ablated?":

- ``score(heads)`` for any set: restarts from the cached residual stream at the lowest
  ablated layer, with a ``hook_z`` hook that replaces the chosen heads;
- ``sweep()`` for every single head: per layer, the cached residual stream is repeated
  once per head of that layer along the batch dimension, so one forward pass from that
  layer on covers the whole layer; only the positions the score reads are unembedded.

Both re-run blocks from the cached residual stream: attention-only models through
:class:`~circuit_gym.ablation.fast_blocks.FastBlocks` (checked against the bridge's clean
pass first), others by calling the bridge's blocks directly, or through the bridge's own
``start_at_layer`` when calling blocks does not reproduce the clean pass.

Attention on the fast replay (``attention``): ``"sdpa"`` (the default, every table
before issue 46) or ``"matmul"`` (batched products for short sequences, issue 46); an engine
built without one follows ``$CIRCUIT_GYM_ATTENTION`` (:func:`default_attention`), and cache
keys name the path (:func:`attention_cache_fields`). Other architectures ignore it.

Ablation kinds (replacement of a head's ``hook_z`` output):
- ``zero``: zeros (the reference paper's choice);
- ``mean``: its mean over the batch, per position (keeps what is common to the template);
- ``resample``: its value on the counterfactual input (task prompts with other fillers;
  for the reference batch, the next row of the batch).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from circuit_gym.ablation.fast_blocks import MATMUL_RULE_VERSION, FastBlocks, check_attention
from circuit_gym.embedded import is_embedded
from circuit_gym.heads import resid_pre_hook, z_hook
from circuit_gym.tasks.base import PromptBatch, Task
from circuit_gym.tasks.reference import ReferenceBatch

ABLATIONS = ("zero", "mean", "resample")
# Part of every cache key: bump it whenever a change here (or in what the engine calls)
# changes any number a sweep produces, so stale tables are never read back.
ENGINE_VERSION = 2
# The fast replay's attention path, for engines built without one (see default_attention).
ATTENTION_ENV_VAR = "CIRCUIT_GYM_ATTENTION"
# Rows x positions x vocab floats unembedded at once: the logits are scored in row chunks
# of this size and never materialised for a whole stacked pass (bounds memory on GPT-2).
LOGIT_BUDGET = 20_000_000
# Rows x positions x d_model floats per stacked forward pass (copies of the batch, one
# per ablated head of a layer).
RESID_BUDGET = 20_000_000


# Per-model default ablation. On the embedded model zero ablation makes layer-0 heads look
# like bottlenecks because it removes their constant contribution as well (docstring's best
# head would be 0.3); resample keeps it, and every task's best head is then in layer 1-3
# (measured in the model card). GPT-2 keeps zero ablation, the reference paper's choice.
def default_ablation(model_name: str) -> str:
    """The ablation a model's environments use unless told otherwise: resample on the
    embedded models, zero elsewhere."""
    return "resample" if is_embedded(model_name) else "zero"


def default_attention() -> str:
    """``$CIRCUIT_GYM_ATTENTION`` when set (checked), else ``"sdpa"`` (every table before issue 46)."""
    return check_attention(os.environ.get(ATTENTION_ENV_VAR) or "sdpa")


def attention_cache_fields(attention: str) -> dict:
    """What a cache key adds for an attention path: nothing for SDPA (the keys of every table
    computed before issue 46 stay valid), the path and its rule's version otherwise, so tables
    of one path are never read back for another."""
    if check_attention(attention) == "sdpa":
        return {}
    return {"attention": attention, "attention_rule": MATMUL_RULE_VERSION}


def check_ablation(kind: str) -> str:
    if kind not in ABLATIONS:
        raise ValueError(f"ablation must be one of {ABLATIONS}, got {kind!r}")
    return kind


@dataclass(frozen=True)
class Evaluation:
    """Inputs and a per-row score (higher = better) on the logits at ``positions``.

    ``score_rows(logits, rows)`` scores logits ``[len(rows), P, vocab]`` of the batch rows
    ``rows`` (indices, repeats allowed), so the engine can score stacked copies of the
    batch a few rows at a time.
    """

    tokens: torch.Tensor  # [batch, seq]
    positions: torch.Tensor  # [P]
    score_rows: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (logits, rows) -> [len(rows)]
    counterfactual: torch.Tensor | None = None

    def score(self, logits: torch.Tensor) -> torch.Tensor:
        """Per-row scores of logits ``[batch, P, vocab]`` for the whole batch."""
        return self.score_rows(logits, torch.arange(logits.shape[0], device=logits.device))

    @classmethod
    def for_task(cls, task: Task, batch: PromptBatch, device: torch.device | str = "cpu") -> Evaluation:
        batch = batch.to(device)
        return cls(batch.tokens, batch.positions, lambda lg, rows: task.metric(lg, batch.select(rows)),
                   batch.counterfactual)  # fmt: skip

    @classmethod
    def for_reference(cls, ref: ReferenceBatch, device: torch.device | str = "cpu") -> Evaluation:
        tokens = ref.tokens.to(device)
        targets = tokens[:, 1:]

        def neg_loss(logits: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
            # log p(target) = logit(target) - logsumexp: no full log-softmax tensor is written
            logits = logits.float()
            target = logits.gather(-1, targets[rows][..., None])[..., 0]
            return (target - torch.logsumexp(logits, dim=-1)).mean(-1)

        # Resample source for ordinary text: another row of the same batch.
        positions = torch.arange(tokens.shape[1] - 1, device=tokens.device)
        return cls(tokens, positions, neg_loss, tokens.roll(1, dims=0))


class AblationEngine:
    """Exact ablation scores for one model, one :class:`Evaluation` and one ablation kind."""

    def __init__(
        self, model, evaluation: Evaluation, kind: str = "zero", attention: str | None = None
    ) -> None:
        self.model = model
        self.ev = evaluation
        self.kind = check_ablation(kind)
        self.attention = default_attention() if attention is None else check_attention(attention)
        self.n_layers = int(model.cfg.n_layers)
        self.n_heads = int(model.cfg.n_heads)
        if kind == "resample" and evaluation.counterfactual is None:
            raise ValueError(
                "resample ablation (the embedded model's default) needs counterfactual prompts and this "
                "task's batch has none: give PromptBatch(counterfactual=...) or pass ablation='zero' or 'mean'"
            )
        names = [resid_pre_hook(layer) for layer in range(self.n_layers)]
        names += [self._z(layer) for layer in range(self.n_layers)]
        with torch.no_grad():
            logits, cache = model.run_with_cache(evaluation.tokens, names_filter=lambda n: n in names)
            self.resid_pre = [cache[resid_pre_hook(layer)] for layer in range(self.n_layers)]
            self.clean_z = [cache[self._z(layer)] for layer in range(self.n_layers)]
            self.clean_rows = evaluation.score(logits[:, evaluation.positions])
            self.replacement = self._replacements()
            self._check_direct_blocks(logits[:, evaluation.positions])
        self.clean_score = float(self.clean_rows.mean())

    @staticmethod
    def _z(layer: int) -> str:
        return z_hook(layer)

    def _replacements(self) -> list[torch.Tensor]:
        """Per layer, the [batch, seq, head, d_head] values ablated heads take."""
        if self.kind == "zero":
            return [torch.zeros_like(z) for z in self.clean_z]
        if self.kind == "mean":
            return [z.mean(0, keepdim=True).expand_as(z).clone() for z in self.clean_z]
        names = [self._z(layer) for layer in range(self.n_layers)]
        _, cache = self.model.run_with_cache(self.ev.counterfactual, names_filter=lambda n: n in names)
        return [cache[n] for n in names]

    # ------------------------------------------------------------------ any head set
    def head_layer(self, head: int) -> tuple[int, int]:
        if not 0 <= head < self.n_layers * self.n_heads:
            raise ValueError(f"head id must be in [0, {self.n_layers * self.n_heads}), got {head}")
        return divmod(int(head), self.n_heads)

    @torch.no_grad()
    def score(self, heads: Iterable[int]) -> float:
        """Mean score with all ``heads`` (flat ids) ablated at once."""
        by_layer: dict[int, list[int]] = {}
        for h in set(int(h) for h in heads):
            layer, head = self.head_layer(h)
            by_layer.setdefault(layer, []).append(head)
        if not by_layer:
            return self.clean_score
        hooks = []
        for layer, hs in by_layer.items():
            idx = torch.tensor(sorted(hs), device=self.ev.tokens.device)
            repl = self.replacement[layer]

            def hook(z: torch.Tensor, hook=None, idx=idx, repl=repl) -> torch.Tensor:
                z = z.clone()
                z[:, :, idx] = repl[:, :, idx]
                return z

            hooks.append((self._z(layer), hook))
        start = min(by_layer)
        return float(self._run_from(start, self.resid_pre[start], hooks).mean())

    def _run_from(self, layer: int, resid: torch.Tensor, hooks: list) -> torch.Tensor:
        """Per-row scores, running blocks ``layer..`` on ``resid`` (rows of the batch, or
        stacked copies of it)."""
        positions = self.ev.positions
        if self._fast is not None and all(name in self._z_layer for name, _ in hooks):
            z_hooks: dict[int, list] = {}
            for name, fn in hooks:
                z_hooks.setdefault(self._z_layer[name], []).append(fn)
            x = self._fast.run(layer, resid, z_hooks)
            return self._score_rows_chunked(self.model.ln_final(x[:, positions]))
        with self.model.hooks(fwd_hooks=hooks):
            if self._direct_blocks:
                # The bridge's own start_at_layer still runs every earlier block on a
                # placeholder input (measured: starting at the last layer cost as much as
                # a full pass), so the blocks from `layer` on are called directly.
                x = resid
                for block in self.model.blocks[layer:]:
                    out = block(x)
                    x = out[0] if isinstance(out, tuple) else out
                return self._score_rows_chunked(self.model.ln_final(x[:, positions]))

            def keep_positions(x: torch.Tensor, hook=None) -> torch.Tensor:
                return x[:, positions]

            with self.model.hooks(fwd_hooks=[("unembed.hook_in", keep_positions)]):
                logits = self.model(resid, start_at_layer=layer)
                batch = self.ev.tokens.shape[0]
                return self.ev.score_rows(logits, torch.arange(logits.shape[0], device=logits.device) % batch)

    def _score_rows_chunked(self, final_resid: torch.Tensor) -> torch.Tensor:
        """Per-row scores from the normalised final residual [rows, P, d_model], unembedding
        at most LOGIT_BUDGET logits at a time (exact: every row is scored on its own)."""
        rows, n_pos = final_resid.shape[:2]
        batch = self.ev.tokens.shape[0]
        chunk = max(1, LOGIT_BUDGET // (n_pos * int(self.model.cfg.d_vocab)))
        index = torch.arange(rows, device=final_resid.device) % batch  # stacked copies of the batch
        return torch.cat([self.ev.score_rows(self.model.unembed(final_resid[i : i + chunk]), index[i : i + chunk])
                          for i in range(0, rows, chunk)])  # fmt: skip

    def _check_direct_blocks(self, clean_logits: torch.Tensor) -> bool:
        """Calling blocks directly must reproduce the clean pass (true for GPT-2 and the toy
        model); architectures whose blocks need extra inputs fall back to the bridge. Then the
        same check for the fast replay (attention-only models), which is used only if it passes."""
        expected = self.ev.score(clean_logits)

        def reproduces() -> bool:
            try:
                direct = self._run_from(0, self.resid_pre[0], [])
                return direct.shape == expected.shape and torch.allclose(
                    direct, expected, atol=1e-4, rtol=1e-4
                )
            except Exception:  # any failure means: use the bridge's slower, general path
                return False

        self._z_layer = {self._z(layer): layer for layer in range(self.n_layers)}
        self._direct_blocks = True  # the replay's fallback; checked only if the replay is not used
        self._fast = FastBlocks.for_model(self.model, self.attention)
        if self._fast is not None and not reproduces():
            self._fast = None
        if self._fast is None:
            self._direct_blocks = reproduces()
        return self._direct_blocks

    # ---------------------------------------------------------------- single heads
    @torch.no_grad()
    def sweep(self, progress: bool | None = False, desc: str = "sweep") -> np.ndarray:
        """Mean score with each single head ablated, shape ``[n_layers * n_heads]``."""
        return self.sweep_rows(progress, desc).mean(1)

    @torch.no_grad()
    def sweep_rows(self, progress: bool | None = False, desc: str = "sweep") -> np.ndarray:
        """Per-row scores with each single head ablated, shape ``[n_layers * n_heads, batch]``
        (for the spread of a damage across the rows of a batch). ``progress``: a bar counting
        heads, where :func:`circuit_gym.progress.progress_enabled` allows one."""
        from circuit_gym.progress import progress_bar

        batch = self.ev.tokens.shape[0]
        scores = np.empty((self.n_layers * self.n_heads, batch), dtype=np.float64)
        d_model = int(self.model.cfg.d_model)
        per_pass = max(1, RESID_BUDGET // (batch * self.ev.tokens.shape[1] * d_model))
        with progress_bar(self.n_layers * self.n_heads, desc, unit="head", requested=progress) as bar:
            for layer in range(self.n_layers):
                for first in range(0, self.n_heads, per_pass):
                    heads = list(range(first, min(self.n_heads, first + per_pass)))
                    start = layer * self.n_heads + first
                    scores[start : start + len(heads)] = self._sweep_layer_chunk(layer, heads)
                    bar.update(len(heads))
        return scores

    def _sweep_layer_chunk(self, layer: int, heads: list[int]) -> np.ndarray:
        k, batch = len(heads), self.ev.tokens.shape[0]
        resid = self.resid_pre[layer].repeat(k, 1, 1)  # copy i ablates heads[i]
        repl = self.replacement[layer]
        device = self.ev.tokens.device
        rows = torch.arange(k * batch, device=device)
        head_of_row = torch.tensor(heads, device=device).repeat_interleave(batch)

        def hook(z: torch.Tensor, hook=None) -> torch.Tensor:
            z = z.clone()
            z[rows, :, head_of_row] = repl.repeat(k, 1, 1, 1)[rows, :, head_of_row]
            return z

        per_row = self._run_from(layer, resid, [(self._z(layer), hook)])
        return per_row.view(k, batch).double().cpu().numpy()

    @torch.no_grad()
    def naive_sweep(self) -> np.ndarray:
        """The plain loop: one full forward pass with one hook per head. For tests and benchmarks."""
        out = np.empty(self.n_layers * self.n_heads, dtype=np.float64)
        for h in range(self.n_layers * self.n_heads):
            layer, head = self.head_layer(h)
            repl = self.replacement[layer]

            def hook(z: torch.Tensor, hook=None, head=head, repl=repl) -> torch.Tensor:
                z = z.clone()
                z[:, :, head] = repl[:, :, head]
                return z

            logits = self.model.run_with_hooks(self.ev.tokens, fwd_hooks=[(self._z(layer), hook)])
            out[h] = float(self.ev.score(logits[:, self.ev.positions]).mean())
        return out
