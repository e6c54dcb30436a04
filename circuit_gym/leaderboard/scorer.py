"""Score a policy on the held-out tasks and write a verifiable result file.

The track's part of the scorer skeleton (``circuit_gym/leaderboard/scoring.py``: checks, episodes, sandbox,
provenance, content hash). The policy runs sandboxed (``circuit_gym.leaderboard.sandbox``) and
sees observations only; its module is imported only in the sandbox's child process; a builtin
white-box solver (``circuit_gym.solvers.white_box``: greedy, ACDC, EAP-IG) runs in the scorer's
process and reads the episode's task metric. The scorer computes, per
held-out task and overall, best-of-1 and best-of-5 oracle recovery (a ratio of sums over
episodes, see :func:`circuit_gym.evaluation.recovery_summary`) and top-1 hit rate with 95%
intervals, plus:

- reproducibility: recovery re-scored on other seeds, and its spread;
- generalisation: recovery on each held-out task separately;
- consistency: agreement (Jaccard) of the policy's top-5 head sets across episodes of a task;
- compute: the language-model forward, partial and backward passes the solver made inside
  its rank call, per episode (``circuit_gym/passes.py``);
- private scores, when the maintainers pass their private seed file: the same summary on
  those batch seeds, stored with the file's SHA-256 and never the seeds.

The result JSON carries its provenance and a SHA-256 content hash. ``scores`` is
deterministic: scoring the same policy twice gives byte-identical ``scores``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import gymnasium as gym
import numpy as np

from circuit_gym import benchmark as B
from circuit_gym.circuits.preferences import areas_summary, episode_areas
from circuit_gym.envs import HideOracleInfo
from circuit_gym.evaluation import episode_results, recovery_summary
from circuit_gym.leaderboard.sandbox import SandboxedPolicy
from circuit_gym.leaderboard.scoring import OneModelRun, Players, PlayOne, TrackPlay, score_track
from circuit_gym.passes import PassCounter, with_observation_passes
from circuit_gym.planning import top_k_heads
from circuit_gym.policy import check_scores
from circuit_gym.solvers.white_box import WhiteBox
from circuit_gym.track_envs import board_env

__all__ = ["score"]


def _make_env(model: str, model_path: str | None, seeds: tuple[int, ...], cache: bool = True) -> gym.Env:
    return HideOracleInfo(board_env(B.SINGLE_HEAD, model, max(seeds) + 1, cache=cache, model_path=model_path))


def _player(env: gym.Env, rank, prepare=None) -> PlayOne:
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
        if detailed:  # the reproducibility seeds' rows are summarised by recovery only
            row.update(episode_areas(env, scores))
        return row

    return play_one


def _builtin_player(env: gym.Env, solver: WhiteBox) -> PlayOne:
    return _player(env, lambda obs: solver.rank(env), solver.prepare)


def _sandbox_player(env: gym.Env, sandbox: SandboxedPolicy) -> PlayOne:
    return _player(env, sandbox.rank_heads)


def _summary(episodes: list[dict]) -> dict:
    return {
        f"k{k}": recovery_summary(
            [e[f"reward_k{k}"] for e in episodes],
            [e["oracle_reward"] for e in episodes],
            [e[f"head_k{k}"] == e["oracle_head"] for e in episodes],
        )
        for k in B.KS
    }


def _circuits(episodes: list[dict]) -> dict:
    """CPR and CMD per held-out task (mean over episodes, 95% t-interval) and, under ``"all"``,
    over every episode."""
    per_task = {t: areas_summary([e for e in episodes if e["task"] == t]) for t in B.HELD_OUT_TASKS}
    return {**per_task, "all": areas_summary(episodes)}


def _compute(episodes: list[dict]) -> dict:
    """Mean language-model passes per episode made by the solver inside its rank call."""
    out = {
        f"{kind}_passes_per_episode": float(np.mean([e["lm_passes"][kind] for e in episodes]))
        for kind in ("forward", "partial", "backward")
    }
    return {**out, "episodes": len(episodes)}


def _consistency(episodes: list[dict]) -> float:
    sets = [set(e["top5"]) for e in episodes]
    pairs = list(itertools.combinations(sets, 2))
    return float(np.mean([len(a & b) / len(a | b) for a, b in pairs])) if pairs else float("nan")


def _scores(main: list[dict], repro: list[dict]) -> dict:
    """A scored result's ``scores``: summaries of the evaluation episodes ``main``, the
    reproducibility seeds' recovery (their rows are not kept), and the evaluation rows."""
    per_task = {t: _summary([e for e in main if e["task"] == t]) for t in B.HELD_OUT_TASKS}
    repro_rec = {
        t: _summary([e for e in repro if e["task"] == t])["k5"]["recovery"] for t in B.HELD_OUT_TASKS
    }
    overall = _summary(main)
    return {
        "overall": overall,
        "per_task": per_task,
        "reproducibility": {
            "k5_recovery_other_seeds": repro_rec,
            "k5_recovery_spread": max(abs(overall["k5"]["recovery"] - v) for v in repro_rec.values()),
        },
        "generalisation": {t: per_task[t]["k5"]["recovery"] for t in B.HELD_OUT_TASKS},
        "consistency_top5_jaccard": {t: _consistency([e for e in main if e["task"] == t]) for t in B.HELD_OUT_TASKS},
        "circuits": _circuits(main),
        "compute": _compute(main),
        "episodes": main,
    }  # fmt: skip


def _private_scores(hidden: list[dict]) -> dict:
    """Summaries of the private episodes (never their rows)."""
    return {"overall": _summary(hidden),
            "per_task": {t: _summary([e for e in hidden if e["task"] == t]) for t in B.HELD_OUT_TASKS},
            "circuits": _circuits(hidden)}  # fmt: skip


# How a single-head episode is played (the transfer tracks play it too).
SINGLE_HEAD = Players(B.SINGLE_HEAD, ("rank_heads",), _builtin_player, _sandbox_player)
TRACK = TrackPlay(
    name=B.SINGLE_HEAD, definition=B.definition, eval_seeds=lambda: B.EVAL_SEEDS, other_seeds=lambda: B.REPRO_SEEDS,
    private_seeds=lambda seeds: seeds, make_env=_make_env, players=SINGLE_HEAD, scores=_scores,
    private_scores=_private_scores,
)  # fmt: skip


def score(name: str, policy_spec: str | None = None, checkpoint: str | None = None, builtin: str | None = None,
          model: str | None = None, model_path: str | None = None,
          private_seeds: str | Path | None = None, require_isolation: bool | None = None,
          sample: int | None = None) -> dict:  # fmt: skip
    """Score one policy on the single-head track; returns the result dict (``status`` "scored"
    or "failed").

    ``private_seeds``: the maintainers' private seed file (``scoring.read_private_seeds``);
    the policy is then also scored on those batch seeds of the test-split pool, and the
    result stores those scores with the file's SHA-256 (never the seeds or their episodes).

    The result's ``isolation`` records what the policy's sandbox enforced
    (:mod:`circuit_gym.leaderboard.isolation`). ``require_isolation`` (default: on with
    ``private_seeds``) raises ``IsolationUnavailableError`` before any scoring where this
    machine cannot isolate a submitted policy completely; otherwise an incomplete isolation is
    recorded, for trusted policies only.

    ``sample``: the canary's run (``circuit_gym/leaderboard/canary.py``): only the first ``sample`` evaluation
    episodes, their rows under ``scores["episodes"]``, no summaries, no other seeds; its
    ``status`` is "sample", which the board refuses.
    """
    return score_track(OneModelRun(TRACK, model, model_path), name, policy_spec, checkpoint, builtin, private_seeds,
                       require_isolation, sample)  # fmt: skip
