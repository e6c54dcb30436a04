"""A single-head policy's preferences as a circuit ranking, and their CPR / CMD per episode.

A policy's scores (one per head, higher = ablate first) mean nothing by sign or size (a
policy's logits), so :func:`preference_ranking` keeps only their order: rank-transformed scores
are positive, and MIB's two ranking rules (signed for CPR, absolute for CMD) agree on them.
The leaderboard's circuit scores of single-head entries and the main job's circuit table both
use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from circuit_gym.circuits.area import cmd, cpr
from circuit_gym.circuits.curve import faithfulness_curves
from circuit_gym.circuits.ranking import Ranking
from circuit_gym.circuits.runner import CircuitRunner
from circuit_gym.stats import mean_ci95


def preference_ranking(scores: np.ndarray, method: str, n_layers: int, n_heads: int) -> Ranking:
    """A policy's preferences as a ranking by order only (ranks 1..n, ties averaged)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (n_layers * n_heads,) or not np.all(np.isfinite(scores)):
        raise ValueError(f"expected {n_layers * n_heads} finite scores, got shape {scores.shape}")
    return Ranking.from_array(rankdata(scores), method, n_layers, n_heads)


def episode_areas(env, scores: np.ndarray) -> dict:
    """CPR and CMD of a policy's preferences on ``env``'s current episode (the leaderboard's
    circuit score per episode; the scorer, not the policy, runs the circuits)."""
    base = env.unwrapped
    episode = base.episode
    runner = CircuitRunner.for_task(base.model, episode.pool.task, episode.batch, base.ablation)
    ranking = preference_ranking(scores, "submission", runner.n_layers, runner.n_heads)
    signed, absolute = faithfulness_curves(runner, [(ranking, False), (ranking, True)])
    return {"cpr": cpr(signed), "cmd": cmd(absolute)}


def areas_summary(per_episode: Sequence[dict]) -> dict:
    """Mean CPR and CMD over episodes with 95% Student-t intervals (NaN areas are not averaged)."""
    out = {}
    for key in ("cpr", "cmd"):
        values = [e[key] for e in per_episode if e.get(key) is not None and np.isfinite(e[key])]
        out[key], out[f"{key}_ci95"] = mean_ci95(values)
        out[f"{key}_episodes"] = len(values)
    return out
