"""Shared helper for running one baseline on its own from the command line."""

from __future__ import annotations

import gymnasium as gym

from circuit_gym.benchmark import HELD_OUT_TASKS, TRAIN_TASKS, multi_env_id
from circuit_gym.evaluation import evaluate, summarize
from circuit_gym.reporting import markdown_table


def evaluate_and_print(solver: str, rank, episodes: int = 32) -> None:
    """Evaluate on the benchmark's training tasks (eval split) and held-out tasks (test split)."""
    rows = []
    for split, tasks in (("eval", TRAIN_TASKS), ("test", HELD_OUT_TASKS)):
        env = gym.make(multi_env_id(), split=split, pool_size=episodes)
        rows += summarize(evaluate(env, rank, solver, tasks, range(episodes), progress=True))
    print(markdown_table(rows))
