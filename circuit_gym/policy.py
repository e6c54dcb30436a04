"""The policy protocol: what every solver, and every leaderboard submission, implements.

A policy is any object with::

    rank_heads(observation: np.ndarray) -> np.ndarray

``observation`` is the environment's ``[n_heads_total, n_features]`` float32 array (see
``circuit_gym.envs.features``); the result is one finite score per head, higher meaning
"ablate this head first". Best-of-k evaluation tries the k highest-scoring heads. The
policy sees nothing else: no task name, no answers, no oracle fields.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class HeadRanker(Protocol):
    def rank_heads(self, observation: np.ndarray) -> np.ndarray: ...


class InvalidScoresError(ValueError):
    """A policy returned something that is not one finite score per head."""


def check_scores(scores, n_heads_total: int) -> np.ndarray:
    """Validate a policy's output; a clear error instead of a silently wrong ranking."""
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InvalidScoresError(f"scores are not numeric: {err}") from None
    if arr.shape != (n_heads_total,):
        raise InvalidScoresError(f"expected {n_heads_total} scores (one per head), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidScoresError("scores contain NaN or infinity")
    return arr
