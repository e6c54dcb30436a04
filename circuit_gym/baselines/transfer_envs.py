"""The transfer benchmarks' single-head environment on one public zoo member, for the transfer baselines.

The board's own builder (``circuit_gym.track_envs.board_env`` with ``transfer=True``: pinned
ablation and reference, the benchmark's batch size and lambda), so a table or observation a
baseline fits on is the one the board would show on the same (model, task, split, batch). Batch
``i`` of a pool is always the same prompts whatever ``pool_size`` is, so a pool only needs to
reach the largest batch index a caller reads. The oracle fields stay (the baselines fit on them).
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym

from circuit_gym import benchmark as B
from circuit_gym.envs.features import DEFAULT_FEATURES
from circuit_gym.track_envs import board_env


def transfer_env(
    model: str, tasks: Sequence[str], split: str, pool_size: int, features: str = DEFAULT_FEATURES
) -> gym.Env:
    """CircuitDiscovery-*-Multi on the zoo member ``model`` with the transfer settings (the row
    in force's, ``benchmark.IN_FORCE``)."""
    return board_env(
        B.SINGLE_HEAD, model, pool_size, tasks=tasks, split=split, transfer=True, features=features
    )
