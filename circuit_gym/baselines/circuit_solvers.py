"""Solvers of the circuit-building IDs, and the circuit track that scores them by CPR / CMD.

The episode protocol (:func:`play`, :func:`play_episode`, :func:`episode_ranking`,
:func:`summarize_track`) and the white-box solvers (:class:`GreedySearch`,
:class:`AttributionInsertion`, ACDC and EAP-IG) live in ``circuit_gym.solvers`` (the leaderboard
runs them too) and are re-exported here; :class:`RandomInsertion` and :func:`circuit_track` are
the baselines' own.

Each solver plays episodes of :class:`~circuit_gym.envs.circuit_building.CircuitBuildingEnv`
(``start="empty"``): it adds heads until it says STOP or the budget ends. The heads it added,
in order, are the top of its :class:`~circuit_gym.circuits.Ranking`; the heads it never added
follow, ordered by the solver's own scores at the end of the episode. That ranking's
faithfulness curve gives the episode's CPR and CMD (``circuit_gym.circuits``).

- :class:`GreedySearch`: the exact upper reference. Each step runs every candidate circuit
  (one stacked pass, ``env.candidate_gains()``), adds the head that raises faithfulness most,
  STOPs when no head's gain beats ``alpha``. Cost: one pass per candidate per step.
- :class:`AttributionInsertion`: attribution patching (Nanda 2023) ranks every head from one
  forward and one backward pass at the start; heads are added in that order while the
  estimated gain beats ``alpha``.
- :class:`RandomInsertion`: a seeded random order, to the budget.
- PPO: ``baselines.circuit_ppo.CircuitPPOSolver``.

Forward passes per episode (``forward_passes`` of a row) = what the environment's observations
and rewards cost (its ``info["forward_passes"]``: the episode's setup passes and one per head
added) + the solver's own: greedy's candidate evaluations (``info["oracle_forward_passes"]``),
attribution's forward and backward pass. A stacked pass of ``k`` circuits counts ``k``.

    rows = circuit_track("toy", HELD_OUT_TASKS, "test", range(4), default_solvers())

Greedy candidates run in one process here; ``circuit_gym/baselines/circuit_ray.py``'s ``RayGreedySearch``
fans them out over Ray actors with the same numbers (``scripts/circuit_track.py --ray-workers N``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import gymnasium as gym
import numpy as np

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym.circuits import batch_scores
from circuit_gym.embedded import is_embedded
from circuit_gym.envs.circuit_building import CircuitBuildingEnv
from circuit_gym.envs.registration import circuit_env_id
from circuit_gym.progress import progress_iter
from circuit_gym.solvers.episodes import CircuitSolver, episode_ranking, play, play_episode, summarize_track
from circuit_gym.solvers.white_box import (
    ATTRIBUTION_PASSES,
    AttributionInsertion,
    GreedySearch,
    attribution_scores,
)

__all__ = ["ATTRIBUTION_PASSES", "AttributionInsertion", "CircuitSolver", "GreedySearch", "RandomInsertion",
           "attribution_scores", "circuit_track", "default_solvers", "episode_ranking", "play", "play_episode",
           "summarize_track"]  # fmt: skip


class RandomInsertion:
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self._scores = np.zeros(0)

    def begin(self, env: CircuitBuildingEnv) -> int:
        self._scores = self.rng.random(env.n_total)
        return 0

    def act(self, env, obs, info) -> int:
        free = np.flatnonzero(info["action_mask"][: env.n_total])
        return int(free[np.argmax(self._scores[free])]) if len(free) else env.stop_action

    def scores(self, env, obs, info) -> np.ndarray:
        return self._scores


def circuit_track(model: str, tasks: Iterable[str], split: str, episodes: Iterable[int],
                  solvers: dict[str, Callable[[], CircuitSolver]], *, budget: int = 16, alpha: float = 0.01,
                  batch_size: int = 8, n_random: int = 8, model_path: str | None = None,
                  progress: bool = False) -> dict:  # fmt: skip
    """Every solver on every (task, episode) of ``split``: CPR / CMD of the circuits its
    episodes build and forward passes per episode.

    Returns ``{"rows": one per (solver, task) with means and 95% intervals over episodes,
    "episodes": one per episode}``. ``solvers`` maps a name to a factory (a fresh solver per
    task, so a random solver's draws do not depend on the task order)."""
    tasks, episodes = tuple(tasks), tuple(int(e) for e in episodes)
    key = "Toy" if is_embedded(model) else "GPT2"
    kwargs = dict(model=model, split=split, pool_size=max(episodes) + 1, batch_size=batch_size,
                  budget=budget, alpha=alpha, oracle_info=False)  # fmt: skip
    if model_path:
        kwargs["model_path"] = model_path
    env = gym.make(circuit_env_id(key, "Multi"), **kwargs)
    jobs = [(name, task, e) for name in solvers for task in tasks for e in episodes]
    per_episode, solver, current = [], None, None
    for name, task, e in progress_iter(jobs, "circuit track", unit="episode", requested=progress):
        if current != (name, task):
            solver, current = solvers[name](), (name, task)
        row = play_episode(env, solver, task, e)
        row["solver"] = name
        scores = batch_scores(env.unwrapped.state.runner, row.pop("ranking"), n_random=n_random, seed=e)
        row.update({k: scores[k] for k in ("cpr", "cmd", "cpr_random", "cmd_random")})
        row["curve"] = scores["curve"]["faithfulness"]
        per_episode.append(row)
    return {"rows": summarize_track(per_episode), "episodes": per_episode}


def default_solvers(seed: int = 0) -> dict[str, Callable[[], CircuitSolver]]:
    """Exact greedy search, attribution-ranked insertion and random insertion."""
    return {"greedy_search": GreedySearch, "attribution": AttributionInsertion,
            "random": lambda: RandomInsertion(seed)}  # fmt: skip
