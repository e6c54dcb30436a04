"""The circuit track's episode protocol: how a circuit-building solver plays one episode, and
what its row and summary hold. Shared by ``baselines/`` (the circuit-building experiments) and
the leaderboard's circuit track (a builtin solver, or a sandboxed policy's ``act`` /
``rank_heads``), so neither imports the other.

An episode of :class:`~circuit_gym.envs.circuit_building.CircuitBuildingEnv` (``start="empty"``):
the solver adds heads until it says STOP or the budget ends. The heads it added, in order, are
the top of the episode's :class:`~circuit_gym.circuits.Ranking`; the heads it never added follow,
ordered by its scores at the episode's end (:func:`episode_ranking`).

Forward passes per episode (``forward_passes`` of a row) = what the environment's observations
and rewards cost (its ``info["forward_passes"]``: the episode's setup passes and one per head
added) + the solver's own: greedy's candidate evaluations (``info["oracle_forward_passes"]``),
and what its ``begin`` returns. A stacked pass of ``k`` circuits counts ``k``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import gymnasium as gym
import numpy as np

from circuit_gym.circuits import Ranking
from circuit_gym.envs.circuit_building import CircuitBuildingEnv
from circuit_gym.stats import mean_ci95


class CircuitSolver(Protocol):
    """What :func:`play_episode` needs from a solver."""

    name: str

    def begin(self, env: CircuitBuildingEnv) -> int:
        """Called after reset; returns the forward passes it spent (beyond the env's)."""

    def act(self, env: CircuitBuildingEnv, obs: np.ndarray, info: dict) -> int:
        """A head id to add, or ``env.stop_action``."""

    def scores(self, env: CircuitBuildingEnv, obs: np.ndarray, info: dict) -> np.ndarray:
        """Per-head importance at the episode's end (orders the heads never added)."""


def episode_ranking(order: Sequence[int], rest_scores: np.ndarray, n_layers: int, n_heads: int,
                    method: str) -> Ranking:  # fmt: skip
    """The heads in ``order`` first (the first added is the most important), then the others by
    ``rest_scores`` (ties by lower id). All scores positive, so the signed and absolute orders
    (CPR's and CMD's) agree."""
    n = n_layers * n_heads
    order = [int(h) for h in order]
    if len(set(order)) != len(order):
        raise ValueError("a head appears twice in the insertion order")
    rest = np.array([h for h in range(n) if h not in set(order)], dtype=np.int64)
    key = np.nan_to_num(np.asarray(rest_scores, dtype=np.float64)[rest], nan=-np.inf, posinf=np.inf)
    rest = rest[np.lexsort((rest, -key))]
    scores = np.empty(n, dtype=np.float64)
    ranked = [*order, *rest.tolist()]
    scores[ranked] = np.arange(n, 0, -1, dtype=np.float64)
    return Ranking.from_array(scores, method, n_layers, n_heads)


def play(env: gym.Env, task: str, batch_index: int, act: Callable[[np.ndarray, dict], int],
         rank: Callable[[np.ndarray, dict], np.ndarray], method: str,
         begin: Callable[[], int] | None = None) -> dict:  # fmt: skip
    """One episode on ``(task, batch_index)`` played by ``act(obs, info)`` (an action of the env),
    its heads never added ordered by ``rank(obs, info)`` at the end: its circuit, ranking and cost.

    ``begin()`` runs after the reset and returns the forward passes it spent beyond the env's.
    Forward passes = the env's ``forward_passes`` + ``oracle_forward_passes`` + ``begin``'s.
    Shared by :func:`play_episode` (in-process solvers) and the leaderboard's circuit track
    (a sandboxed policy's ``act`` / ``rank_heads``)."""
    base: CircuitBuildingEnv = env.unwrapped
    if base.start != "empty":
        raise ValueError("the circuit track's solvers build circuits from the empty one (start='empty')")
    obs, info = env.reset(options={"task": task, "batch_index": int(batch_index)})
    own = begin() if begin is not None else 0
    total, terminated = 0.0, False
    while not terminated:
        obs, reward, terminated, _, info = env.step(act(obs, info))
        total += reward
    ranking = episode_ranking(base.order, rank(obs, info), base.n_layers, base.n_heads, method)
    return {
        "task": task, "batch_index": int(batch_index), "order": base.order,
        "circuit_size": info["circuit_size"], "faithfulness": info["faithfulness"], "return": total,
        "forward_passes": info["forward_passes"] + info["oracle_forward_passes"] + own, "ranking": ranking,
    }  # fmt: skip


def play_episode(env: gym.Env, solver: CircuitSolver, task: str, batch_index: int) -> dict:
    """One episode of ``solver`` on ``(task, batch_index)``: its circuit, ranking and cost."""
    base: CircuitBuildingEnv = env.unwrapped
    row = play(env, task, batch_index, lambda obs, info: solver.act(base, obs, info),
               lambda obs, info: solver.scores(base, obs, info), solver.name,
               begin=lambda: solver.begin(base))  # fmt: skip
    return {"solver": solver.name, **row}


def summarize_track(per_episode: list[dict]) -> list[dict]:
    """Means and 95% intervals over episodes per (solver, task), then per solver over tasks."""
    rows = []
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in per_episode:
        groups.setdefault((r["solver"], r["task"]), []).append(r)
    for task_rows in (groups, _by_solver(per_episode)):
        for (name, task), rs in task_rows.items():
            row = {"solver": name, "task": task, "episodes": len(rs)}
            for k in (
                "cpr",
                "cmd",
                "faithfulness",
                "circuit_size",
                "forward_passes",
                "cpr_random",
                "cmd_random",
            ):
                row[k], row[f"{k}_ci95"] = mean_ci95([float(r[k]) for r in rs])
            rows.append(row)
    return rows


def _by_solver(per_episode: list[dict]) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for r in per_episode:
        out.setdefault((r["solver"], "all"), []).append(r)
    return out
