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


def check_scores(scores, n_heads_total: int, where: str = "") -> np.ndarray:
    """Validate a policy's output; a clear error instead of a silently wrong ranking. ``where``: the
    episode, named in the error (``"task ioi, batch 3"``)."""
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InvalidScoresError(f"scores are not numeric: {err}") from None
    if arr.shape != (n_heads_total,):
        raise InvalidScoresError(f"expected {n_heads_total} scores (one per head), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr))
        heads = ", ".join(f"head {int(h)} ({arr[h]})" for h in bad[:5]) + (
            f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        )
        raise InvalidScoresError(
            f"scores contain NaN or infinity: {heads}" + (f", in the episode of {where}" if where else "")
        )
    return arr


# The circuit track (``CircuitDiscovery-*-Circuit-v0``): a circuit-building policy also says,
# at each step, which head to add next (or STOP), from the observation and the legal actions.
@runtime_checkable
class CircuitBuilder(Protocol):
    """``act(observation, action_mask) -> int``: a legal action of the circuit-building env
    (a flat head id, or ``n_heads_total`` = STOP); ``rank_heads(observation)`` (as
    :class:`HeadRanker`) orders, at the episode's end, the heads the policy never added."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...

    def rank_heads(self, observation: np.ndarray) -> np.ndarray: ...


class InvalidActionError(ValueError):
    """A circuit-building policy returned something that is not a legal action."""


def check_action(action, action_mask: np.ndarray) -> int:
    """``action`` as an int if it is a legal action under ``action_mask``, else InvalidActionError.

    Only plain integers (Python or NumPy, not bool) are accepted: a float or a string is an
    error, never silently rounded."""
    if isinstance(action, bool | np.bool_) or not isinstance(action, int | np.integer):
        raise InvalidActionError(f"action must be an integer, got {type(action).__name__}: {action!r:.80}")
    n = len(action_mask)
    if not 0 <= int(action) < n:
        raise InvalidActionError(f"action {int(action)} is outside 0 .. {n - 1}")
    if not action_mask[int(action)]:
        raise InvalidActionError(f"action {int(action)} is masked (a head already changed)")
    return int(action)
