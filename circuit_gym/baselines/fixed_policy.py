"""Fixed baseline: always the head that was most often the oracle on the training tasks.

The trivial memoriser: a policy that claims to *transfer* must beat it on held-out tasks.
Its ranking is the oracle frequency over the training split's episode pools of the
training tasks (ties broken by mean reward).

    python -m circuit_gym.baselines.fixed_policy

Checkpoints: ``docs/results/v8/fixed_policy.json`` (the benchmark in force, :meth:`FixedPolicy.fit_many`
over the training models; ``scripts/fit_transfer_baselines.py``), and the retired boards'
``docs/results/fixed_policy.json`` (fitted on ``toy``) and ``docs/results/transfer/fixed_policy.json`` (zoo v1).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class FixedPolicy:
    def __init__(self, scores: np.ndarray) -> None:
        self.scores = np.asarray(scores, dtype=np.float64)
        if self.scores.ndim != 1 or not np.isfinite(self.scores).all():
            raise ValueError(
                f"fixed policy scores must be one finite number per head, got shape {self.scores.shape}"
            )

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
        return cls.fit_many([env], tasks, episodes)

    @classmethod
    def fit_many(cls, envs: Sequence, tasks: Sequence[str] | None = None, episodes: int = 32) -> FixedPolicy:
        """:meth:`fit` over several environments (a transfer benchmark: one per training model), their
        counts and rewards added up; ``tasks`` defaults to what each environment samples."""
        if not envs:
            raise ValueError("fit_many needs at least one environment")
        n_total = envs[0].unwrapped.n_total
        counts, mean_reward = np.zeros(n_total), np.zeros(n_total)
        for env in envs:
            base = env.unwrapped
            if base.n_total != n_total:
                raise ValueError(
                    f"environments of {n_total} and {base.n_total} heads cannot share one ranking"
                )
            for task in tuple(tasks or base.tasks):
                pool = base.pool(task)
                for i in range(min(episodes, base.pool_size)):
                    table = pool.episode(i).table
                    counts[table.oracle_head] += 1
                    mean_reward += table.reward
        tie_break = mean_reward / max(1.0, np.abs(mean_reward).max()) * 0.5
        return cls(counts + tie_break)

    def save(self, path: str | Path, about: dict | None = None) -> None:
        """``about``: how it was fitted, for readers (``load`` reads only the scores)."""
        Path(path).write_text(json.dumps({"scores": self.scores.tolist(), **(about or {})}))

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
