"""One scorer skeleton for every track: checks -> episodes -> sandboxed policy -> provenance ->
content hash.

A :class:`TrackPlay` says how a track is played where it differs from the others (its benchmark definition,
its environment, how one episode is played by a builtin white-box solver or by the sandboxed
policy, its summaries); :func:`score_track` does the rest, the same way for every track:

1. every check before anything runs (:func:`check_request`: the entry's name, exactly one of a
   policy spec or a builtin of this track, the policy located without importing it, the private
   seed file read, isolation required where needed);
2. the track's environment over its evaluation seeds, and the result's provenance
   (``circuit_gym/leaderboard/provenance.py``);
3. the policy: a builtin (``circuit_gym.solvers.white_box``) in the scorer's process, or the
   submitted policy in its sandbox (``circuit_gym/leaderboard/sandbox.py``), closed whatever happens;
4. the evaluation episodes, the track's other seeds, and the private seeds (no disk cache: their
   tables never reach a file the policy could read); a policy failure is a failure record;
5. the summaries, rounded, and the content hash (``provenance.content_hash``).

``sample`` (the canary's run, ``circuit_gym/leaderboard/canary.py``) plays only the first evaluation
episodes and keeps their rows (``status`` "sample", refused by the board).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.isolation import IsolationUnavailableError, probe
from circuit_gym.leaderboard.probing import record_private_scoring
from circuit_gym.leaderboard.provenance import content_hash, files_hash, make_provenance
from circuit_gym.leaderboard.sandbox import (
    PolicyFailureError,
    SandboxedPolicy,
    failure_record,
    sandbox_usage,
    seal,
    split_spec,
)
from circuit_gym.policy import InvalidActionError, InvalidScoresError
from circuit_gym.progress import progress_iter
from circuit_gym.solvers.white_box import WhiteBox, builtin

# Entry names become file names (radar charts): letters, digits, '_', '.', '-', no '..'.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# The module whose file names a builtin's run in ``policy_files_hash`` (provenance only).
BUILTIN_SPEC = "circuit_gym.solvers.white_box:BUILTINS"
# What a policy can do wrong: a failure record, not a crash of the scorer.
POLICY_FAILURES = (PolicyFailureError, InvalidScoresError, InvalidActionError)

PlayOne = Callable[..., dict]  # (task, seed, detailed=True) -> the episode's row


@dataclass(frozen=True)
class TrackPlay:
    """What one track's scoring needs beyond the skeleton (read at call time, so a test's
    patched benchmark applies)."""

    name: str
    definition: Callable[[], dict]
    eval_seeds: Callable[[], tuple[int, ...]]
    other_seeds: Callable[[], tuple[int, ...]]  # scored, summarised, not kept per episode (may be empty)
    private_seeds: Callable[[tuple[int, ...]], tuple[int, ...]]  # which of the private file's seeds
    make_env: Callable[[str, str | None, tuple[int, ...], bool], gym.Env]  # model, path, seeds, cache
    methods: tuple[str, ...]  # what a submitted policy must have
    builtin_player: Callable[[gym.Env, WhiteBox], PlayOne]
    sandbox_player: Callable[[gym.Env, SandboxedPolicy], PlayOne]
    scores: Callable[[list[dict], list[dict]], dict]  # evaluation rows, other seeds' rows
    private_scores: Callable[[list[dict]], dict]
    sample_rows: Callable[[list[dict]], list[dict]] = lambda rows: rows
    per_call_limit_s: Callable[[], float] = lambda: B.CALL_TIMEOUT_S


def _in_process_isolation() -> dict:
    """The ``isolation`` record of a white-box reference, which runs in the scorer's own
    process (the package's code, not a submission): none."""
    return {"complete": False, "mechanism": None, "filesystem": False, "processes": False, "network": False,
            "environment": False, "limits": False,
            "missing": ["white-box reference solver: runs in the scorer's process"]}  # fmt: skip


def check_name(name: object) -> str:
    """``name`` if it is a valid entry name, else ValueError."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or ".." in name:
        raise ValueError(
            f"entry name must match {NAME_PATTERN.pattern} (1-64 letters, digits, '_', '.', '-', starting "
            f"with a letter or digit, no '..'), got {name!r}"
        )
    return name


def read_private_seeds(path: str | Path) -> tuple[tuple[int, ...], str]:
    """(seeds, SHA-256 of the file's bytes) of a private seed file: a JSON list of non-negative
    ints, or one int per line (blank lines and '#' comments allowed). Error messages never
    repeat the seeds."""
    raw = Path(path).read_bytes()
    sha = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise ValueError(f"private seed file {path}: not UTF-8 text") from None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, list):
        lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        try:
            data = [int(line) for line in lines if line]
        except ValueError:
            raise ValueError(
                f"private seed file {path}: expected a JSON list of ints or one int per line"
            ) from None
    if not data or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**63 for s in data):
        raise ValueError(f"private seed file {path}: expected a non-empty list of ints in [0, 2**63)")
    if len(set(data)) != len(data):
        raise ValueError(f"private seed file {path}: a seed appears more than once")
    return tuple(int(s) for s in data), sha


def isolation_required(policy_spec: str | None, private, require_isolation: bool | None) -> bool:
    """Whether the policy must run completely isolated (default: with private seeds); raises
    ``IsolationUnavailableError`` before any scoring where a sandboxed policy needs it and this
    machine lacks it."""
    if require_isolation is None:
        require_isolation = private is not None
    if policy_spec is not None and require_isolation and not probe().complete:
        raise IsolationUnavailableError(
            "scoring requires the policy's isolation, and this machine lacks: " + "; ".join(probe().missing)
        )
    return require_isolation


def check_entry(
    name: str, track: str, policy_spec: str | None, builtin_name: str | None, builtins: Collection[str]
) -> None:
    """The checks every track makes of an entry before anything runs: its name, exactly one of
    ``policy_spec`` or a builtin, the builtin one of ``builtins``, the policy located without
    importing it."""
    check_name(name)
    if (policy_spec is None) == (builtin_name is None):
        raise ValueError("give exactly one of policy_spec ('package.module:factory') or builtin")
    if builtin_name is not None and builtin_name not in builtins:
        raise ValueError(
            f"builtin must be one of {sorted(builtins)} on the {track} track, got {builtin_name!r}"
        )
    if policy_spec is not None:
        split_spec(policy_spec)


def check_request(track: str, name: str, policy_spec: str | None, builtin_name: str | None,
                  checkpoint: str | Path | None, private_seeds: str | Path | None,
                  require_isolation: bool | None) -> tuple[str, tuple[tuple[int, ...], str] | None, bool]:  # fmt: skip
    """Every check of a scoring request on ``track`` before anything runs: the entry's name,
    exactly one of ``policy_spec`` or a builtin that plays this track, the policy located
    without importing it (a wrong import path is a ModuleNotFoundError now), the private seed
    file read and isolation required where needed. Returns ``(policy_files_hash, private seeds
    or None, require_isolation)``."""
    check_name(name)
    if (policy_spec is None) == (builtin_name is None):
        raise ValueError("give exactly one of policy_spec ('package.module:factory') or builtin")
    if builtin_name is not None:
        builtin(builtin_name, track)
    else:
        split_spec(policy_spec)
    policy_hash = files_hash(policy_spec or BUILTIN_SPEC, checkpoint)
    private = read_private_seeds(private_seeds) if private_seeds is not None else None
    return policy_hash, private, isolation_required(policy_spec, private, require_isolation)


def episode_jobs(seeds, sample: int | None = None) -> list[tuple[str, int]]:
    """The (held-out task, seed) episodes of ``seeds`` in scoring order, task by task; with
    ``sample``, only the first ``sample`` of them (the canary's: a prefix, so a policy that keeps
    state between calls sees the same calls as in a full run)."""
    jobs = [(task, int(seed)) for task in B.HELD_OUT_TASKS for seed in seeds]
    if sample is not None and not 1 <= sample <= len(jobs):
        raise ValueError(f"sample must be between 1 and {len(jobs)} episodes, got {sample}")
    return jobs if sample is None else jobs[:sample]


def play_episodes(
    play_one: PlayOne, jobs: list[tuple[str, int]], desc: str, detailed: bool = True
) -> list[dict]:
    """One row per (task, seed) of ``jobs`` (``detailed``: with what the track keeps per episode,
    not only what its summaries of other seeds need); the bar (``circuit_gym.progress``) counts
    episodes, never shows the seeds."""
    return [
        play_one(task, seed, detailed=detailed) for task, seed in progress_iter(jobs, desc, unit="episode")
    ]


def _round(obj, digits: int = 10):
    """Round floats so results do not depend on the last bits of summation order."""
    if isinstance(obj, float):
        return round(obj, digits) if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _round(v, digits) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_round(v, digits) for v in obj]
    return obj


def isolation_record(builtin_name: str | None) -> dict:
    """The result's ``isolation``: none for a builtin (the package's code, in the scorer's
    process), else what this machine's sandbox enforces for a submitted policy."""
    return _in_process_isolation() if builtin_name else probe().as_dict()


def open_sandbox(
    track: TrackPlay, policy_spec: str, checkpoint: str | None, require_isolation: bool
) -> SandboxedPolicy:
    """The submitted policy in its sandbox, with the track's limits and methods."""
    return SandboxedPolicy(policy_spec, checkpoint, timeout_s=track.per_call_limit_s(), memory_mb=B.MEMORY_LIMIT_MB,
                           require_isolation=require_isolation, methods=track.methods)  # fmt: skip


def players(
    track: TrackPlay, builtin_name: str | None, sandbox: SandboxedPolicy | None
) -> Callable[[gym.Env], PlayOne]:
    """``player(env) -> play_one`` for the builtin ``builtin_name`` (one solver for every
    environment, reset once) or else the sandboxed policy."""
    if builtin_name is not None:
        solver = builtin(builtin_name, track.name)
        solver.reset()
        return lambda env: track.builtin_player(env, solver)
    return lambda env: track.sandbox_player(env, sandbox)


def score_track(track: TrackPlay, name: str, policy_spec: str | None = None, checkpoint: str | None = None,
                builtin_name: str | None = None, model: str | None = None, model_path: str | None = None,
                private_seeds: str | Path | None = None, require_isolation: bool | None = None,
                sample: int | None = None) -> dict:  # fmt: skip
    """Score one policy (``policy_spec``, sandboxed) or builtin (``builtin_name``) on ``track``;
    the result dict, with ``status`` "scored", "failed" or (with ``sample``) "sample"."""
    policy_hash, private, require_isolation = check_request(
        track.name, name, policy_spec, builtin_name, checkpoint, private_seeds, require_isolation
    )
    jobs = episode_jobs(track.eval_seeds(), sample)
    if sample is not None and private is not None:
        raise ValueError("a sample run (the canary's) does not score private seeds")
    other = () if sample is not None else track.other_seeds()
    model = model or B.MODEL
    start = time.time()
    env = track.make_env(model, model_path, track.eval_seeds() + other, True)
    result: dict = {
        "name": name,
        **record_private_scoring(private_seeds, name, policy_spec or f"builtin:{builtin_name}", track.name),
    }
    if track.name != B.SINGLE_HEAD:
        result["track"] = track.name
    result["provenance"] = make_provenance(track.definition(), env.unwrapped.model, policy_spec or f"builtin:{builtin_name}",
                                           checkpoint, policy_hash, white_box=builtin_name is not None)  # fmt: skip
    result["isolation"] = isolation_record(builtin_name)
    sandbox = None
    try:
        sandbox = None if builtin_name else open_sandbox(track, policy_spec, checkpoint, require_isolation)
        player = players(track, builtin_name, sandbox)
        play_one = player(env)
        main = play_episodes(play_one, jobs, f"{track.name}: evaluation seeds")
        extra = (
            play_episodes(play_one, episode_jobs(other), f"{track.name}: other seeds", detailed=False)
            if other
            else []
        )
        if private is not None:
            seal(sandbox)  # the private part: a failure from here on carries no policy text
            seeds = track.private_seeds(private[0])
            private_env = track.make_env(model, model_path, seeds, False)
            hidden = play_episodes(player(private_env), episode_jobs(seeds), f"{track.name}: private seeds")
    except POLICY_FAILURES as err:
        result.update(status="failed", failure=failure_record(err, sandbox))
    else:
        if sample is not None:
            result.update(status="sample", scores=_round({"episodes": track.sample_rows(main)}))
        else:
            result.update(status="scored", scores=_round(track.scores(main, extra)))
        if private is not None:
            result["private"] = {"seed_file_sha256": private[1], "n_seeds": len(seeds),
                                 "scores": _round(track.private_scores(hidden))}  # fmt: skip
    finally:
        if sandbox is not None:
            sandbox.close()
    result["diagnostics"] = {"wall_seconds": round(time.time() - start, 1), **sandbox_usage(sandbox)}
    result["content_hash"] = content_hash(result)
    return result


def write_result(result: dict, out: str | Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True, allow_nan=True) + "\n")
    return out
