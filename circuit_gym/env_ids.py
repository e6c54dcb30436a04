"""How a Gymnasium ID of the package is spelled: one formula, at the bottom of the package.

``CircuitDiscovery-{model part}-{task part}{family suffix}-v{N}``. The registry
(:mod:`circuit_gym.envs.registration`) builds every ID with it, and the benchmark definition
(:mod:`circuit_gym.benchmark`) names the IDs its tracks are played on with it, without importing
the environments (which sit above it).
"""

from __future__ import annotations

PREFIX = "CircuitDiscovery"
CIRCUIT_SUFFIX = "-Circuit"  # the circuit-building family's (single-head ablation: none)


def env_id(model_key: str, task_key: str, version: int, suffix: str = "") -> str:
    """``CircuitDiscovery-{model_key}-{task_key}{suffix}-v{version}``."""
    return f"{PREFIX}-{model_key}-{task_key}{suffix}-v{version}"
