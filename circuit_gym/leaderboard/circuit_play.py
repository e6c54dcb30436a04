"""How a circuit-building episode is played and summarised: the policy adds heads from the empty
circuit until STOP or the budget, then ranks the rest; the scorer runs the ranking's faithfulness
curves (CPR and CMD, with random rankings' areas as chance level).

Every circuit track plays its episodes with :data:`CIRCUIT` (the transfer scorer's cells:
``circuit_gym/leaderboard/transfer_scorer.py``) and summarises a group of them with :func:`summary`.
Every action is validated (``circuit_gym.policy.check_action``): a masked head, a number outside
the action space, a float, a bool, NaN or anything but an integer fails the entry with a clear
record; nothing is clipped or rounded.
"""

from __future__ import annotations

import gymnasium as gym

from circuit_gym import benchmark as B
from circuit_gym.circuits import batch_scores
from circuit_gym.leaderboard.sandbox import SandboxedPolicy
from circuit_gym.leaderboard.scoring import Players, PlayOne
from circuit_gym.policy import check_action, check_scores
from circuit_gym.solvers.episodes import play, play_episode, summarize_track
from circuit_gym.solvers.white_box import WhiteBox

# Per-episode fields of a result, besides task and seed.
EPISODE_FIELDS = ("order", "circuit_size", "faithfulness", "return", "forward_passes", "cpr", "cmd",
                  "cpr_random", "cmd_random")  # fmt: skip


def with_areas(env: gym.Env, play_one, name: str) -> PlayOne:
    """``play_one(task, seed)`` (a row of ``solvers.episodes.play``), then the scorer runs its
    ranking's curves: one row per episode with :data:`EPISODE_FIELDS`."""

    def row(task: str, seed: int, detailed: bool = True) -> dict:
        played = play_one(task, seed)
        areas = batch_scores(
            env.unwrapped.state.runner, played["ranking"], n_random=B.CIRCUIT_N_RANDOM, seed=seed
        )
        played.update({k: areas[k] for k in ("cpr", "cmd", "cpr_random", "cmd_random")})
        return {"solver": name, "task": task, "seed": seed, **{k: played[k] for k in EPISODE_FIELDS}}

    return row


def builtin_player(env: gym.Env, white_box: WhiteBox) -> PlayOne:
    solver = white_box.build()
    return with_areas(env, lambda task, seed: play_episode(env, solver, task, seed), white_box.name)


def sandbox_player(env: gym.Env, sandbox: SandboxedPolicy) -> PlayOne:
    """Every action and the final scores of the sandboxed policy validated."""
    base = env.unwrapped

    def act(obs, info):
        return check_action(sandbox.act(obs, info["action_mask"]), info["action_mask"])

    def rank(obs, info):
        return check_scores(sandbox.rank_heads(obs), base.n_total)

    return with_areas(env, lambda task, seed: play(env, task, seed, act, rank, "policy"), "policy")


def summary(episodes: list[dict]) -> dict:
    """Per task and ``"all"``: means and 95% t-intervals over episodes
    (``solvers.episodes.summarize_track``)."""
    rows = summarize_track(episodes)
    return {r["task"]: {k: v for k, v in r.items() if k not in ("solver", "task")} for r in rows}


def rows(episodes: list[dict]) -> list[dict]:
    """The episodes as a result keeps them (without the solver's name)."""
    return [{k: v for k, v in row.items() if k != "solver"} for row in episodes]


# How a circuit-building episode is played, by a builtin or by the sandboxed policy's act and rank_heads.
CIRCUIT = Players(B.CIRCUIT, ("rank_heads", "act"), builtin_player, sandbox_player)
