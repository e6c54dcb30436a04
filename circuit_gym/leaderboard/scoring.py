"""One scorer skeleton for every track: checks -> environments -> sandboxed policy -> episodes ->
provenance -> content hash.

A :class:`TrackRun` (one per scoring run) says how its track differs from the others: its
benchmark definition and builtins, its episodes laid out in :class:`Part` s (each a list of
(task or kind, seed) jobs on one environment: one model's held-out tasks, a transfer cell, a
planted kind; public, then private), how one episode is played by a builtin or by the sandboxed
policy, its summaries and its private record. :func:`score_track` does the rest, the same way for
every track (each scorer's run: the transfer scorer's for the single-head and circuit tracks, the
Planted, edge and knock-out scorers'):

1. every check before anything runs (:func:`check_request`: the entry's name, exactly one of a
   policy spec or a builtin of this track, the policy located without importing it, the private
   seed file read, isolation required where needed; then the track's own, :meth:`TrackRun.check`);
2. what must exist before the policy plays (:meth:`TrackRun.open`), and the probing ledger's count;
3. the policy: a builtin in the scorer's process, or the submitted policy in its sandbox
   (``circuit_gym/leaderboard/sandbox.py``), closed whatever happens;
4. the public parts, then (sealed: a failure carries no policy text) the private parts, each on
   its environment (no disk cache for private material: its tables never reach a file the policy
   could read); a policy failure is a failure record;
5. the summaries, rounded, the provenance (``circuit_gym/leaderboard/provenance.py``) and the
   content hash (``provenance.content_hash``).

The private part is sealed (issue 58): its record keeps only what the scorer decides
(:func:`sealed_private`: ranking scores, their intervals and episode counts; never a circuit's
size, a pass count or a faithfulness, which a policy sets at no cost to its ranking), a failure
there is one fixed record (:func:`sealed_failure`: not which check failed, nor the exception's
type), and a sandboxed policy's wall time is recorded up to the seal only.

``sample`` (the canary's run, ``circuit_gym/leaderboard/canary.py``) plays only the first public
episodes in scoring order and keeps their rows (``status`` "sample", refused by the board).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.isolation import IsolationUnavailableError, probe
from circuit_gym.leaderboard.private_models import MODEL_RECORD_FIELDS, MODELS_KEY
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

# Entry names become file names (results, MIB exports): letters, digits, '_', '.', '-', no '..'.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# The module whose file names a builtin's run in ``policy_files_hash`` (provenance only).
BUILTIN_SPEC = "circuit_gym.solvers.white_box:BUILTINS"
# What a policy can do wrong: a failure record, not a crash of the scorer.
POLICY_FAILURES = (PolicyFailureError, InvalidScoresError, InvalidActionError)

PlayOne = Callable[..., dict]  # (task, seed, detailed=True) -> the episode's row


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


@dataclass(frozen=True)
class Part:
    """Episodes played on one environment, in scoring order: ``jobs`` ((task or kind, seed) pairs)
    on the environment ``env(jobs)`` built when the part starts, each episode's row from
    ``play(env, who)`` (``who``: what :meth:`TrackRun.builtin_player` or
    :meth:`TrackRun.sandbox_player` gave)."""

    label: str  # the progress bar's (never a seed)
    jobs: tuple[tuple[str, int], ...]
    env: Callable[[tuple[tuple[str, int], ...]], Any]
    play: Callable[[Any, Any], PlayOne]
    detailed: bool = True  # False: the track's other seeds (summarised, not kept, not sampled)
    owns_env: bool = True  # closed when the part ends (False: the run holds it, :meth:`TrackRun.close`)
    scope: Callable[[], AbstractContextManager] = nullcontext  # around the part (a secret model's cache)


class TrackRun:
    """One scoring run on one track: what the track does differently, for :func:`score_track`.

    A subclass names its track and says which builtins play it, lays out its episodes in
    :class:`Part` s (public, then private), plays one episode for a builtin or the sandboxed
    policy, and summarises the rows; an instance is made per run (it may hold the run's
    environments and what they recorded, e.g. the models' weights)."""

    name: str  # the board's track name (recorded in the result)
    kind: str | None = None  # the white-box registry's track whose builtins play it; None: :meth:`builtins`
    methods: tuple[str, ...] = ("rank_heads", "act")  # what a submitted policy must have
    builtin_spec: str = BUILTIN_SPEC  # the module whose files name a builtin's run (``policy_files_hash``)

    def builtins(self) -> Collection[str]:
        """This track's builtins where they are not the white-box registry's."""
        raise NotImplementedError

    def check(self, private: tuple[int, ...] | None) -> None:
        """The track's own checks of a request, before anything runs (``private``: the file's seeds)."""

    def parts(self, sample: bool) -> list[Part]:
        """The public episodes in scoring order (``sample``: the canary's run, which plays a prefix)."""
        raise NotImplementedError

    def open(self) -> None:
        """Build what must exist before the policy plays (an environment the provenance reads)."""

    def private_parts(self, seeds: tuple[int, ...]) -> list[Part]:
        """The private episodes, from the private seed file's ``seeds``."""
        raise NotImplementedError

    def builtin_player(self, name: str) -> Any:
        """Who plays each part's episodes for the builtin ``name``."""
        raise NotImplementedError

    def sandbox_player(self, sandbox: SandboxedPolicy) -> Any:
        """Who plays each part's episodes for the sandboxed policy."""
        raise NotImplementedError

    def scores(self, main: list[dict], other: list[dict]) -> dict:
        """A scored result's ``scores`` from the evaluation rows and the other seeds' rows."""
        raise NotImplementedError

    def sample_rows(self, rows: list[dict]) -> list[dict]:
        """A sample run's rows as its result keeps them."""
        return rows

    def private_record(self, hidden: list[dict]) -> dict:
        """The result's ``private`` besides the seed file's SHA-256: summaries, never a seed."""
        raise NotImplementedError

    def definition(self) -> dict:
        raise NotImplementedError

    def model(self) -> Any:
        """What the provenance names as the model (``circuit_gym_info``: name, weights hash)."""
        raise NotImplementedError

    def provenance(self) -> dict:
        """The provenance's fields besides :func:`make_provenance`'s (after the episodes)."""
        return {}

    def fields(self) -> dict:
        """The result's own fields besides the skeleton's."""
        return {}

    def close(self) -> None:
        """Close what the run holds, whatever happened."""


@dataclass(frozen=True)
class Players:
    """How an episode of the white-box registry's track ``kind`` ("single-head" or "circuit") is
    played: by a builtin white-box solver, or by the sandboxed policy (with ``methods``)."""

    kind: str
    methods: tuple[str, ...]
    builtin_player: Callable[[gym.Env, WhiteBox], PlayOne]
    sandbox_player: Callable[[gym.Env, SandboxedPolicy], PlayOne]


def players(
    kind: Players, builtin_name: str | None, sandbox: SandboxedPolicy | None
) -> Callable[[gym.Env], PlayOne]:
    """``player(env) -> play_one`` for the builtin ``builtin_name`` (one solver for every
    environment, reset once) or else the sandboxed policy."""
    if builtin_name is not None:
        solver = builtin(builtin_name, kind.kind)
        solver.reset()
        return lambda env: kind.builtin_player(env, solver)
    assert sandbox is not None
    return lambda env: kind.sandbox_player(env, sandbox)


class PlayersRun(TrackRun):
    """A run whose episodes are the white-box registry's kind ``players`` (single head or circuit):
    a part plays with ``who(env)``, ``who`` from :func:`players`."""

    players: Players

    @property
    def kind(self) -> str:  # type: ignore[override]
        return self.players.kind

    @property
    def methods(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.players.methods

    def builtin_player(self, name: str) -> Callable[[gym.Env], PlayOne]:
        return players(self.players, name, None)

    def sandbox_player(self, sandbox: SandboxedPolicy) -> Callable[[gym.Env], PlayOne]:
        return players(self.players, None, sandbox)


def check_request(run: TrackRun, name: str, policy_spec: str | None, builtin_name: str | None,
                  checkpoint: str | Path | None, private_seeds: str | Path | None,
                  require_isolation: bool | None) -> tuple[str, tuple[tuple[int, ...], str] | None, bool]:  # fmt: skip
    """Every check of a scoring request on ``run``'s track before anything runs: the entry's name,
    exactly one of ``policy_spec`` or a builtin that plays this track, the policy located
    without importing it (a wrong import path is a ModuleNotFoundError now), the private seed
    file read and isolation required where needed. Returns ``(policy_files_hash, private seeds
    or None, require_isolation)``."""
    check_name(name)
    if (policy_spec is None) == (builtin_name is None):
        raise ValueError("give exactly one of policy_spec ('package.module:factory') or builtin")
    if builtin_name is not None and run.kind is not None:
        builtin(builtin_name, run.kind)
    elif builtin_name is not None and builtin_name not in run.builtins():
        raise ValueError(
            f"builtin must be one of {sorted(run.builtins())} on the {run.name} track, got {builtin_name!r}"
        )
    if policy_spec is not None:
        split_spec(policy_spec)
    policy_hash = files_hash(policy_spec or run.builtin_spec, checkpoint)
    private = read_private_seeds(private_seeds) if private_seeds is not None else None
    return policy_hash, private, isolation_required(policy_spec, private, require_isolation)


def sample_parts(parts: list[Part], sample: int) -> list[Part]:
    """The first ``sample`` episodes of the evaluation parts, in scoring order (the canary's: a
    prefix, so a policy that keeps state between calls sees the same calls as in a full run)."""
    main = [p for p in parts if p.detailed]
    total = sum(len(p.jobs) for p in main)
    if not 1 <= sample <= total:
        raise ValueError(f"sample must be between 1 and {total} episodes, got {sample}")
    out = []
    for part in main:
        if sample > 0:
            out.append(dataclasses.replace(part, jobs=part.jobs[:sample]))
        sample -= len(part.jobs)
    return out


def play_episodes(
    play_one: PlayOne, jobs: list[tuple[str, int]], desc: str, detailed: bool = True
) -> list[dict]:
    """One row per (task, seed) of ``jobs`` (``detailed``: with what the track keeps per episode,
    not only what its summaries of other seeds need); the bar (``circuit_gym.progress``) counts
    episodes, never shows the seeds."""
    return [
        play_one(task, seed, detailed=detailed) for task, seed in progress_iter(jobs, desc, unit="episode")
    ]


def play_part(part: Part, who) -> list[dict]:
    """The rows of ``part``, its environment built for it (and closed after, where it owns it)."""
    with part.scope():
        env = part.env(part.jobs)
        try:
            return play_episodes(part.play(env, who), list(part.jobs), part.label, part.detailed)
        finally:
            if part.owns_env:
                env.close()


# What a private record's summaries keep (:func:`sealed_private`): the ranking scores of every
# track and their intervals, and how many episodes each summarises (fixed by the scorer). Anything
# else a summary holds is the policy's to set for free (a circuit's size, its faithfulness, the
# passes it spent, how many of its areas were finite) and would carry private observations out.
PRIVATE_SCORE_FIELDS = frozenset({
    "recovery", "recovery_ci95", "recovery_clipped_mean", "recovery_clipped_mean_ci95", "recovery_clip",
    "top1_rate", "top1_ci95", "cpr", "cpr_ci95", "cmd", "cmd_ci95", "auc", "auc_ci95",
    "precision", "precision_ci95", "recall", "recall_ci95", "episodes",
    # the knock-out track's (issue 60): its area against exact greedy's and its backup recall
    "relative_area", "relative_area_ci95", "backup_recall", "backup_recall_ci95",
    # the edge track's protocol 2 (issue 57): its ranking pair on the log size axis, and the planted
    # part's AUC over the candidates
    "cpr_log", "cpr_log_ci95", "cmd_log", "cmd_log_ci95", "auc_candidates", "auc_candidates_ci95",
})  # fmt: skip
# The record's own fields besides ``scores``: what the scorer scored on (never a seed); with several
# private models (benchmark v8), ``private_models``: one record per model, sealed the same way.
PRIVATE_RECORD_FIELDS = frozenset(
    {"seed_file_sha256", "n_seeds", "n_models", "tasks", "weights_hash", MODELS_KEY}
)


def _sealed_scores(tree: dict) -> dict:
    """``tree`` with only :data:`PRIVATE_SCORE_FIELDS` at its leaves (groups left empty dropped)."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            kept = _sealed_scores(value)
            if kept:
                out[key] = kept
        elif key in PRIVATE_SCORE_FIELDS:
            out[key] = value
    return out


def sealed_private(record: dict) -> dict:
    """What a result publishes of its private part (``record``: the track's private record with
    the seed file's SHA-256): the scorer's own fields and the ranking scores with their intervals;
    everything else is dropped (a new copy; ``record`` is not changed)."""
    out = {k: v for k, v in record.items() if k in PRIVATE_RECORD_FIELDS and k != MODELS_KEY}
    if isinstance(record.get("scores"), dict):
        out["scores"] = _sealed_scores(record["scores"])
    if isinstance(record.get(MODELS_KEY), list):  # per private model: its own fields and sealed scores
        out[MODELS_KEY] = [
            {k: v for k, v in {**m, "scores": _sealed_scores(m.get("scores") or {})}.items()
             if k in MODEL_RECORD_FIELDS or k == "scores"}
            for m in record[MODELS_KEY] if isinstance(m, dict)
        ]  # fmt: skip
    return out


def sealed_failure(sandbox: SandboxedPolicy) -> dict:
    """A failure in the private part, in fixed words: that it failed there and after how many
    public episodes (the scorer's count), with the public part's output tail. Which check it
    failed, the exception's type and anything the policy said are all the policy's to choose."""
    assert sandbox.sealed is not None
    return {
        "type": "PolicyFailure", "part": "private", "public_episodes": sandbox.sealed.public_episodes,
        "reason": f"the policy failed in the private part, after {sandbox.sealed.public_episodes} public episodes "
        "(which check it failed, and what it said or printed in the private part, are not recorded)"
        + sandbox.sealed.public_tail,
    }  # fmt: skip


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
    run: TrackRun, policy_spec: str, checkpoint: str | None, require_isolation: bool
) -> SandboxedPolicy:
    """The submitted policy in its sandbox, with the board's limits (read at call time) and the track's methods."""
    return SandboxedPolicy(policy_spec, checkpoint, timeout_s=B.CALL_TIMEOUT_S, memory_mb=B.MEMORY_LIMIT_MB,
                           require_isolation=require_isolation, methods=run.methods)  # fmt: skip


def score_track(run: TrackRun, name: str, policy_spec: str | None = None, checkpoint: str | None = None,
                builtin_name: str | None = None, private_seeds: str | Path | None = None,
                require_isolation: bool | None = None, sample: int | None = None) -> dict:  # fmt: skip
    """Score one policy (``policy_spec``, sandboxed) or builtin (``builtin_name``) on ``run``'s
    track; the result dict, with ``status`` "scored", "failed" or (with ``sample``) "sample"."""
    policy_hash, private, require_isolation = check_request(
        run, name, policy_spec, builtin_name, checkpoint, private_seeds, require_isolation
    )
    if sample is not None and private is not None:
        raise ValueError("a sample run (the canary's) does not score the private part")
    run.check(private[0] if private is not None else None)
    parts = run.parts(sample is not None)
    parts = parts if sample is None else sample_parts(parts, sample)
    policy = policy_spec or f"builtin:{builtin_name}"
    start = time.time()
    try:
        run.open()  # before the ledger counts a private scoring: a wrong private model stops here
    except BaseException:
        run.close()
        raise
    result: dict = {
        "name": name,
        **record_private_scoring(private_seeds, name, policy, run.name),
        **run.fields(),
    }
    result["track"] = run.name
    result["isolation"] = isolation_record(builtin_name)
    sandbox = None
    public_s: float | None = None  # a sandboxed policy's wall time up to the private part
    try:
        if builtin_name is not None:
            who = run.builtin_player(builtin_name)
        else:
            assert policy_spec is not None  # check_request: exactly one of the two
            sandbox = open_sandbox(run, policy_spec, checkpoint, require_isolation)
            who = run.sandbox_player(sandbox)
        played = [(part, play_part(part, who)) for part in parts]
        if private is not None:
            seal(sandbox)  # the private part: a failure from here on carries no policy text
            if sandbox is not None:  # a policy's time there is its to choose: not recorded
                public_s = time.time() - start
            hidden = [row for part in run.private_parts(private[0]) for row in play_part(part, who)]
    except POLICY_FAILURES as err:
        if sandbox is not None and sandbox.sealed is not None:  # which check failed is the policy's choice
            result.update(status="failed", failure=sealed_failure(sandbox))
        else:
            result.update(status="failed", failure=failure_record(err, sandbox))
    else:
        main = [row for part, rows in played if part.detailed for row in rows]
        if sample is not None:
            result.update(status="sample", scores=_round({"episodes": run.sample_rows(main)}))
        else:
            other = [row for part, rows in played if not part.detailed for row in rows]
            result.update(status="scored", scores=_round(run.scores(main, other)))
        if private is not None:
            result["private"] = sealed_private(
                {"seed_file_sha256": private[1], **_round(run.private_record(hidden))}
            )
    finally:
        if sandbox is not None:
            sandbox.close()
        run.close()
    result["provenance"] = {**make_provenance(run.definition(), run.model(), policy, checkpoint, policy_hash,
                                              white_box=builtin_name is not None), **run.provenance()}  # fmt: skip
    if public_s is None:
        result["diagnostics"] = {"wall_seconds": round(time.time() - start, 1), **sandbox_usage(sandbox)}
    else:
        result["diagnostics"] = {
            "wall_seconds": round(public_s, 1),
            "timed": "public part",
            **sandbox_usage(sandbox),
        }
    result["content_hash"] = content_hash(result)
    return result


def write_result(result: dict, out: str | Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True, allow_nan=True) + "\n")
    return out
