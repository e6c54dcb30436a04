"""Evaluate a head-ranking policy against the per-episode oracle.

For each task and each episode of a fixed list (batch indices of the split's pool), the
policy sees the observation only; its top-k heads are ablated one at a time from the
clean state and the best counts (best-of-k). The evaluator, not the policy, reads the
oracle table to compute **oracle recovery** (chosen reward / oracle reward) and the
**top-1 hit** (chosen head == oracle head).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from circuit_gym.envs.planning import best_of_k
from circuit_gym.policy import check_scores
from circuit_gym.stats import mean_ci95, wilson_ci95

RankFn = Callable[[np.ndarray, object], np.ndarray]  # (observation, env) -> scores


def oracle_recovery(reward: float, oracle_reward: float) -> float:
    """The one definition of oracle recovery: ``reward / oracle_reward``, NaN when the oracle
    reward is not positive (no head helps, so there is nothing to recover)."""
    return float(reward) / float(oracle_reward) if oracle_reward > 0 else float("nan")


@dataclass(frozen=True)
class EpisodeResult:
    solver: str
    task: str
    split: str
    batch_index: int
    k: int
    head: int
    reward: float
    oracle_head: int
    oracle_reward: float

    @property
    def recovery(self) -> float:
        return oracle_recovery(self.reward, self.oracle_reward)

    @property
    def top1(self) -> bool:
        return self.head == self.oracle_head


def evaluate(env, rank: RankFn, solver: str, tasks: Sequence[str], episodes: Sequence[int],
             ks: Sequence[int] = (1, 5), progress: bool = False) -> list[EpisodeResult]:  # fmt: skip
    """Run ``rank`` on every (task, episode); ``env`` is a CircuitDiscoveryEnv (wrapped or not)."""
    base = env.unwrapped
    jobs = [(t, i) for t in tasks for i in episodes]
    if progress:
        from tqdm.auto import tqdm

        jobs = tqdm(jobs, desc=f"evaluate {solver}", leave=False)
    out = []
    for task, index in jobs:
        obs, _ = env.reset(options={"task": task, "batch_index": int(index)})
        out += episode_results(env, check_scores(rank(obs, env), base.n_total), solver, ks)
    return out


def episode_results(env, scores: np.ndarray, solver: str, ks: Sequence[int]) -> list[EpisodeResult]:
    """Best-of-k results, one per k, for the env's current episode given a policy's head scores."""
    base = env.unwrapped
    episode, table = base.episode, base.episode.table
    out = []
    for k in ks:
        plan = best_of_k(env, scores, k)
        out.append(EpisodeResult(solver, episode.pool.task.name, base.split, episode.index, int(k), plan.head,
                                 plan.reward, table.oracle_head, table.oracle_reward))  # fmt: skip
    return out


def summarize(results: Sequence[EpisodeResult]) -> list[dict]:
    """One row per (solver, task, split, k): the README/leaderboard numbers."""
    groups: dict[tuple, list[EpisodeResult]] = {}
    for r in results:
        groups.setdefault((r.solver, r.task, r.split, r.k), []).append(r)
    return [
        {"solver": solver, "task": task, "split": split, "k": k,
         **recovery_summary([r.recovery for r in rs], [r.top1 for r in rs])}
        for (solver, task, split, k), rs in groups.items()
    ]  # fmt: skip


def recovery_summary(recoveries: Sequence[float], hits: Sequence[bool]) -> dict:
    """Mean recovery and top-1 rate with 95% intervals; NaN recoveries (no positive oracle) are
    counted, not averaged."""
    mean, ci = mean_ci95(recoveries)
    n, n_hits = len(hits), int(sum(hits))
    return {
        "recovery_mean": mean, "recovery_ci95": ci, "top1_rate": n_hits / n, "top1_ci95": wilson_ci95(n_hits, n),
        "episodes": n, "episodes_without_positive_oracle": int(sum(not np.isfinite(v) for v in recoveries)),
    }  # fmt: skip


def results_as_dicts(results: Sequence[EpisodeResult]) -> list[dict]:
    return [{**asdict(r), "recovery": r.recovery, "top1": r.top1} for r in results]
