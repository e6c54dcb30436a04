"""Self-repair and redundancy of a model's heads on one task batch, and how far one-pass
attributions agree with the exhaustive single-head oracle (issue 41's pilot measures).

On one prompt batch, with the board's ablation (resample: a head's output replaced by its value on
the counterfactual prompt), and the task metric averaged over the batch (higher = better):

- **task damage** of a head set S: ``m(clean) - m(S ablated)``; the **top head** is the one with
  the largest single-head damage (the exhaustive oracle on the task damage, no general-damage
  term), the **top pair** the two largest;
- **direct effect** of a head (Rushing and Nanda 2024): the damage when only its output's path
  straight to the logits changes: the final residual stream moves by ``(z_repl - z) W_O`` of that
  head and the final LayerNorm divides by the clean run's scale (frozen), nothing else re-runs;
  **total effect**: its single-head damage. ``total / direct < 1``: later components compensate;
  **self-repair** = ``direct - total``;
- **redundancy** of the top pair: ``damage(pair) / (damage(h1) + damage(h2))`` (>= 1.5: the pair
  matters far more together than apart, as backup heads make it);
- **agreement** of a method's per-head importance with the oracle's single damages: Spearman's
  rank correlation over all heads, whether its top head is the oracle's, and the overlap of the
  two top-5 sets (out of 5). Methods: attribution patching, EAP-IG (5 steps) and GIM.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import spearmanr

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.ablation.engine import AblationEngine
from circuit_gym.ablation.gim import gim_importance
from circuit_gym.ablation.integrated_gradients import integrated_gradients

EAP_IG_STEPS = 5
TOP_K = 5


def single_damages(engine: AblationEngine) -> np.ndarray:
    """Task damage of every single head (the exhaustive sweep), flat head ids."""
    return engine.clean_score - engine.sweep()


@torch.no_grad()
def direct_effect(engine: AblationEngine, head: int) -> float:
    """The damage through ``head``'s direct path to the logits alone, the final LayerNorm's scale
    frozen at the clean run (module docstring)."""
    model, ev = engine.model, engine.ev
    layer, index = engine.head_layer(head)
    final = f"blocks.{engine.n_layers - 1}.hook_resid_post"
    _, cache = model.run_with_cache(ev.tokens, names_filter=lambda n: n in (final, "ln_final.hook_scale"))
    w_o = model.blocks[layer].attn.W_O[index]  # [d_head, d_model]
    moved = (engine.replacement[layer][:, :, index] - engine.clean_z[layer][:, :, index]) @ w_o
    resid = (cache[final] + moved)[:, ev.positions]
    clean_scale = cache["ln_final.hook_scale"][:, ev.positions]
    centred = resid - resid.mean(-1, keepdim=True)
    ln = model.ln_final
    normalised = centred / clean_scale * ln.weight + ln.original_component.bias
    return engine.clean_score - float(ev.score(model.unembed(normalised)).mean())


def method_importances(engine: AblationEngine) -> dict[str, np.ndarray]:
    """Per-head importance (higher = ablating it lowers the metric more) by each one-pass method."""
    ev = engine.ev

    def mean_score(logits: torch.Tensor) -> torch.Tensor:
        return ev.score(logits[:, ev.positions]).mean()

    change = attribution_patching(engine.model, ev.tokens, engine.clean_z, engine.replacement, mean_score)
    return {
        "attribution": -change,
        "eap_ig": integrated_gradients(engine, EAP_IG_STEPS),
        "gim": gim_importance(engine),
    }


def agreement(oracle: np.ndarray, scores: np.ndarray, k: int = TOP_K) -> dict:
    """Spearman's rank correlation over heads, top-1 hit and top-``k`` overlap (out of ``k``)."""
    top_oracle = set(np.argsort(-oracle, kind="stable")[:k].tolist())
    top_method = set(np.argsort(-scores, kind="stable")[:k].tolist())
    rho = spearmanr(oracle, scores).statistic
    return {"spearman": float(rho), "top1": bool(int(np.argmax(scores)) == int(np.argmax(oracle))),
            f"top{k}_overlap": len(top_oracle & top_method)}  # fmt: skip


def self_repair_measures(engine: AblationEngine) -> dict:
    """Every measure of the module docstring on the engine's batch (JSON-ready; heads as flat ids)."""
    damage = single_damages(engine)
    first, second = (int(h) for h in np.argsort(-damage, kind="stable")[:2])
    total = float(damage[first])
    direct = direct_effect(engine, first)
    pair = engine.clean_score - engine.score([first, second])
    pair_sum = float(damage[first] + damage[second])
    methods = method_importances(engine)
    return {
        "prompts": int(engine.ev.tokens.shape[0]),
        "clean_metric": engine.clean_score,
        "top_head": first,
        "top_head_total": total,
        "top_head_direct": direct,
        "total_over_direct": total / direct if direct != 0 else None,
        "self_repair": direct - total,
        "top_pair": [first, second],
        "pair_damage": pair,
        "pair_single_sum": pair_sum,
        "redundancy": pair / pair_sum if pair_sum != 0 else None,
        "agreement": {name: agreement(damage, scores) for name, scores in methods.items()},
        # language-model passes of each ranking beyond the clean and counterfactual runs: the
        # oracle's sweep replays every layer once (stacked copies), each gradient method one
        # forward and one backward pass (EAP-IG's 5 steps stacked in them)
        "lm_passes": {"oracle": engine.n_layers, "attribution": 2, "eap_ig": 2, "gim": 2},
    }


def rank_of(scores: np.ndarray, head: int) -> int:
    """``head``'s rank under ``scores`` (1 = highest); ties count against it (worst rank among
    equals), so a head a method cannot tell from others is never ranked by luck."""
    return int(np.sum(scores >= scores[head]))


def pair_measures(engine: AblationEngine, primary: int, backup: int) -> dict:
    """A recorded (primary, backup) pair's measures (zoo v3, issue 55) on the engine's batch:
    single and joint damages, the pair's **redundancy** ``damage(P, Q) / (damage(P) + damage(Q))``,
    P's **self-repair** ``1 - total / direct`` (the share of its direct effect later heads undo) and
    where each one-pass method and the exhaustive single-head sweep rank ``Q`` and ``P``."""
    damage = single_damages(engine)
    joint = engine.clean_score - engine.score([primary, backup])
    singles = float(damage[primary] + damage[backup])
    direct = direct_effect(engine, primary)
    methods = {"oracle": damage, **method_importances(engine)}
    return {
        "prompts": int(engine.ev.tokens.shape[0]),
        "clean_metric": engine.clean_score,
        "primary": primary,
        "backup": backup,
        "primary_damage": float(damage[primary]),
        "backup_damage": float(damage[backup]),
        "pair_damage": joint,
        "redundancy": joint / singles if singles > 0 else None,
        # the bar (redundancy >= 2) also holds where both singles are ~0 or below (a perfect OR)
        "super_additive_2x": bool(joint > 0 and joint >= 2 * singles),
        "primary_direct": direct,
        "primary_self_repair": 1 - float(damage[primary]) / direct if direct > 0 else None,
        "backup_rank": {name: rank_of(scores, backup) for name, scores in methods.items()},
        "primary_rank": {name: rank_of(scores, primary) for name, scores in methods.items()},
    }
