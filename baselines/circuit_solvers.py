"""Solvers of the circuit-building IDs, and the circuit track that scores them by CPR / CMD.

Each solver plays episodes of :class:`~circuit_gym.envs.circuit_building.CircuitBuildingEnv`
(``start="empty"``): it adds heads until it says STOP or the budget ends. The heads it added,
in order, are the top of its :class:`~circuit_gym.circuits.Ranking`; the heads it never added
follow, ordered by the solver's own scores at the end of the episode. That ranking's
faithfulness curve gives the episode's CPR and CMD (``circuit_gym.circuits``).

- :class:`GreedySearch`: the exact upper reference. Each step runs every candidate circuit
  (one stacked pass, ``env.candidate_gains()``), adds the head that raises faithfulness most,
  STOPs when no head's gain beats ``alpha``. Cost: one pass per candidate per step.
- :class:`AttributionInsertion`: attribution patching (Nanda 2023) ranks every head from one
  forward and one backward pass at the start; heads are added in that order while the
  estimated gain beats ``alpha``.
- :class:`RandomInsertion`: a seeded random order, to the budget.
- PPO: ``baselines.circuit_ppo.CircuitPPOSolver``.

Forward passes per episode (``forward_passes`` of a row) = what the environment's observations
and rewards cost (its ``info["forward_passes"]``: the episode's setup passes and one per head
added) + the solver's own: greedy's candidate evaluations (``info["oracle_forward_passes"]``),
attribution's forward and backward pass. A stacked pass of ``k`` circuits counts ``k``.

    rows = circuit_track("toy", HELD_OUT_TASKS, "test", range(4), default_solvers())

Greedy candidates run in one process here; ``baselines/circuit_ray.py``'s ``RayGreedySearch``
fans them out over Ray actors with the same numbers (``scripts/circuit_track.py --ray-workers N``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import gymnasium as gym
import numpy as np

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.circuits import Ranking, batch_scores
from circuit_gym.embedded import is_embedded
from circuit_gym.envs.circuit_building import CircuitBuildingEnv
from circuit_gym.envs.circuit_registration import circuit_env_id
from circuit_gym.progress import progress_iter
from circuit_gym.stats import mean_ci95

ATTRIBUTION_PASSES = 2  # one forward and one backward pass


class CircuitSolver(Protocol):
    """What :func:`play_episode` needs from a solver."""

    name: str

    def begin(self, env: CircuitBuildingEnv) -> int:
        """Called after reset; returns the forward passes it spent (beyond the env's)."""

    def act(self, env: CircuitBuildingEnv, obs: np.ndarray, info: dict) -> int:
        """A head id to add, or ``env.stop_action``."""

    def scores(self, env: CircuitBuildingEnv, obs: np.ndarray, info: dict) -> np.ndarray:
        """Per-head importance at the episode's end (orders the heads never added)."""


class GreedySearch:
    name = "greedy_search"

    def __init__(self) -> None:
        self._last: np.ndarray | None = None

    def begin(self, env: CircuitBuildingEnv) -> int:
        self._last = None
        return 0  # its candidate passes are counted by the env (oracle_forward_passes)

    def act(self, env, obs, info) -> int:
        gains = env.candidate_gains()
        self._last = gains
        if not np.isfinite(gains).any():
            return env.stop_action
        head = int(np.nanargmax(gains))
        return head if gains[head] - env.alpha > 0 else env.stop_action

    def scores(self, env, obs, info) -> np.ndarray:
        return np.nan_to_num(self._last, nan=-np.inf) if self._last is not None else np.zeros(env.n_total)


def attribution_scores(env: CircuitBuildingEnv) -> np.ndarray:
    """Attribution patching's estimated faithfulness lost when each head alone is ablated from
    the full model (higher = more important), in faithfulness units."""
    state = env.state
    engine = state.runner.engine
    ev = engine.ev
    change = attribution_patching(engine.model, ev.tokens, engine.clean_z, engine.replacement,
                                  lambda logits: ev.score(logits[:, ev.positions]).mean())  # fmt: skip
    return -change / (state.full_metric - state.empty_metric)


class AttributionInsertion:
    name = "attribution"

    def __init__(self) -> None:
        self._scores = np.zeros(0)

    def begin(self, env: CircuitBuildingEnv) -> int:
        self._scores = attribution_scores(env)
        return ATTRIBUTION_PASSES

    def act(self, env, obs, info) -> int:
        free = np.flatnonzero(info["action_mask"][: env.n_total])
        if len(free) == 0:
            return env.stop_action
        head = int(free[np.argmax(self._scores[free])])
        return head if self._scores[head] - env.alpha > 0 else env.stop_action

    def scores(self, env, obs, info) -> np.ndarray:
        return self._scores


class RandomInsertion:
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self._scores = np.zeros(0)

    def begin(self, env: CircuitBuildingEnv) -> int:
        self._scores = self.rng.random(env.n_total)
        return 0

    def act(self, env, obs, info) -> int:
        free = np.flatnonzero(info["action_mask"][: env.n_total])
        return int(free[np.argmax(self._scores[free])]) if len(free) else env.stop_action

    def scores(self, env, obs, info) -> np.ndarray:
        return self._scores


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


def circuit_track(model: str, tasks: Iterable[str], split: str, episodes: Iterable[int],
                  solvers: dict[str, Callable[[], CircuitSolver]], *, budget: int = 16, alpha: float = 0.01,
                  batch_size: int = 8, n_random: int = 8, model_path: str | None = None,
                  progress: bool = False) -> dict:  # fmt: skip
    """Every solver on every (task, episode) of ``split``: CPR / CMD of the circuits its
    episodes build and forward passes per episode.

    Returns ``{"rows": one per (solver, task) with means and 95% intervals over episodes,
    "episodes": one per episode}``. ``solvers`` maps a name to a factory (a fresh solver per
    task, so a random solver's draws do not depend on the task order)."""
    tasks, episodes = tuple(tasks), tuple(int(e) for e in episodes)
    key = "Toy" if is_embedded(model) else "GPT2"
    kwargs = dict(model=model, split=split, pool_size=max(episodes) + 1, batch_size=batch_size,
                  budget=budget, alpha=alpha, oracle_info=False)  # fmt: skip
    if model_path:
        kwargs["model_path"] = model_path
    env = gym.make(circuit_env_id(key, "Multi"), **kwargs)
    jobs = [(name, task, e) for name in solvers for task in tasks for e in episodes]
    per_episode, solver, current = [], None, None
    for name, task, e in progress_iter(jobs, "circuit track", unit="episode", requested=progress):
        if current != (name, task):
            solver, current = solvers[name](), (name, task)
        row = play_episode(env, solver, task, e)
        row["solver"] = name
        scores = batch_scores(env.unwrapped.state.runner, row.pop("ranking"), n_random=n_random, seed=e)
        row.update({k: scores[k] for k in ("cpr", "cmd", "cpr_random", "cmd_random")})
        row["curve"] = scores["curve"]["faithfulness"]
        per_episode.append(row)
    return {"rows": summarize_track(per_episode), "episodes": per_episode}


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


def default_solvers(seed: int = 0) -> dict[str, Callable[[], CircuitSolver]]:
    """Exact greedy search, attribution-ranked insertion and random insertion."""
    return {"greedy_search": GreedySearch, "attribution": AttributionInsertion,
            "random": lambda: RandomInsertion(seed)}  # fmt: skip
