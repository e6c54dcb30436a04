"""Fixed baseline: always the head that was most often the oracle on the training tasks.

The trivial memoriser: a policy that claims to *transfer* must beat it on held-out tasks.
Its ranking is the oracle frequency over the training split's episode pools of the
training tasks (ties broken by mean reward).

    python -m circuit_gym.baselines.fixed_policy
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class FixedPolicy:
    def __init__(self, scores: np.ndarray) -> None:
        self.scores = np.asarray(scores, dtype=np.float64)

    def rank_heads(self, observation: np.ndarray) -> np.ndarray:
        if observation.shape[0] != len(self.scores):
            raise ValueError(
                f"fixed policy was fitted on {len(self.scores)} heads, got {observation.shape[0]}"
            )
        return self.scores.copy()

    @classmethod
    def fit(cls, env, tasks: Sequence[str] | None = None, episodes: int = 32) -> FixedPolicy:
        """Count oracle heads over ``episodes`` training batches of each task (default: the
        tasks ``env`` samples, e.g. Multi-v3's training tasks) of ``env``'s pools."""
        base = env.unwrapped
        tasks = tuple(tasks or base.tasks)
        counts = np.zeros(base.n_total)
        mean_reward = np.zeros(base.n_total)
        for task in tasks:
            pool = base.pool(task)
            for i in range(min(episodes, base.pool_size)):
                table = pool.episode(i).table
                counts[table.oracle_head] += 1
                mean_reward += table.reward
        tie_break = mean_reward / max(1.0, np.abs(mean_reward).max()) * 0.5
        return cls(counts + tie_break)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps({"scores": self.scores.tolist()}))

    @classmethod
    def load(cls, path: str | Path) -> FixedPolicy:
        return cls(np.asarray(json.loads(Path(path).read_text())["scores"]))


def make_policy(checkpoint: str) -> FixedPolicy:
    """Factory for the leaderboard: ``--policy circuit_gym.baselines.fixed_policy:make_policy --checkpoint FILE``."""
    return FixedPolicy.load(checkpoint)


if __name__ == "__main__":
    import gymnasium as gym

    from circuit_gym.baselines.common import evaluate_and_print
    from circuit_gym.benchmark import multi_env_id

    policy = FixedPolicy.fit(gym.make(multi_env_id(), split="train"))
    evaluate_and_print("fixed", lambda obs, env: policy.rank_heads(obs))
