"""Score a circuit-building policy on the circuit track and write a verifiable result file.

The circuit track (``benchmark.circuit_definition``): the policy plays the circuit-building
environment ``CircuitDiscovery-*-Multi-Circuit-v0`` (``start="empty"``, the track's budget and
alpha, no oracle fields) on the held-out tasks' test-split batches. Each step it sees the
observation and the action mask and answers ``act(observation, action_mask)``: a head to add, or
STOP (the last action id). At the episode's end ``rank_heads(observation)`` orders the heads it
never added. The episode's ranking, heads in insertion order then the rest by those scores
(``circuit_gym.solvers.episodes.episode_ranking``), is scored by the scorer as the baselines'
circuit track scores it: CPR and CMD of its faithfulness curves on the episode's batch
(``circuit_gym.circuits.batch_scores``), with random rankings' areas as chance level.

Every action is validated (``circuit_gym.policy.check_action``): a masked head, a number
outside the action space, a float, a bool, NaN or anything but an integer fails the entry with
a clear record; nothing is clipped or rounded. A submitted policy runs sandboxed
(``circuit_gym.leaderboard.sandbox``, the same limits as the single-head track: per call, not
per episode). The white-box references (``builtin``: exact greedy search, attribution-ranked
insertion, ACDC and EAP-IG, ``circuit_gym.solvers.white_box``) run in the scorer's process. The
skeleton (checks, episodes, sandbox, provenance, content hash) is ``circuit_gym/leaderboard/scoring.py``.

Per held-out task and over all episodes (``"all"``): CPR and CMD (means over episodes with 95%
t-intervals), the built circuit's faithfulness and size, and forward passes per episode: the
environment's (``info["forward_passes"]``: setup passes and one per head added) plus a white-box
solver's own (greedy's candidate circuits, ``info["oracle_forward_passes"]``; attribution's
forward and backward pass; ACDC's circuits tried; EAP-IG's stacked steps). A sandboxed policy cannot run the model, so it pays the
environment's passes only. Private scores (the first ``CIRCUIT_PRIVATE_SEEDS`` seeds of the
maintainers' file) are stored as summaries with the file's SHA-256, never the seeds.

``scores`` is deterministic: scoring the same policy twice gives byte-identical ``scores``.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym

from circuit_gym import benchmark as B
from circuit_gym.circuits import batch_scores
from circuit_gym.leaderboard.sandbox import SandboxedPolicy
from circuit_gym.leaderboard.scoring import OneModelRun, Players, PlayOne, TrackPlay, score_track
from circuit_gym.policy import check_action, check_scores
from circuit_gym.solvers.episodes import play, play_episode, summarize_track
from circuit_gym.solvers.white_box import WhiteBox
from circuit_gym.track_envs import board_env

TRACK = B.CIRCUIT
# Per-episode fields of the result, besides task and seed.
EPISODE_FIELDS = ("order", "circuit_size", "faithfulness", "return", "forward_passes", "cpr", "cmd",
                  "cpr_random", "cmd_random")  # fmt: skip


def make_circuit_env(model: str, model_path: str | None, seeds, cache: bool = True) -> gym.Env:
    """The circuit track's environment over the test-split pool up to ``max(seeds)``."""
    return board_env(B.CIRCUIT, model, max(seeds) + 1, cache=cache, model_path=model_path)


def _with_areas(env: gym.Env, play_one, name: str) -> PlayOne:
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


def _builtin_player(env: gym.Env, white_box: WhiteBox) -> PlayOne:
    solver = white_box.build()
    return _with_areas(env, lambda task, seed: play_episode(env, solver, task, seed), white_box.name)


def _sandbox_player(env: gym.Env, sandbox: SandboxedPolicy) -> PlayOne:
    """Every action and the final scores of the sandboxed policy validated."""
    base = env.unwrapped

    def act(obs, info):
        return check_action(sandbox.act(obs, info["action_mask"]), info["action_mask"])

    def rank(obs, info):
        return check_scores(sandbox.rank_heads(obs), base.n_total)

    return _with_areas(env, lambda task, seed: play(env, task, seed, act, rank, "policy"), "policy")


def _summary(episodes: list[dict]) -> dict:
    """Per held-out task and ``"all"``: means and 95% t-intervals over episodes
    (``solvers.episodes.summarize_track``)."""
    rows = summarize_track(episodes)
    return {r["task"]: {k: v for k, v in r.items() if k not in ("solver", "task")} for r in rows}


def _rows(episodes: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "solver"} for row in episodes]


# How a circuit-building episode is played (the transfer tracks play it too).
CIRCUIT = Players(TRACK, ("rank_heads", "act"), _builtin_player, _sandbox_player)
CIRCUIT_TRACK = TrackPlay(
    name=TRACK, definition=B.circuit_definition, eval_seeds=lambda: B.CIRCUIT_EVAL_SEEDS, other_seeds=tuple,
    private_seeds=lambda seeds: seeds[: B.CIRCUIT_PRIVATE_SEEDS], make_env=make_circuit_env, players=CIRCUIT,
    scores=lambda main, _: {"summary": _summary(main), "episodes": _rows(main)},
    private_scores=lambda hidden: {"summary": _summary(hidden)}, sample_rows=_rows,
)  # fmt: skip


def score_circuit(name: str, policy_spec: str | None = None, checkpoint: str | None = None,
                  builtin: str | None = None, model: str | None = None, model_path: str | None = None,
                  private_seeds: str | Path | None = None, require_isolation: bool | None = None,
                  sample: int | None = None) -> dict:  # fmt: skip
    """Score one circuit-building policy on the circuit track; returns the result dict (``track``
    "circuit", ``status`` "scored" or "failed").

    ``policy_spec``: ``package.module:factory`` returning an object with ``act(observation,
    action_mask)`` and ``rank_heads(observation)`` (``circuit_gym.policy.CircuitBuilder``), run
    sandboxed; or ``builtin``: a white-box solver of ``circuit_gym.solvers.white_box`` that plays
    this track. ``private_seeds`` and ``require_isolation`` as in
    :func:`circuit_gym.leaderboard.scorer.score`; only the first ``benchmark.CIRCUIT_PRIVATE_SEEDS``
    seeds of the file are played. ``sample``: the canary's run, as in
    :func:`~circuit_gym.leaderboard.scorer.score` (status "sample", episode rows only).
    """
    return score_track(OneModelRun(CIRCUIT_TRACK, model, model_path), name, policy_spec, checkpoint, builtin,
                       private_seeds, require_isolation, sample)  # fmt: skip
