"""Random circuit builder: adds legal heads in a seeded random order until the budget ends.

The circuit track's random reference for the leaderboard (``circuit_gym.policy.CircuitBuilder``):
it never says STOP, so its circuits have the budget's size, and its final ranking is random.
"""

from __future__ import annotations

import numpy as np


class RandomCircuitPolicy:
    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        heads = np.flatnonzero(np.asarray(action_mask)[: observation.shape[0]])
        return int(self.rng.choice(heads)) if len(heads) else observation.shape[0]  # STOP when full

    def rank_heads(self, observation: np.ndarray) -> np.ndarray:
        return self.rng.random(observation.shape[0])


def make_policy() -> RandomCircuitPolicy:
    """Factory for ``circuit-gym leaderboard score --track v8-circuit --policy
    circuit_gym.baselines.circuit_random_policy:make_policy``."""
    return RandomCircuitPolicy(seed=0)
