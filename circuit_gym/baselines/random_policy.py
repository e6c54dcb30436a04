"""Random baseline: a uniformly random ranking of the heads (seeded).

python -m circuit_gym.baselines.random_policy    # evaluates it on the Toy tasks
"""

from __future__ import annotations

import numpy as np


class RandomPolicy:
    """Scores every head uniformly at random; best-of-k tries k random distinct heads."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def rank_heads(self, observation: np.ndarray) -> np.ndarray:
        return self.rng.random(observation.shape[0])


def make_policy() -> RandomPolicy:
    """Factory for ``circuit-gym leaderboard score --policy circuit_gym.baselines.random_policy:make_policy``."""
    return RandomPolicy(seed=0)


if __name__ == "__main__":
    from circuit_gym.baselines.common import evaluate_and_print

    evaluate_and_print("random", lambda obs, env: make_policy().rank_heads(obs))
