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
from circuit_gym.leaderboard.circuit_play import CIRCUIT, rows, summary
from circuit_gym.leaderboard.scoring import OneModelRun, TrackPlay, score_track
from circuit_gym.track_envs import board_env

TRACK = B.CIRCUIT


def make_circuit_env(model: str, model_path: str | None, seeds, cache: bool = True) -> gym.Env:
    """The circuit track's environment over the test-split pool up to ``max(seeds)``."""
    return board_env(B.CIRCUIT, model, max(seeds) + 1, cache=cache, model_path=model_path)


CIRCUIT_TRACK = TrackPlay(
    name=TRACK, definition=B.circuit_definition, eval_seeds=lambda: B.CIRCUIT_EVAL_SEEDS, other_seeds=tuple,
    private_seeds=lambda seeds: seeds[: B.CIRCUIT_PRIVATE_SEEDS], make_env=make_circuit_env, players=CIRCUIT,
    scores=lambda main, _: {"summary": summary(main), "episodes": rows(main)},
    private_scores=lambda hidden: {"summary": summary(hidden)}, sample_rows=rows,
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
