"""A planted-circuit model: weights set by construction, so the task's circuit is known.

In the spirit of Tracr and InterpBench: an attention-only transformer (3 layers x 4 heads,
LayerNorm, learned-style absolute position embeddings, the embedded "tiny" model's
tokenizer) whose weights are written by hand, not trained. Its residual stream is split
into named subspaces:

- ``TOK``: one dimension per task token (16 content tokens, a marker, a query, BOS);
- ``POS``: one dimension per position (one-hot positions);
- ``PREV``: the previous token's identity, written by the previous-token head;
- ``SPARE``: where the distractor heads write (nothing reads it).

**Task** (:data:`PLANTED_TASK`, ``planted_copy``): ``BOS c c c MARKER X c c ... QUERY``;
the model must answer the token ``X`` that follows the marker. The metric is the logit
difference of ``X`` against three other content tokens of the prompt. The counterfactual
prompt has other tokens, a different ``X`` and the marker at another position, so
patching either planted head with its counterfactual value breaks the behaviour.

**Planted circuit** (:data:`PLANTED_HEADS`), an induction-style pair:

- ``0.1`` previous-token head: attends from position ``i`` to ``i - 1`` (``POS`` to
  ``POS``) and copies that token's ``TOK`` into ``PREV``; after it, ``X``'s position
  carries ``PREV = MARKER``;
- ``2.2`` copy head: from the query token (``TOK = QUERY``) attends to the position whose
  ``PREV`` is ``MARKER`` and copies its ``TOK`` (``X``) to the output, where the
  unembedding reads it.

**Distractors**: BOS-sink heads (a constant output), averaging heads (uniform attention,
output in ``SPARE``), current-token heads (in layers 0-1 writing to ``SPARE``; ``2.3``
writes the current token's ``TOK``, i.e. the general "repeat the current token" work,
which at the query position boosts only the query token). None of them carries the answer.

It loads through the same path as the embedded models (:func:`load_planted_model` writes a
TransformerLens-native checkpoint directory and calls
:func:`~circuit_gym.models.loading.load_model` on it), so every circuit tool runs on it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from circuit_gym.models.loading import embedded_dir, load_model
from circuit_gym.tasks.base import PromptBatch, Task, logit_diff

N_LAYERS, N_HEADS, D_HEAD, D_MODEL, N_CTX, D_VOCAB = 3, 4, 32, 64, 16, 1024
CONTENT_IDS = tuple(range(500, 516))  # 16 content tokens of the tiny tokenizer
MARKER_ID, QUERY_ID, BOS_ID = 600, 601, 0
PROMPT_LENGTH = 12  # BOS, ten content / marker / answer tokens, QUERY
N_DISTRACTORS = 3

# head roles, flat ids layer * N_HEADS + head
PREVIOUS_TOKEN_HEAD, COPY_HEAD = 0 * N_HEADS + 1, 2 * N_HEADS + 2
PLANTED_HEADS = frozenset({PREVIOUS_TOKEN_HEAD, COPY_HEAD})
BOS_SINK_HEADS = (0 * N_HEADS + 0, 1 * N_HEADS + 1, 2 * N_HEADS + 0)
AVERAGING_HEADS = (0 * N_HEADS + 2, 1 * N_HEADS + 0, 1 * N_HEADS + 3, 2 * N_HEADS + 1)
CURRENT_TOKEN_HEADS = (0 * N_HEADS + 3, 1 * N_HEADS + 2, 2 * N_HEADS + 3)  # the last one writes TOK

_TOKENS = (*CONTENT_IDS, MARKER_ID, QUERY_ID, BOS_ID)
TOK = {tid: i for i, tid in enumerate(_TOKENS)}  # token id -> TOK dimension
POS0 = len(_TOKENS)
PREV0 = POS0 + N_CTX
SPARE0 = PREV0 + len(_TOKENS)
N_SPARE = D_MODEL - SPARE0
GAIN = 3.0  # query/key gain: attention is close to one-hot
COPY_GAIN = 3.0  # the copy head's output: a logit difference of several units

CONFIG = {
    "n_layers": N_LAYERS, "n_heads": N_HEADS, "d_model": D_MODEL, "d_head": D_HEAD, "n_ctx": N_CTX,
    "d_vocab": D_VOCAB, "attn_only": True, "normalization_type": "LN", "positional_embedding_type": "standard",
    "act_fn": "gelu", "architecture": "TransformerLensNative",
}  # fmt: skip


def planted_state_dict() -> dict[str, torch.Tensor]:
    """The model's weights, in the TransformerLens-native checkpoint layout."""
    n_tok = len(_TOKENS)
    state: dict[str, torch.Tensor] = {}
    embed = torch.zeros(D_VOCAB, D_MODEL)
    for tid, dim in TOK.items():
        embed[tid, dim] = 1.0
    pos = torch.zeros(N_CTX, D_MODEL)
    pos[torch.arange(N_CTX), POS0 + torch.arange(N_CTX)] = 1.0
    state["tok_embed.weight"], state["pos.weight"] = embed, pos
    for layer in range(N_LAYERS):
        q, k, v = (torch.zeros(N_HEADS * D_HEAD, D_MODEL) for _ in range(3))
        q_bias = torch.zeros(N_HEADS * D_HEAD)
        o = torch.zeros(D_MODEL, N_HEADS * D_HEAD)
        for head in range(N_HEADS):
            flat, rows = layer * N_HEADS + head, slice(head * D_HEAD, (head + 1) * D_HEAD)
            qh, kh, vh, oh = q[rows], k[rows], v[rows], o[:, rows]  # views: edits land in q, k, v, o
            for t in range(n_tok):  # every head reads token identities as values
                vh[t, t] = 1.0
            if flat == PREVIOUS_TOKEN_HEAD:
                for p in range(N_CTX - 1):  # query at p + 1 matches the key at p
                    qh[p + 1, POS0 + p + 1] = GAIN
                    kh[p + 1, POS0 + p] = GAIN
                for t in range(n_tok):
                    oh[PREV0 + t, t] = 1.0
            elif flat == COPY_HEAD:
                qh[0, TOK[QUERY_ID]] = GAIN
                kh[0, PREV0 + TOK[MARKER_ID]] = GAIN
                vh.zero_()
                for t in range(len(CONTENT_IDS)):
                    vh[t, t] = 1.0
                    oh[t, t] = COPY_GAIN
            elif flat in BOS_SINK_HEADS:
                q_bias[head * D_HEAD] = GAIN
                kh[0, TOK[BOS_ID]] = GAIN
                _write_spare(oh, n_tok)
            elif flat in AVERAGING_HEADS:  # q = k = 0: uniform attention over the prefix
                _write_spare(oh, n_tok)
            elif flat in CURRENT_TOKEN_HEADS:
                for p in range(N_CTX):
                    qh[p, POS0 + p] = GAIN
                    kh[p, POS0 + p] = GAIN
                if layer == N_LAYERS - 1:
                    for t in range(n_tok):
                        oh[t, t] = 0.5  # general work: "repeat the current token"
                else:
                    _write_spare(oh, n_tok)
            else:
                raise AssertionError(f"head {flat} has no role")
        prefix = f"layers.{layer}"
        state[f"{prefix}.ln1.weight"], state[f"{prefix}.ln1.bias"] = torch.ones(D_MODEL), torch.zeros(D_MODEL)
        for name, weight in (("q", q), ("k", k), ("v", v), ("o", o)):
            state[f"{prefix}.attn.{name}.weight"] = weight
            state[f"{prefix}.attn.{name}.bias"] = torch.zeros(weight.shape[0])
        state[f"{prefix}.attn.q.bias"] = q_bias
    state["ln_out.weight"], state["ln_out.bias"] = torch.ones(D_MODEL), torch.zeros(D_MODEL)
    unembed = torch.zeros(D_VOCAB, D_MODEL)
    for tid, dim in TOK.items():
        if tid != BOS_ID:
            unembed[tid, dim] = 1.0
    state["head.weight"] = unembed
    return state


def _write_spare(oh: torch.Tensor, n_tok: int) -> None:
    for t in range(n_tok):
        oh[SPARE0 + t % N_SPARE, t] = 0.5


def write_planted_checkpoint(directory: str | Path) -> Path:
    """A checkpoint directory (config, safetensors, the tiny model's tokenizer) for load_model."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(CONFIG, indent=1))
    save_file(
        {k: v.contiguous() for k, v in planted_state_dict().items()}, str(directory / "model.safetensors")
    )
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(embedded_dir("tiny") / name, directory / name)
    return directory


def load_planted_model(device: str = "cpu"):
    """The planted model as a TransformerBridge, through :func:`load_model` like every model."""
    with tempfile.TemporaryDirectory() as tmp:
        return load_model("planted", path=write_planted_checkpoint(tmp), device=device)


def _prompt(
    rng: np.random.Generator, avoid_marker: int | None = None
) -> tuple[list[int], int, int, list[int]]:
    """(tokens, marker position, answer, distractors) of one prompt."""
    n_inner = PROMPT_LENGTH - 2  # between BOS and QUERY
    choices = [p for p in range(1, n_inner) if p != avoid_marker]  # the answer must fit after the marker
    marker = int(rng.choice(choices))
    content = [int(t) for t in rng.choice(CONTENT_IDS, size=n_inner - 1, replace=False)]
    answer, others = content[0], content[1:]
    inner = others[: marker - 1] + [MARKER_ID, answer] + others[marker - 1 :]
    return [BOS_ID, *inner, QUERY_ID], marker, answer, others[:N_DISTRACTORS]


def make_planted_batch(tokenizer, split: str, batch_size: int, rng: np.random.Generator) -> PromptBatch:
    """Prompts of the planted task; the counterfactual moves the marker and changes the answer."""
    tokens, cf, answers, distractors = [], [], [], []
    for _ in range(batch_size):
        prompt, marker, answer, others = _prompt(rng)
        while True:
            cf_prompt, _, cf_answer, _ = _prompt(rng, avoid_marker=marker)
            if cf_answer != answer:
                break
        tokens.append(prompt)
        cf.append(cf_prompt)
        answers.append([answer])
        distractors.append([others])
    return PromptBatch(
        task="planted_copy", split=split, seed=0, template="BOS c.. MARKER X c.. QUERY",
        tokens=torch.tensor(tokens), positions=torch.tensor([PROMPT_LENGTH - 1]),
        answers=torch.tensor(answers), distractors=torch.tensor(distractors), counterfactual=torch.tensor(cf),
    )  # fmt: skip


PLANTED_TASK = Task(
    name="planted_copy", make_batch=make_planted_batch, metric=logit_diff,
    description="copy the token after the marker (the planted model's task)", family="copying",
    unit="logit difference",
)  # fmt: skip
