"""How a single-head episode is played and summarised: the policy (or a white-box solver) ranks the
heads once, and the episode is scored by best-of-k oracle recovery.

Every single-head track plays its episodes with :data:`SINGLE_HEAD` (the transfer scorer's cells:
``circuit_gym/leaderboard/transfer_scorer.py``) and summarises a group of them with
:func:`recovery_by_k` and :func:`compute`.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from circuit_gym import benchmark as B
from circuit_gym.circuits.preferences import episode_areas
from circuit_gym.evaluation import episode_results, recovery_summary
from circuit_gym.leaderboard.sandbox import SandboxedPolicy
from circuit_gym.leaderboard.scoring import Players, PlayOne
from circuit_gym.passes import PassCounter, with_observation_passes
from circuit_gym.planning import top_k_heads
from circuit_gym.policy import check_scores
from circuit_gym.solvers.white_box import WhiteBox


def player(env: gym.Env, rank, prepare=None) -> PlayOne:
    """``(task, seed) -> row`` on ``env``: ``rank(obs)`` gives the episode's head scores (the
    passes it makes on the benchmark's model are counted); ``prepare(env)`` runs before the
    counted call (the environment's own per-episode state a white-box solver reads, not its
    compute). A ``detailed`` row also holds the CPR and CMD of the circuits the scores propose, run by
    the scorer (``circuits.preferences.episode_areas``; not counted as the solver's passes)."""
    base = env.unwrapped
    counter = PassCounter(base.model)

    def play_one(task: str, seed: int, detailed: bool = True) -> dict:
        obs, info = env.reset(options={"task": task, "batch_index": int(seed)})
        if prepare is not None:
            prepare(env)
        with counter:
            raw = rank(obs)
        scores = check_scores(raw, base.n_total, where=f"task {task}, batch {int(seed)}")
        table = base.episode.table
        row = {"task": task, "seed": int(seed), "oracle_head": table.oracle_head,
               "oracle_reward": table.oracle_reward, "top5": top_k_heads(scores, 5, base.action_mask()),
               "lm_passes": with_observation_passes(counter.counts(), info)}  # fmt: skip
        for r in episode_results(env, scores, "submission", B.KS):
            row[f"head_k{r.k}"] = r.head
            row[f"reward_k{r.k}"] = r.reward
            row[f"recovery_k{r.k}"] = r.recovery if np.isfinite(r.recovery) else None
        if detailed:  # rows summarised by recovery only skip the circuits' curves
            row.update(episode_areas(env, scores))
        return row

    return play_one


def builtin_player(env: gym.Env, solver: WhiteBox) -> PlayOne:
    return player(env, lambda obs: solver.rank(env), solver.prepare)


def sandbox_player(env: gym.Env, sandbox: SandboxedPolicy) -> PlayOne:
    return player(env, sandbox.rank_heads)


def recovery_by_k(episodes: list[dict]) -> dict:
    """Best-of-k recovery (a ratio of sums with its interval) and top-1 hit rate, per k of ``B.KS``."""
    return {
        f"k{k}": recovery_summary(
            [e[f"reward_k{k}"] for e in episodes],
            [e["oracle_reward"] for e in episodes],
            [e[f"head_k{k}"] == e["oracle_head"] for e in episodes],
        )
        for k in B.KS
    }


def compute(episodes: list[dict]) -> dict:
    """Mean language-model passes per episode made by the solver inside its rank call."""
    out = {
        f"{kind}_passes_per_episode": float(np.mean([e["lm_passes"][kind] for e in episodes]))
        for kind in ("forward", "partial", "backward")
    }
    return {**out, "episodes": len(episodes)}


# How a single-head episode is played, by a builtin or by the sandboxed policy's rank_heads.
SINGLE_HEAD = Players(B.SINGLE_HEAD, ("rank_heads",), builtin_player, sandbox_player)
