"""Gymnasium IDs of the circuit-building environments: ``CircuitDiscovery-{Toy,GPT2}-{Task}-Circuit-v0``.

One ID per model and per task part of the current single-head IDs
(:func:`circuit_gym.envs.registration.list_envs`): ``Toy`` is the embedded model ``"toy"``,
``GPT2`` is GPT-2 small. ``Multi`` samples the leaderboard benchmark's training tasks
(:data:`circuit_gym.leaderboard.benchmark.TRAIN_TASKS` of benchmark v5). The entry point is
:class:`~circuit_gym.envs.circuit_building.CircuitBuildingEnv`.
"""

from __future__ import annotations

import gymnasium as gym

ENTRY_POINT = "circuit_gym.envs.circuit_building:CircuitBuildingEnv"
MODELS = {"Toy": "toy", "GPT2": "gpt2"}
VERSION = 0
# Written out, not imported (the single-head IDs' rule): a benchmark that changes its training
# tasks must add a version here; tests/test_circuit_envs.py compares the two.
MULTI_TASKS = ("agreement", "docstring", "greater_than", "ioi", "pronoun")
NOTES = (
    "first release: add heads from the empty circuit (or remove from the full one) until STOP or the budget"
)


def circuit_env_id(model_key: str, task_key: str, version: int = VERSION) -> str:
    return f"CircuitDiscovery-{model_key}-{task_key}-Circuit-v{version}"


def _task_sets() -> dict[str, tuple[str, ...]]:
    """Task part of the ID -> tasks: those of the current single-head IDs, Multi = the
    benchmark's training tasks."""
    from circuit_gym.envs.registration import list_envs

    sets: dict[str, tuple[str, ...]] = {}
    for row in list_envs():
        task_key = row["id"].split("-")[2]
        sets.setdefault(task_key, tuple(row["tasks"]))
    sets["Multi"] = MULTI_TASKS
    return sets


def list_circuit_envs() -> list[dict]:
    """The circuit-building IDs with their model, tasks, version and notes."""
    return [
        {"id": circuit_env_id(m, t), "model": model, "tasks": list(tasks), "version": VERSION, "notes": NOTES}
        for m, model in MODELS.items()
        for t, tasks in _task_sets().items()
    ]


def register_circuit_envs() -> None:
    """Register every ID of :func:`list_circuit_envs` not registered yet."""
    for row in list_circuit_envs():
        if row["id"] not in gym.registry:
            gym.register(id=row["id"], entry_point=ENTRY_POINT,
                         kwargs={"model": row["model"], "tasks": tuple(row["tasks"])})  # fmt: skip
