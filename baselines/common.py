"""Shared helper for running one baseline on its own from the command line."""

from __future__ import annotations

import gymnasium as gym

from circuit_gym.evaluation import evaluate, summarize
from circuit_gym.reporting import markdown_table


def evaluate_and_print(solver: str, rank, episodes: int = 32) -> None:
    """Evaluate on the training tasks (eval split) and held-out docstring (test split)."""
    rows = []
    for split, tasks in (("eval", ("induction", "ioi")), ("test", ("docstring",))):
        env = gym.make("CircuitDiscovery-Toy-Multi-v1", split=split, pool_size=episodes)
        rows += summarize(evaluate(env, rank, solver, tasks, range(episodes), progress=True))
    print(markdown_table(rows))
