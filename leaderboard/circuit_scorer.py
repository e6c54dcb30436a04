"""Score a circuit-building policy on the circuit track and write a verifiable result file.

The circuit track (``benchmark.circuit_definition``): the policy plays the circuit-building
environment ``CircuitDiscovery-*-Multi-Circuit-v0`` (``start="empty"``, the track's budget and
alpha, no oracle fields) on the held-out tasks' test-split batches. Each step it sees the
observation and the action mask and answers ``act(observation, action_mask)``: a head to add, or
STOP (the last action id). At the episode's end ``rank_heads(observation)`` orders the heads it
never added. The episode's ranking, heads in insertion order then the rest by those scores
(``baselines.circuit_solvers.episode_ranking``), is scored by the scorer as the baselines'
circuit track scores it: CPR and CMD of its faithfulness curves on the episode's batch
(``circuit_gym.circuits.batch_scores``), with random rankings' areas as chance level.

Every action is validated (``circuit_gym.policy.check_action``): a masked head, a number
outside the action space, a float, a bool, NaN or anything but an integer fails the entry with
a clear record; nothing is clipped or rounded. A submitted policy runs sandboxed
(``circuit_gym.leaderboard.sandbox``, the same limits as the single-head track: per call, not
per episode). The white-box references (``builtin``: exact greedy search and attribution-ranked
insertion, ``baselines.circuit_solvers``) run in the scorer's process.

Per held-out task and over all episodes (``"all"``): CPR and CMD (means over episodes with 95%
t-intervals), the built circuit's faithfulness and size, and forward passes per episode: the
environment's (``info["forward_passes"]``: setup passes and one per head added) plus a white-box
solver's own (greedy's candidate circuits, ``info["oracle_forward_passes"]``; attribution's
forward and backward pass). A sandboxed policy cannot run the model, so it pays the
environment's passes only. Private scores (the first ``CIRCUIT_PRIVATE_SEEDS`` seeds of the
maintainers' file) are stored as summaries with the file's SHA-256, never the seeds.

``scores`` is deterministic: scoring the same policy twice gives byte-identical ``scores``.
"""

from __future__ import annotations

import time
from pathlib import Path

import gymnasium as gym

from circuit_gym.baselines.circuit_solvers import (
    AttributionInsertion,
    GreedySearch,
    play,
    play_episode,
    summarize_track,
)
from circuit_gym.circuits import batch_scores
from circuit_gym.leaderboard import benchmark as B
from circuit_gym.leaderboard.isolation import probe
from circuit_gym.leaderboard.provenance import content_hash, make_provenance
from circuit_gym.leaderboard.sandbox import PolicyFailureError, SandboxedPolicy
from circuit_gym.leaderboard.scorer import _in_process_isolation, _round, check_request, episode_jobs
from circuit_gym.policy import InvalidActionError, InvalidScoresError, check_action, check_scores

TRACK = "circuit"
# White-box reference solvers run in the scorer's process: name -> (the solver class, the spec
# whose module file names the run in ``policy_files_hash``).
BUILTIN_CIRCUIT_SOLVERS = {
    "greedy_search": "circuit_gym.baselines.circuit_solvers:GreedySearch",
    "attribution": "circuit_gym.baselines.circuit_solvers:AttributionInsertion",
}
_SOLVERS = {"greedy_search": GreedySearch, "attribution": AttributionInsertion}
# Per-episode fields of the result, besides task and seed.
EPISODE_FIELDS = ("order", "circuit_size", "faithfulness", "return", "forward_passes", "cpr", "cmd",
                  "cpr_random", "cmd_random")  # fmt: skip


def make_circuit_env(model: str, model_path: str | None, seeds, cache: bool = True) -> gym.Env:
    """The circuit track's environment over the test-split pool up to ``max(seeds)``."""
    kwargs = dict(model=model, split=B.SPLIT, pool_size=max(seeds) + 1, batch_size=B.PROMPTS_PER_EPISODE,
                  ablation=B.ABLATION, start=B.CIRCUIT_START, budget=B.CIRCUIT_BUDGET, alpha=B.CIRCUIT_ALPHA,
                  oracle_info=False, cache=cache)  # fmt: skip
    if model_path:
        kwargs["model_path"] = model_path
    return gym.make(B.circuit_env(model), **kwargs)


def _episodes(env: gym.Env, play_one, jobs, name: str, desc: str) -> list[dict]:
    """One row per (held-out task, seed) of ``jobs``: ``play_one(task, seed)`` plays it (a row of
    ``circuit_solvers.play``), then the scorer runs its ranking's curves."""
    from tqdm.auto import tqdm

    out = []
    for task, seed in tqdm(jobs, desc=desc, unit="episode", leave=False):  # counts only, never the seeds
        row = play_one(task, seed)
        areas = batch_scores(
            env.unwrapped.state.runner, row["ranking"], n_random=B.CIRCUIT_N_RANDOM, seed=seed
        )
        row.update({k: areas[k] for k in ("cpr", "cmd", "cpr_random", "cmd_random")})
        out.append({"solver": name, "task": task, "seed": seed, **{k: row[k] for k in EPISODE_FIELDS}})
    return out


def _summary(episodes: list[dict]) -> dict:
    """Per held-out task and ``"all"``: means and 95% t-intervals over episodes
    (``circuit_solvers.summarize_track``)."""
    rows = summarize_track(episodes)
    return {r["task"]: {k: v for k, v in r.items() if k not in ("solver", "task")} for r in rows}


def score_circuit(name: str, policy_spec: str | None = None, checkpoint: str | None = None,
                  builtin: str | None = None, model: str | None = None, model_path: str | None = None,
                  private_seeds: str | Path | None = None, require_isolation: bool | None = None,
                  sample: int | None = None) -> dict:  # fmt: skip
    """Score one circuit-building policy on the circuit track; returns the result dict (``track``
    "circuit", ``status`` "scored" or "failed").

    ``policy_spec``: ``package.module:factory`` returning an object with ``act(observation,
    action_mask)`` and ``rank_heads(observation)`` (``circuit_gym.policy.CircuitBuilder``), run
    sandboxed; or ``builtin``: one of :data:`BUILTIN_CIRCUIT_SOLVERS`. ``private_seeds`` and
    ``require_isolation`` as in :func:`circuit_gym.leaderboard.scorer.score`; only the first
    ``benchmark.CIRCUIT_PRIVATE_SEEDS`` seeds of the file are played. ``sample``: the canary's
    run, as in :func:`~circuit_gym.leaderboard.scorer.score` (status "sample", episode rows only).
    """
    policy_hash, private, require_isolation = check_request(
        name,
        policy_spec,
        builtin,
        BUILTIN_CIRCUIT_SOLVERS,
        checkpoint,
        private_seeds,
        require_isolation,
        track=" on the circuit track",
    )
    jobs = episode_jobs(B.CIRCUIT_EVAL_SEEDS, sample)
    if sample is not None and private is not None:
        raise ValueError("a sample run (the canary's) does not score private seeds")
    model = model or B.MODEL
    start = time.time()
    env = make_circuit_env(model, model_path, B.CIRCUIT_EVAL_SEEDS)
    result: dict = {
        "name": name, "track": TRACK, "isolation": _in_process_isolation(),
        "provenance": make_provenance(B.circuit_definition(), env.unwrapped.model, policy_spec or f"builtin:{builtin}",
                                      checkpoint, policy_hash, white_box=builtin is not None),
    }  # fmt: skip
    sandbox = None

    def player(e: gym.Env):
        """``(task, seed) -> row`` on ``e``: the builtin solver, or the sandboxed policy with every
        action and its final scores validated."""
        base = e.unwrapped
        if builtin is not None:
            solver = _SOLVERS[builtin]()
            return lambda task, seed: play_episode(e, solver, task, seed)

        def act(obs, info):
            return check_action(sandbox.act(obs, info["action_mask"]), info["action_mask"])

        def rank(obs, info):
            return check_scores(sandbox.rank_heads(obs), base.n_total)

        return lambda task, seed: play(e, task, seed, act, rank, name)

    try:
        if builtin is None:
            result["isolation"] = probe().as_dict()
            sandbox = SandboxedPolicy(policy_spec, checkpoint, timeout_s=B.CALL_TIMEOUT_S, memory_mb=B.MEMORY_LIMIT_MB,
                                      require_isolation=require_isolation, methods=("rank_heads", "act"))  # fmt: skip
        main = _episodes(env, player(env), jobs, name, "circuit track: evaluation seeds")
        if private is not None:
            seeds = private[0][: B.CIRCUIT_PRIVATE_SEEDS]
            # No disk cache: the tables of private batches never reach a file the policy could read.
            private_env = make_circuit_env(model, model_path, seeds, cache=False)
            hidden = _episodes(private_env, player(private_env), episode_jobs(seeds), name,
                               "circuit track: private seeds")  # fmt: skip
    except (PolicyFailureError, InvalidScoresError, InvalidActionError) as err:
        result.update(status="failed", failure={"type": type(err).__name__, "reason": str(err)})
    else:
        episodes = [{k: v for k, v in row.items() if k != "solver"} for row in main]
        if sample is not None:
            result.update(status="sample", scores=_round({"episodes": episodes}))
        else:
            result.update(status="scored", scores=_round({"summary": _summary(main), "episodes": episodes}))
        if private is not None:
            result["private"] = {
                "seed_file_sha256": private[1],
                "n_seeds": len(seeds),
                "scores": _round({"summary": _summary(hidden)}),
            }
    finally:
        if sandbox is not None:
            sandbox.close()
    result["diagnostics"] = {"wall_seconds": round(time.time() - start, 1)}
    result["content_hash"] = content_hash(result)
    return result
