"""Benchmark v6's single-head environment on one public zoo member, for the transfer baselines.

The settings are the ones the transfer scorer plays (``circuit_gym.benchmark``: pinned ablation
and reference, the benchmark's batch size and lambda), so a table or observation a baseline fits
on is the one the board would show on the same (model, task, split, batch). Batch ``i`` of a pool
is always the same prompts whatever ``pool_size`` is, so a pool only needs to reach the largest
batch index a caller reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym import benchmark as B


def transfer_env(
    model: str, tasks: Sequence[str], split: str, pool_size: int, features: str = "attention"
) -> gym.Env:
    """CircuitDiscovery-*-Multi on the zoo member ``model`` with benchmark v6's settings."""
    return gym.make(B.multi_env_id(model), model=model, tasks=tuple(tasks), split=split, pool_size=int(pool_size),
                    batch_size=B.PROMPTS_PER_EPISODE, ablation=B.TRANSFER_ABLATION,
                    reference=B.TRANSFER_REFERENCE, lam=B.LAM, features=features)  # fmt: skip
