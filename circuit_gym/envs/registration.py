"""Gymnasium IDs, registered on ``import circuit_gym``.

``CircuitDiscovery-{Toy,GPT2}-{Induction,IOI,Docstring,Multi}-v0``. Multi samples
induction and IOI; the held-out docstring task only when asked
(``reset(options={"task": "docstring"})`` or ``tasks=[...]``).
"""

from __future__ import annotations

import gymnasium as gym

ENTRY_POINT = "circuit_gym.envs.circuit_env:CircuitDiscoveryEnv"
MODELS = {"Toy": "toy", "GPT2": "gpt2"}
TASK_SETS = {
    "Induction": ("induction",),
    "IOI": ("ioi",),
    "Docstring": ("docstring",),
    "Multi": ("induction", "ioi"),
}


def env_ids() -> list[str]:
    return [f"CircuitDiscovery-{m}-{t}-v0" for m in MODELS for t in TASK_SETS]


def register_envs() -> None:
    for model_key, model in MODELS.items():
        for task_key, tasks in TASK_SETS.items():
            env_id = f"CircuitDiscovery-{model_key}-{task_key}-v0"
            if env_id not in gym.registry:
                gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"model": model, "tasks": tasks})


def list_envs() -> list[dict]:
    """Every registered ID with its model and tasks."""
    return [
        {"id": f"CircuitDiscovery-{m}-{t}-v0", "model": MODELS[m], "tasks": list(TASK_SETS[t])}
        for m in MODELS
        for t in TASK_SETS
    ]
