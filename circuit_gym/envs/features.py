"""Per-head observation features: what each head does on the episode's prompts.

Computed from one clean forward pass over the prompt batch, with no task identity and
no answer labels, so a policy trained on some tasks can be run on any other. Each
feature is a mean over the batch (and over query positions where it says so):

====  ==================  ===============================================================
 idx  name                meaning
====  ==================  ===============================================================
  0   bos_attn            attention to the first token (BOS), mean over query positions
  1   prev_attn           attention to the previous token
  2   duplicate_attn      attention to earlier occurrences of the current token, mean
                          over the query positions that have one (0 if none has)
  3   induction_attn      attention to tokens that *follow* an earlier occurrence of the
                          current token (the induction stripe), mean over the query
                          positions that have such a token (0 if none has)
  4   entropy             attention entropy, divided by its maximum log(q + 1)
  5   last_bos_attn       at the final position: attention to BOS
  6   last_entropy        at the final position: normalised attention entropy
  7   last_copy           at the final position: how much the head's direct effect on the
                          logits raises the tokens it attends to (attention-weighted
                          z-score of those tokens' direct logits; copying heads score high)
  8   output_norm         mean norm of the head's output (z @ W_O), divided by the largest
                          head's in this episode
  9   depth               layer / (n_layers - 1)
 10   ablated             1 if the head is already ablated in this episode (set by the env)
 11   step_fraction       steps taken / episode length (same for every head; set by the env)
====  ==================  ===============================================================

The ``"prediction"`` feature set (``features="prediction"``, opt-in on every ID) appends three
columns about what each head does to the model's *own* top prediction at the final position
(its argmax, never the answer label) and to text in general:

====  ==================  ===============================================================
 12   top_direct          the head's direct effect on the model's top-1 minus top-2 logit,
                          in units of the spread (std over the vocabulary) of that head's
                          direct logits (scale-free, like ``last_copy``)
 13   top_attribution     attribution-patching estimate of how much replacing the head's
                          output by its mean over the batch lowers the model's top-1 minus
                          top-2 logit, in logits (positive = the prediction depends on the
                          head); ``circuit_gym.ablation.attribution``
 14   general_damage      the rise of next-token loss on the general reference batch when
                          the head alone is ablated, nats: the general half of the reward,
                          the same in every episode (it involves no task)
====  ==================  ===============================================================

The ``"causal"`` feature set (``features="causal"``, opt-in on every ID of both environments;
``circuit_gym.envs.causal_features`` computes it, ``info["feature_passes"]`` reports its cost)
measures each head's causal effect on a **task-free** metric: ``M`` = the clean model's own
top-1 minus top-2 logit at the task's metric positions (the two token ids fixed on the clean
run; ``circuit_gym.ablation.margin``), averaged over prompts and positions, never the answer
label. Head scores are divided by the clean ``M``, so they are fractions of the model's own
prediction margin. Single-head environment (15 columns, the 12 above first):

====  ==================  ===============================================================
 12   margin_attribution  attribution-patching estimate of the drop of ``M`` when the head
                          alone is ablated (the env's ablation), / clean ``M``
 13   margin_eap_ig       EAP-IG score of the head under ``M`` (integrated gradients on the
                          path from every head ablated to the clean run, 5 steps), / clean ``M``
 14   steps_left          actions the episode still allows / number of heads
====  ==================  ===============================================================

Circuit-building environment (20 columns; 0-9 as above, then its own 10-12: ``member`` = 1 for
heads in the circuit, ``faithfulness`` = f of the circuit under the task's metric, ``budget_used``
= steps taken / budget):

====  ==========================  ======================================================
 13   margin_attribution          as column 12 of the single-head set
 14   margin_eap_ig               as column 13 of the single-head set
 15   position                    (i + 1) / budget for the i-th head the episode changed
                                  (added from empty, removed from full), 0 otherwise
 16   faithfulness_change         the change of column 11 the last action made (0 after
                                  reset, STOP or a no-op)
 17   margin_faithfulness         f of the current circuit under ``M``:
                                  ``(M(C) - M(empty)) / (M(full) - M(empty))``, 0 where
                                  ``M(full) == M(empty)``
 18   margin_faithfulness_change  the change of column 17 the last action made
 19   steps_left                  actions the budget still allows / number of heads
====  ==========================  ======================================================

Column 11 (and so 16) is the environment's own objective, the task metric's faithfulness
(the reward reveals it as well); every other column is unchanged when only a batch's answer
labels change (``tests/test_causal_features.py``).
"""

from __future__ import annotations

import numpy as np
import torch

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.heads import pattern_hook, z_hook
from circuit_gym.models.loading import model_device

FEATURE_NAMES = (
    "bos_attn", "prev_attn", "duplicate_attn", "induction_attn", "entropy", "last_bos_attn",
    "last_entropy", "last_copy", "output_norm", "depth", "ablated", "step_fraction",
)  # fmt: skip
N_FEATURES = len(FEATURE_NAMES)
N_STATIC = N_FEATURES - 2  # the last two change within an episode
ABLATED_COLUMN = N_STATIC  # the same column in every feature set
PREDICTION_FEATURE_NAMES = ("top_direct", "top_attribution", "general_damage")
CAUSAL_FEATURE_NAMES = ("margin_attribution", "margin_eap_ig", "steps_left")
# The observation every environment gives unless asked for another (and the board's default).
DEFAULT_FEATURES = "attention"
FEATURE_SETS = {DEFAULT_FEATURES: FEATURE_NAMES, "prediction": FEATURE_NAMES + PREDICTION_FEATURE_NAMES,
                "causal": FEATURE_NAMES + CAUSAL_FEATURE_NAMES}  # fmt: skip
# The circuit-building environment's columns (its feature sets: "attention" and "causal").
CIRCUIT_FEATURE_NAMES = FEATURE_NAMES[:N_STATIC] + ("member", "faithfulness", "budget_used")
CIRCUIT_CAUSAL_NAMES = ("margin_attribution", "margin_eap_ig", "position", "faithfulness_change",
                        "margin_faithfulness", "margin_faithfulness_change", "steps_left")  # fmt: skip
# Columns that are the same in every row (the episode's state, not a head's).
STATE_FEATURES = frozenset({"step_fraction", "faithfulness", "budget_used", "faithfulness_change",
                            "margin_faithfulness", "margin_faithfulness_change", "steps_left"})  # fmt: skip
CIRCUIT_FEATURE_SETS = {
    DEFAULT_FEATURES: CIRCUIT_FEATURE_NAMES,
    "causal": CIRCUIT_FEATURE_NAMES + CIRCUIT_CAUSAL_NAMES,
}
FEATURE_BOUND = 10.0


def _mean_where_defined(pattern: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Attention to ``keys`` [b, q, k], averaged over the query positions that have any such
    key: a prompt with one repeated name and one with many repeats score on the same scale."""
    defined = keys.any(-1)  # [b, q]
    attn = (pattern * keys[:, None]).sum(-1)  # [b, h, q]
    count = defined.sum()
    if count == 0:
        return torch.zeros(pattern.shape[1], device=pattern.device)
    return (attn * defined[:, None]).sum((0, 2)) / count


@torch.no_grad()
def head_features(model, tokens: torch.Tensor) -> np.ndarray:
    """Static features, shape ``[n_layers * n_heads, N_STATIC]``, float32."""
    n_layers, n_heads = int(model.cfg.n_layers), int(model.cfg.n_heads)
    names = {hook(layer) for layer in range(n_layers) for hook in (pattern_hook, z_hook)}
    tokens = tokens.to(model_device(model))
    _, cache = model.run_with_cache(tokens, names_filter=lambda n: n in names)
    batch, seq = tokens.shape
    q = torch.arange(seq, device=tokens.device)
    same = tokens[:, :, None] == tokens[:, None, :]  # [b, q, k] token(q) == token(k)
    earlier = q[None, :] < q[:, None]
    duplicate = same & earlier  # k < q with the same token
    # induction: k such that token(k - 1) == token(q) and k - 1 < q
    induction = torch.zeros_like(same)
    induction[:, :, 1:] = same[:, :, :-1] & (q[None, :-1] < q[:, None])
    prev = torch.zeros(seq, seq, dtype=torch.bool, device=tokens.device)
    prev[q[1:], q[1:] - 1] = True
    queries = slice(1, seq)  # position 0 can only attend to itself
    log_norm = torch.log(q[queries].float() + 1)

    W_O = model.W_O  # [layer, head, d_head, d_model]
    W_U = model.W_U  # [d_model, vocab]
    feats = np.zeros((n_layers, n_heads, N_STATIC), dtype=np.float32)
    norms = np.zeros((n_layers, n_heads), dtype=np.float32)
    for layer in range(n_layers):
        pat = cache[pattern_hook(layer)].float()  # [b, h, q, k]
        z = cache[z_hook(layer)].float()  # [b, pos, h, d_head]
        p = pat[:, :, queries]
        ent = -(p * torch.log(p.clamp_min(1e-12))).sum(-1) / log_norm  # [b, h, q]
        feats[layer, :, 0] = p[..., 0].mean((0, 2)).cpu().numpy()
        feats[layer, :, 1] = (pat * prev).sum(-1)[:, :, queries].mean((0, 2)).cpu().numpy()
        feats[layer, :, 2] = _mean_where_defined(pat, duplicate).cpu().numpy()
        feats[layer, :, 3] = _mean_where_defined(pat, induction).cpu().numpy()
        feats[layer, :, 4] = ent.mean((0, 2)).cpu().numpy()
        feats[layer, :, 5] = pat[:, :, -1, 0].mean(0).cpu().numpy()
        feats[layer, :, 6] = ent[:, :, -1].mean(0).cpu().numpy()
        out = torch.einsum("bphd,hdm->bphm", z, W_O[layer].float())  # per-head outputs
        norms[layer] = out.norm(dim=-1).mean((0, 1)).cpu().numpy()
        dla = out[:, -1] @ W_U.float()  # [b, h, vocab] direct logits at the final position
        dla = (dla - dla.mean(-1, keepdim=True)) / (dla.std(-1, keepdim=True) + 1e-6)
        attended = dla.gather(-1, tokens[:, None, :].expand(-1, n_heads, -1))  # [b, h, k]
        feats[layer, :, 7] = (pat[:, :, -1] * attended).sum(-1).mean(0).cpu().numpy()
        feats[layer, :, 9] = layer / max(1, n_layers - 1)
    feats[:, :, 8] = norms / max(float(norms.max()), 1e-12)
    return np.clip(feats.reshape(n_layers * n_heads, N_STATIC), -FEATURE_BOUND, FEATURE_BOUND)


@torch.no_grad()
def prediction_features(model, tokens: torch.Tensor) -> np.ndarray:
    """``top_direct`` and ``top_attribution`` (see the module's table), shape
    ``[n_layers * n_heads, 2]``, float32. Two forward passes (the clean one with its cache,
    then attribution patching's) and one backward pass."""
    n_layers, n_heads = int(model.cfg.n_layers), int(model.cfg.n_heads)
    names = {z_hook(layer) for layer in range(n_layers)}
    tokens = tokens.to(model_device(model))
    logits, cache = model.run_with_cache(tokens, names_filter=lambda n: n in names)
    top2 = logits[:, -1].topk(2, dim=-1).indices  # [b, 2] the model's own top two, not labels
    clean_z = [cache[z_hook(layer)] for layer in range(n_layers)]
    mean_z = [z.mean((0, 1), keepdim=True).expand_as(z) for z in clean_z]

    def top_margin(logits: torch.Tensor) -> torch.Tensor:
        # top-1 minus top-2 logit: unlike log p(top-1) it does not saturate on confident
        # predictions (on the training tasks' train split its argmax matched the oracle
        # head in 10 of 32 batches, against 4 for the log-probability)
        final = logits[:, -1].float().gather(-1, top2)
        return (final[:, 0] - final[:, 1]).mean()

    change = attribution_patching(model, tokens, clean_z, mean_z, top_margin)
    W_O, W_U = model.W_O.float(), model.W_U.float()
    direct = np.zeros((n_layers, n_heads), dtype=np.float32)
    for layer, z in enumerate(clean_z):
        dla = torch.einsum("bhd,hdm->bhm", z[:, -1].float(), W_O[layer]) @ W_U  # [b, h, vocab]
        pair = dla.gather(-1, top2[:, None, :].expand(-1, n_heads, -1))  # [b, h, 2]
        spread = dla.std(-1) + 1e-6
        direct[layer] = ((pair[..., 0] - pair[..., 1]) / spread).mean(0).cpu().numpy()
    out = np.stack([direct.reshape(-1), -change.astype(np.float32)], axis=1)
    return np.clip(out, -FEATURE_BOUND, FEATURE_BOUND)
