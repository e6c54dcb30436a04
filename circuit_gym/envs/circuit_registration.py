"""The circuit-building IDs' names, kept for their importers: the table is
:mod:`circuit_gym.envs.registration` (the ``circuit`` family of :data:`~circuit_gym.envs.registration.REGISTRY`)."""

from __future__ import annotations

from circuit_gym.envs.registration import CIRCUIT_VERSION as VERSION
from circuit_gym.envs.registration import circuit_env_id, list_envs

__all__ = ["VERSION", "circuit_env_id", "list_circuit_envs"]


def list_circuit_envs(all_versions: bool = False) -> list[dict]:
    """The circuit-building rows of :func:`~circuit_gym.envs.registration.list_envs`."""
    return list_envs(all_versions, family="circuit")
