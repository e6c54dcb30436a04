"""Gymnasium environments for circuit discovery."""

from circuit_gym.envs.arguments import ResetNeededError
from circuit_gym.envs.circuit_env import ORACLE_INFO_KEYS, CircuitDiscoveryEnv
from circuit_gym.envs.features import FEATURE_NAMES
from circuit_gym.envs.registration import (
    FAMILIES,
    REGISTRY,
    VERSIONS,
    Family,
    Line,
    RefusedEnvError,
    env_ids,
    list_envs,
    register_envs,
    version_notes,
)
from circuit_gym.envs.wrappers import HideOracleInfo
from circuit_gym.planning import PlanResult, best_of_k, top_k_heads

__all__ = [
    "FAMILIES", "FEATURE_NAMES", "ORACLE_INFO_KEYS", "REGISTRY", "VERSIONS", "CircuitDiscoveryEnv", "Family",
    "HideOracleInfo", "Line", "PlanResult", "RefusedEnvError", "ResetNeededError", "best_of_k", "env_ids",
    "list_envs", "register_envs", "top_k_heads", "version_notes",
]  # fmt: skip
