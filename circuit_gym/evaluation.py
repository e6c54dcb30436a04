"""Evaluate a head-ranking policy against the per-episode oracle.

For each task and each episode of a fixed list (batch indices of the split's pool), the
policy sees the observation only; its top-k heads are ablated one at a time from the
clean state and the best counts (best-of-k). The evaluator, not the policy, reads the
oracle table to compute **oracle recovery** (chosen reward / oracle reward) and the
**top-1 hit** (chosen head == oracle head).

Aggregated over episodes, recovery is a **ratio of sums** (:func:`recovery_summary`): the
sum of chosen rewards over the sum of oracle rewards, over the episodes whose oracle reward
is positive, with a paired bootstrap interval. An episode with a tiny positive oracle reward
therefore weighs as little as its reward, instead of dominating a mean of ratios; episodes
without a positive oracle are counted, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from circuit_gym.planning import best_of_k
from circuit_gym.policy import check_scores
from circuit_gym.progress import progress_iter
from circuit_gym.stats import mean_ci95, ratio_of_sums_ci95, wilson_ci95

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
    out = []
    for task, index in progress_iter(jobs, f"evaluate {solver}", unit="episode", requested=progress):
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
    """One row per (solver, task, split, k): the README/leaderboard numbers (:func:`recovery_summary`)."""
    groups: dict[tuple, list[EpisodeResult]] = {}
    for r in results:
        groups.setdefault((r.solver, r.task, r.split, r.k), []).append(r)
    rows = []
    for (solver, task, split, k), rs in groups.items():
        rows.append({"solver": solver, "task": task, "split": split, "k": k, **results_summary(rs)})
    return rows


def results_summary(results: Sequence[EpisodeResult] | Sequence[dict]) -> dict:
    """:func:`recovery_summary` of episode results: :class:`EpisodeResult` objects or their dicts
    (``results_as_dicts``, result files)."""
    rows = [r if isinstance(r, dict) else {"reward": r.reward, "oracle_reward": r.oracle_reward, "top1": r.top1}
            for r in results]  # fmt: skip
    return recovery_summary(
        [r["reward"] for r in rows], [r["oracle_reward"] for r in rows], [r["top1"] for r in rows]
    )


# Per-episode recoveries are clipped to this range for the secondary mean: a chosen head can
# never beat the oracle (recovery <= 1), but with a tiny positive oracle reward a harmful
# choice gives an unbounded negative ratio.
RECOVERY_CLIP = (-1.0, 1.0)


def recovery_summary(rewards: Sequence[float], oracle_rewards: Sequence[float], hits: Sequence[bool]) -> dict:
    """Oracle recovery and top-1 rate of a set of episodes, with 95% intervals.

    ``rewards[i]`` is the chosen head's reward in episode ``i``, ``oracle_rewards[i]`` the
    oracle's, ``hits[i]`` whether the chosen head is the oracle head.

    - ``recovery``: ``sum(rewards) / sum(oracle_rewards)`` over the episodes with a positive
      oracle reward; ``recovery_ci95``: paired bootstrap over those episodes
      (:func:`ratio_of_sums_ci95`);
    - ``recovery_clipped_mean``: the mean of the per-episode recoveries
      (:func:`oracle_recovery`) clipped to :data:`RECOVERY_CLIP`, with a Student-t interval
      (secondary);
    - ``top1_rate``: over all episodes, Wilson interval;
    - ``episodes_without_positive_oracle``: counted here, not in the recovery numbers (no
      head helps there, so there is nothing to recover).
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    oracle = np.asarray(oracle_rewards, dtype=np.float64)
    if not rewards.shape == oracle.shape == (len(hits),):
        raise ValueError(
            f"rewards, oracle_rewards and hits must be 1-D of one length, got {rewards.shape}, "
            f"{oracle.shape} and {len(hits)}"
        )
    with np.errstate(invalid="ignore"):
        positive = oracle > 0
    chosen, best = rewards[positive], oracle[positive]
    if not np.isfinite(chosen).all():
        raise ValueError("a chosen reward is not finite in an episode with a positive oracle reward")
    recovery = float(chosen.sum() / best.sum()) if len(best) else float("nan")
    per_episode = np.clip([oracle_recovery(c, o) for c, o in zip(chosen, best, strict=True)], *RECOVERY_CLIP)
    clipped_mean, clipped_ci = mean_ci95(per_episode)
    n, n_hits = len(hits), int(sum(bool(h) for h in hits))
    return {
        "recovery": recovery, "recovery_ci95": ratio_of_sums_ci95(chosen, best),
        "recovery_clipped_mean": clipped_mean, "recovery_clipped_mean_ci95": clipped_ci,
        "recovery_clip": list(RECOVERY_CLIP),
        "top1_rate": n_hits / n if n else float("nan"), "top1_ci95": wilson_ci95(n_hits, n), "episodes": n,
        "episodes_with_positive_oracle": int(positive.sum()),
        "episodes_without_positive_oracle": int(n - positive.sum()),
    }  # fmt: skip


def results_as_dicts(results: Sequence[EpisodeResult]) -> list[dict]:
    return [{**asdict(r), "recovery": r.recovery, "top1": r.top1} for r in results]
