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
from circuit_gym.circuits.preferences import areas_summary
from circuit_gym.envs import HideOracleInfo
from circuit_gym.leaderboard.scoring import OneModelRun, TrackPlay, score_track
from circuit_gym.leaderboard.single_head_play import SINGLE_HEAD, compute, recovery_by_k
from circuit_gym.track_envs import board_env

__all__ = ["score"]


def _make_env(model: str, model_path: str | None, seeds: tuple[int, ...], cache: bool = True) -> gym.Env:
    return HideOracleInfo(board_env(B.SINGLE_HEAD, model, max(seeds) + 1, cache=cache, model_path=model_path))


def _circuits(episodes: list[dict]) -> dict:
    """CPR and CMD per held-out task (mean over episodes, 95% t-interval) and, under ``"all"``,
    over every episode."""
    per_task = {t: areas_summary([e for e in episodes if e["task"] == t]) for t in B.HELD_OUT_TASKS}
    return {**per_task, "all": areas_summary(episodes)}


def _consistency(episodes: list[dict]) -> float:
    sets = [set(e["top5"]) for e in episodes]
    pairs = list(itertools.combinations(sets, 2))
    return float(np.mean([len(a & b) / len(a | b) for a, b in pairs])) if pairs else float("nan")


def _scores(main: list[dict], repro: list[dict]) -> dict:
    """A scored result's ``scores``: summaries of the evaluation episodes ``main``, the
    reproducibility seeds' recovery (their rows are not kept), and the evaluation rows."""
    per_task = {t: recovery_by_k([e for e in main if e["task"] == t]) for t in B.HELD_OUT_TASKS}
    repro_rec = {
        t: recovery_by_k([e for e in repro if e["task"] == t])["k5"]["recovery"] for t in B.HELD_OUT_TASKS
    }
    overall = recovery_by_k(main)
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
        "compute": compute(main),
        "episodes": main,
    }  # fmt: skip


def _private_scores(hidden: list[dict]) -> dict:
    """Summaries of the private episodes (never their rows)."""
    return {"overall": recovery_by_k(hidden),
            "per_task": {t: recovery_by_k([e for e in hidden if e["task"] == t]) for t in B.HELD_OUT_TASKS},
            "circuits": _circuits(hidden)}  # fmt: skip


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
