"""Evaluate a head-ranking policy against the per-episode oracle.

For each task and each episode of a fixed list (batch indices of the split's pool), the
policy sees the observation only; its top-k heads are ablated one at a time from the
clean state and the best counts (best-of-k). The evaluator, not the policy, reads the
oracle table to compute **oracle recovery** (chosen reward / oracle reward) and the
**top-1 hit** (chosen head == oracle head).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from circuit_gym.envs.planning import best_of_k
from circuit_gym.policy import check_scores

RankFn = Callable[[np.ndarray, object], np.ndarray]  # (observation, env) -> scores


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
        return self.reward / self.oracle_reward if self.oracle_reward > 0 else float("nan")

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


def mean_ci95(values: Sequence[float]) -> tuple[float, list[float]]:
    """Mean and a normal-approximation 95% interval (t-quantile for small n)."""
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=np.float64)
    if len(x) == 0:
        return float("nan"), [float("nan"), float("nan")]
    if len(x) == 1:
        return float(x[0]), [float(x[0]), float(x[0])]
    half = float(_t975(len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return float(x.mean()), [float(x.mean() - half), float(x.mean() + half)]


# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (normal beyond).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
         2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
         2.052, 2.048, 2.045, 2.042)  # fmt: skip


def _t975(df: int) -> float:
    return _T975[df - 1] if df <= len(_T975) else 1.959964


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties)."""
    ra, rb = _ranks(np.asarray(a, float)), _ranks(np.asarray(b, float))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float((ra**2).sum() * (rb**2).sum()))
    return float((ra * rb).sum() / denom) if denom > 0 else float("nan")


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=float)
    for v in np.unique(x):  # average the ranks of ties
        tie = x == v
        ranks[tie] = ranks[tie].mean()
    return ranks


def wilson_ci95(hits: int, n: int) -> list[float]:
    if n == 0:
        return [float("nan"), float("nan")]
    z, p = 1.959964, hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [centre - half, centre + half]


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
