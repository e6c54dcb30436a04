"""Best-of-k planning: try a solver's k preferred heads, keep the best.

Trying a head means ablating it and observing the reward, which is exactly what the
environment offers; no oracle field is read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PlanResult:
    head: int  # the best of the k heads tried
    reward: float  # its reward from the current state
    tried: tuple[int, ...]  # the k heads, in the solver's order


def top_k_heads(scores: np.ndarray, k: int, action_mask: np.ndarray | None = None) -> list[int]:
    """The k highest-scoring valid heads (ties broken by lower head id)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1:
        raise ValueError(f"scores must be one number per head, got shape {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite (got NaN or infinity)")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    valid = np.arange(len(scores)) if action_mask is None else np.flatnonzero(action_mask)
    order = valid[np.argsort(-scores[valid], kind="stable")]
    return [int(h) for h in order[:k]]


def best_of_k(env, scores: np.ndarray, k: int) -> PlanResult:
    """Evaluate the top-k heads of ``scores`` in ``env``'s current state; return the best."""
    base = env.unwrapped
    tried = top_k_heads(scores, k, base.action_mask())
    rewards = base.single_head_rewards(tried)
    best = int(np.argmax(rewards))
    return PlanResult(head=tried[best], reward=float(rewards[best]), tried=tuple(tried))
