"""Score a policy on the held-out tasks and write a verifiable result file.

The policy runs sandboxed (``circuit_gym.leaderboard.sandbox``) and sees observations only;
its module is imported only in the sandbox's child process. The scorer computes, per
held-out task and overall, best-of-1 and best-of-5 oracle recovery (a ratio of sums over
episodes, see :func:`circuit_gym.evaluation.recovery_summary`) and top-1 hit rate with 95%
intervals, plus:

- reproducibility: recovery re-scored on other seeds, and its spread;
- generalisation: recovery on each held-out task separately;
- consistency: agreement (Jaccard) of the policy's top-5 head sets across episodes of a task;
- compute: the language-model forward, partial and backward passes the solver made inside
  its rank call, per episode (:class:`PassCounter`);
- private scores, when the maintainers pass their private seed file: the same summary on
  those batch seeds, stored with the file's SHA-256 and never the seeds.

The result JSON carries its provenance and a SHA-256 content hash. ``scores`` is
deterministic: scoring the same policy twice gives byte-identical ``scores``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

from circuit_gym.circuits.preferences import areas_summary, episode_areas
from circuit_gym.envs import HideOracleInfo
from circuit_gym.evaluation import episode_results, recovery_summary
from circuit_gym.leaderboard import benchmark as B
from circuit_gym.leaderboard.isolation import IsolationUnavailableError, probe
from circuit_gym.leaderboard.provenance import content_hash, files_hash, make_provenance
from circuit_gym.leaderboard.sandbox import PolicyFailureError, SandboxedPolicy, split_spec
from circuit_gym.planning import top_k_heads
from circuit_gym.policy import InvalidScoresError, check_scores

# Reference solvers that read the task metric and run in-process: name -> the function whose
# module file names the run in ``policy_files_hash`` (provenance only).
BUILTIN_WHITE_BOX = {"greedy": "circuit_gym.baselines.greedy:attribution_scores"}
# Entry names become file names (radar charts): letters, digits, '_', '.', '-', no '..'.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


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


class PassCounter:
    """Counts the language-model passes made on ``model`` while active (a context manager).

    - ``forward``: full forward passes, one per call of the embedding module ``model.embed``;
    - ``partial``: calls of the final normalisation ``model.ln_final`` that are not the end of a
      full pass (the ablation engine restarts mid-model from a cached residual stream, through
      the bridge's blocks or its SDPA replay of them, and always ends in ``ln_final``);
    - ``backward``: backward passes through the last block (a full backward hook on it).

    A pass over a batch counts once, whatever the batch size. Hooks are installed on enter and
    removed on exit, so nothing outside the counted window is touched.
    """

    def __init__(self, model) -> None:
        self.model = model
        self.forward = self.partial = self.backward = 0
        self._pending = 0
        self._handles: list = []

    def _on_embed(self, *args) -> None:
        self.forward += 1
        self._pending += 1

    def _on_final_norm(self, *args) -> None:
        if self._pending:
            self._pending -= 1  # the end of a full pass
        else:
            self.partial += 1

    def _on_backward(self, *args) -> None:
        self.backward += 1

    def __enter__(self) -> PassCounter:
        self.forward = self.partial = self.backward = self._pending = 0
        embed, blocks = getattr(self.model, "embed", None), getattr(self.model, "blocks", None)
        final_norm = getattr(self.model, "ln_final", None)
        if embed is None or not blocks or final_norm is None:
            raise TypeError(
                f"cannot count passes of {type(self.model).__name__}: no embed / blocks / ln_final modules"
            )
        self._handles = [embed.register_forward_hook(self._on_embed), final_norm.register_forward_hook(self._on_final_norm),
                         blocks[-1].register_full_backward_hook(self._on_backward)]  # fmt: skip
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def counts(self) -> dict:
        return {"forward": self.forward, "partial": self.partial, "backward": self.backward}


def _make_env(model: str, model_path: str | None, seeds: tuple[int, ...], cache: bool = True):
    kwargs = dict(split=B.SPLIT, pool_size=max(seeds) + 1, batch_size=B.PROMPTS_PER_EPISODE,
                  ablation=B.ABLATION, lam=B.LAM, cache=cache, model=model)  # fmt: skip
    if model_path:
        kwargs["model_path"] = model_path
    env_id = B.multi_env_id(model)
    return HideOracleInfo(gym.make(env_id, **kwargs))


def episode_jobs(seeds, sample: int | None = None) -> list[tuple[str, int]]:
    """The (held-out task, seed) episodes of ``seeds`` in scoring order, task by task; with
    ``sample``, only the first ``sample`` of them (the canary's: a prefix, so a policy that keeps
    state between calls sees the same calls as in a full run)."""
    jobs = [(task, int(seed)) for task in B.HELD_OUT_TASKS for seed in seeds]
    if sample is not None and not 1 <= sample <= len(jobs):
        raise ValueError(f"sample must be between 1 and {len(jobs)} episodes, got {sample}")
    return jobs if sample is None else jobs[:sample]


def _episodes(env, rank, jobs, prepare=None, desc: str = "scoring", circuits: bool = False) -> list[dict]:
    """One row per (held-out task, seed) of ``jobs``. ``prepare(env)`` runs before the counted rank call:
    the environment's own per-episode state a white-box solver reads (not its compute).
    ``circuits``: also the CPR and CMD of the circuits the scores propose, run by the scorer
    (``circuit_gym.baselines.circuit_scoring.episode_areas``; not counted as the solver's passes)."""
    from tqdm.auto import tqdm

    base = env.unwrapped
    counter = PassCounter(base.model)
    out = []
    for task, seed in tqdm(jobs, desc=desc, unit="episode", leave=False):  # counts only, never the seeds
        obs, _ = env.reset(options={"task": task, "batch_index": int(seed)})
        if prepare is not None:
            prepare(env)
        with counter:
            raw = rank(obs, env)
        scores = check_scores(raw, base.n_total)
        table = base.episode.table
        row = {"task": task, "seed": int(seed), "oracle_head": table.oracle_head,
               "oracle_reward": table.oracle_reward, "top5": top_k_heads(scores, 5, base.action_mask()),
               "lm_passes": counter.counts()}  # fmt: skip
        for r in episode_results(env, scores, "submission", B.KS):
            row[f"head_k{r.k}"] = r.head
            row[f"reward_k{r.k}"] = r.reward
            row[f"recovery_k{r.k}"] = r.recovery if np.isfinite(r.recovery) else None
        if circuits:
            row.update(episode_areas(env, scores))
        out.append(row)
    return out


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


def _round(obj, digits: int = 10):
    """Round floats so results do not depend on the last bits of summation order."""
    if isinstance(obj, float):
        return round(obj, digits) if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _round(v, digits) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_round(v, digits) for v in obj]
    return obj


def _scores(main: list[dict], repro: list[dict]) -> dict:
    """A scored result's ``scores``: summaries of the evaluation episodes ``main``, the
    reproducibility seeds' recovery, and the episodes' rows."""
    per_task = {t: _summary([e for e in main if e["task"] == t]) for t in B.HELD_OUT_TASKS}
    repro_rec = {
        t: _summary([e for e in repro if e["task"] == t])["k5"]["recovery"] for t in B.HELD_OUT_TASKS
    }
    overall = _summary(main)
    return _round({
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
    })  # fmt: skip


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


def check_request(name: str, policy_spec: str | None, builtin: str | None, builtins: dict[str, str],
                  checkpoint: str | Path | None, private_seeds: str | Path | None, require_isolation: bool | None,
                  track: str = "") -> tuple[str, tuple[tuple[int, ...], str] | None, bool]:  # fmt: skip
    """Every check of a scoring request before anything runs (either track): the entry's name,
    exactly one of ``policy_spec`` or a builtin of ``builtins`` (name -> the function whose module
    names the run), the policy located without importing it (a wrong import path is a
    ModuleNotFoundError now), the private seed file read and isolation required where needed.
    Returns ``(policy_files_hash, private seeds or None, require_isolation)``."""
    check_name(name)
    if (policy_spec is None) == (builtin is None):
        raise ValueError("give exactly one of policy_spec ('package.module:factory') or builtin")
    if builtin is not None and builtin not in builtins:
        raise ValueError(f"builtin must be one of {sorted(builtins)}{track}, got {builtin!r}")
    if policy_spec is not None:
        split_spec(policy_spec)
    policy_hash = files_hash(policy_spec or builtins[builtin], checkpoint)
    private = read_private_seeds(private_seeds) if private_seeds is not None else None
    return policy_hash, private, isolation_required(policy_spec, private, require_isolation)


def score(name: str, policy_spec: str | None = None, checkpoint: str | None = None, builtin: str | None = None,
          model: str | None = None, model_path: str | None = None,
          private_seeds: str | Path | None = None, require_isolation: bool | None = None,
          sample: int | None = None) -> dict:  # fmt: skip
    """Score one policy; returns the result dict (with ``status`` "scored" or "failed").

    ``private_seeds``: the maintainers' private seed file (see :func:`read_private_seeds`);
    the policy is then also scored on those batch seeds of the test-split pool, and the
    result stores those scores with the file's SHA-256 (never the seeds or their episodes).

    The result's ``isolation`` records what the policy's sandbox enforced
    (:mod:`circuit_gym.leaderboard.isolation`). ``require_isolation`` (default: on with
    ``private_seeds``) raises ``IsolationUnavailableError`` before any scoring where this
    machine cannot isolate a submitted policy completely; otherwise an incomplete isolation is
    recorded, for trusted policies only.

    ``sample``: the canary's run (``leaderboard/canary.py``): only the first ``sample`` evaluation
    episodes, their rows under ``scores["episodes"]``, no summaries, no other seeds; its
    ``status`` is "sample", which the board refuses.
    """
    policy_hash, private, require_isolation = check_request(
        name, policy_spec, builtin, BUILTIN_WHITE_BOX, checkpoint, private_seeds, require_isolation
    )
    jobs = episode_jobs(B.EVAL_SEEDS, sample)
    if sample is not None and private is not None:
        raise ValueError("a sample run (the canary's) does not score private seeds")
    model = model or B.MODEL
    start = time.time()
    env = _make_env(model, model_path, B.EVAL_SEEDS + B.REPRO_SEEDS)
    provenance = make_provenance(B.definition(), env.unwrapped.model, policy_spec or f"builtin:{builtin}",
                                 checkpoint, policy_hash, white_box=builtin is not None)  # fmt: skip
    result: dict = {"name": name, "provenance": provenance, "isolation": _in_process_isolation()}
    sandbox = None
    try:
        if builtin == "greedy":
            from circuit_gym.baselines.greedy import attribution_scores, forget_reference_estimates

            # The first episode pays for the reference batch's estimate, the rest reuse it:
            # the count is that cost amortised over the scored episodes, whatever ran before.
            forget_reference_estimates()

            def rank(obs, e):
                return attribution_scores(e)

            def prepare(e):
                # The episode's live scorer (clean and counterfactual activations) is the
                # environment's state, built before the count starts: only the solver's own
                # passes are counted, whether or not an earlier run already built it.
                return e.unwrapped.episode.scorer

        else:
            result["isolation"] = probe().as_dict()
            sandbox = SandboxedPolicy(policy_spec, checkpoint, timeout_s=B.CALL_TIMEOUT_S,
                                      memory_mb=B.MEMORY_LIMIT_MB, require_isolation=require_isolation)  # fmt: skip
            prepare = None

            def rank(obs, e):
                return sandbox.rank_heads(obs)

        main = _episodes(env, rank, jobs, prepare, "evaluation seeds", circuits=True)
        if sample is None:
            repro = _episodes(env, rank, episode_jobs(B.REPRO_SEEDS), prepare, "reproducibility seeds")
        if private is not None:
            # No disk cache: the oracle tables of private batches never reach a file the
            # policy's process could read.
            private_env = _make_env(model, model_path, private[0], cache=False)
            hidden = _episodes(
                private_env, rank, episode_jobs(private[0]), prepare, "private seeds", circuits=True
            )
    except (PolicyFailureError, InvalidScoresError) as err:
        result.update(status="failed", failure={"type": type(err).__name__, "reason": str(err)})
    else:
        if sample is not None:
            result.update(status="sample", scores=_round({"episodes": main}))
        else:
            result.update(status="scored", scores=_scores(main, repro))
        if private is not None:
            result["private"] = {
                "seed_file_sha256": private[1],
                "n_seeds": len(private[0]),
                "scores": _round({
                    "overall": _summary(hidden),
                    "per_task": {t: _summary([e for e in hidden if e["task"] == t]) for t in B.HELD_OUT_TASKS},
                    "circuits": _circuits(hidden),
                }),
            }  # fmt: skip
    finally:
        if sandbox is not None:
            sandbox.close()
    result["diagnostics"] = {"wall_seconds": round(time.time() - start, 1)}
    result["content_hash"] = content_hash(result)
    return result


def write_result(result: dict, out: str | Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True, allow_nan=True) + "\n")
    return out
