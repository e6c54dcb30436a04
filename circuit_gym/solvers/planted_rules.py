"""Observation-only reference rules of the Planted track: what a method gets without running the
model, and what memorising the public planted models gets.

Each rule scores every head once per episode from the episode's first observation (the
circuit-building environment's static columns, ``circuit_gym.envs.features``), adds its
:data:`PROPOSED` best heads, then says STOP; its scores order the heads it never added. They play
the circuit track's protocol (``circuit_gym.solvers.episodes.CircuitSolver``) and read nothing of
the environment but the observation and the action mask:

- ``random``: a fresh random order each episode (seeded once per scoring run);
- ``shallow_first``: heads in order of depth (``0.0``, ``0.1``, ...);
- ``feature``: one observation column, with a sign (:func:`choose_column` picks them on the
  public seeds);
- ``memoriser``: heads by how often they were circuit heads (of any kind) in the public planted
  models; it has seen those models' truth, so it is the rule that must fail on fresh seeds.

:data:`PROPOSED` = 3, the size of every planted circuit but induction's (2): each rule is told
the circuit's size, not which heads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from circuit_gym.envs.features import FEATURE_NAMES, N_STATIC
from circuit_gym.models.planted.recovery import ranking_auc

PROPOSED = 3
COLUMNS = FEATURE_NAMES[:N_STATIC]  # the static per-head columns of the circuit observation


class ScoreRule:
    """Adds the :data:`PROPOSED` heads ``score(observation)`` puts first, then STOP."""

    def __init__(self, name: str, score: Callable[[np.ndarray], np.ndarray]) -> None:
        self.name = name
        self._score = score
        self._scores = np.zeros(0)

    def begin(self, env) -> int:
        self._scores = np.zeros(0)  # scored at the first act, from the observation
        return 0  # no pass of its own

    def _ensure(self, obs: np.ndarray) -> np.ndarray:
        if self._scores.size == 0:
            self._scores = np.asarray(self._score(np.asarray(obs)), dtype=np.float64)
        return self._scores

    def act(self, env, obs: np.ndarray, info: dict) -> int:
        scores, mask = self._ensure(obs), np.asarray(info["action_mask"])
        n = len(scores)
        free = np.flatnonzero(mask[:n])
        if n - len(free) >= PROPOSED or len(free) == 0:  # from empty, the masked heads are the circuit
            return n
        return int(free[np.lexsort((free, -scores[free]))[0]])

    def scores(self, env, obs: np.ndarray, info: dict) -> np.ndarray:
        return self._ensure(obs)


def random_rule(seed: int = 0) -> ScoreRule:
    rng = np.random.default_rng(seed)
    return ScoreRule("random", lambda obs: rng.permutation(obs.shape[0]).astype(np.float64))


def shallow_first() -> ScoreRule:
    return ScoreRule("shallow_first", lambda obs: -np.arange(obs.shape[0], dtype=np.float64))


def feature_rule(column: int, sign: float) -> ScoreRule:
    if not 0 <= column < len(COLUMNS) or sign not in (1.0, -1.0):
        raise ValueError(f"column must be in [0, {len(COLUMNS)}) and sign +1 or -1, got {column}, {sign}")
    return ScoreRule("feature", lambda obs: sign * obs[:, column])


def circuit_frequency(circuits: Iterable[Iterable[int]], n_heads_total: int) -> np.ndarray:
    """How many of ``circuits`` each head belongs to."""
    counts = np.zeros(n_heads_total, dtype=np.float64)
    for circuit in circuits:
        counts[list(circuit)] += 1
    return counts


def memoriser(circuits: Iterable[Iterable[int]], n_heads_total: int = 144) -> ScoreRule:
    """Heads by how often they are in ``circuits`` (the public models' true circuits)."""
    counts = circuit_frequency(circuits, n_heads_total)
    return ScoreRule("memoriser", lambda obs: counts.copy())


def choose_column(
    observations: Sequence[np.ndarray], truths: Sequence[Iterable[int]]
) -> tuple[int, float, float]:
    """The static column and sign whose ranking has the best mean AUC over the episodes
    (``observations[i]``: an episode's first observation, ``truths[i]``: its true circuit);
    returns (column, sign, that mean AUC). Ties: the lower column, + before -."""
    if not observations or len(observations) != len(truths):
        raise ValueError("give one true circuit per observation, at least one")
    truths = [set(t) for t in truths]
    best: tuple[int, float, float] | None = None
    for column in range(len(COLUMNS)):
        for sign in (1.0, -1.0):
            aucs = []
            for obs, truth in zip(observations, truths, strict=True):
                key = sign * np.asarray(obs)[:, column]
                order = np.lexsort((np.arange(len(key)), -key))
                aucs.append(ranking_auc(order.tolist(), truth))
            mean = float(np.mean(aucs))
            if best is None or mean > best[2]:
                best = (column, sign, mean)
    assert best is not None
    return best
