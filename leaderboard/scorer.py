"""Score a policy on the held-out tasks and write a verifiable result file.

The policy runs sandboxed (``circuit_gym.leaderboard.sandbox``) and sees observations only. The
scorer computes, per held-out task and overall, best-of-1 and best-of-5 oracle recovery
and top-1 hit rate with 95% intervals, plus three qualities beyond a number:

- reproducibility: recovery re-scored on other seeds, and its spread;
- generalisation: recovery on each held-out task separately;
- consistency: agreement (Jaccard) of the policy's top-5 head sets across episodes of a task.

The result JSON carries its provenance and a SHA-256 content hash. ``scores`` is
deterministic: scoring the same policy twice gives byte-identical ``scores``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import subprocess
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import circuit_gym
from circuit_gym.envs import HideOracleInfo
from circuit_gym.envs.planning import top_k_heads
from circuit_gym.evaluation import episode_results, recovery_summary
from circuit_gym.leaderboard import benchmark as B
from circuit_gym.leaderboard.sandbox import PolicyFailureError, SandboxedPolicy, load_factory
from circuit_gym.policy import InvalidScoresError, check_scores

BUILTIN_WHITE_BOX = {"greedy"}  # reference solvers that read the task metric, run in-process


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)


def content_hash(result: dict) -> str:
    body = {k: v for k, v in result.items() if k != "content_hash"}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def _git_commit() -> str:
    try:
        root = Path(__file__).resolve().parents[1]
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _files_hash(spec: str | None, checkpoint: str | None) -> str:
    """Hash of the policy's module file(s) and checkpoint, so a result names what was run."""
    h = hashlib.sha256()
    if spec:
        module = __import__(spec.split(":")[0], fromlist=["_"])
        path = Path(getattr(module, "__file__", "") or "")
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        for f in files:
            if f.is_file():
                h.update(f.read_bytes())
    if checkpoint:
        cp = Path(checkpoint)
        for f in sorted(cp.rglob("*")) if cp.is_dir() else [cp]:
            if f.is_file() and "tensorboard" not in f.parts:
                h.update(f.name.encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _make_env(model: str, model_path: str | None, seeds: tuple[int, ...]):
    kwargs = dict(split=B.SPLIT, pool_size=max(seeds) + 1, batch_size=B.PROMPTS_PER_EPISODE,
                  ablation=B.ABLATION, lam=B.LAM)  # fmt: skip
    if model_path:
        kwargs["model_path"] = model_path
    env_id = f"CircuitDiscovery-{'Toy' if model == 'toy' else 'GPT2'}-Multi-v0"
    return HideOracleInfo(gym.make(env_id, **kwargs))


def _episodes(env, rank, seeds) -> list[dict]:
    base = env.unwrapped
    out = []
    for task in B.HELD_OUT_TASKS:
        for seed in seeds:
            obs, _ = env.reset(options={"task": task, "batch_index": int(seed)})
            scores = check_scores(rank(obs, env), base.n_total)
            table = base.episode.table
            row = {"task": task, "seed": int(seed), "oracle_head": table.oracle_head,
                   "oracle_reward": table.oracle_reward, "top5": top_k_heads(scores, 5, base.action_mask())}  # fmt: skip
            for r in episode_results(env, scores, "submission", B.KS):
                row[f"head_k{r.k}"] = r.head
                row[f"recovery_k{r.k}"] = r.recovery if np.isfinite(r.recovery) else None
            out.append(row)
    return out


def _summary(episodes: list[dict]) -> dict:
    return {
        f"k{k}": recovery_summary(
            [float("nan") if e[f"recovery_k{k}"] is None else e[f"recovery_k{k}"] for e in episodes],
            [e[f"head_k{k}"] == e["oracle_head"] for e in episodes],
        )
        for k in B.KS
    }


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


def score(name: str, policy_spec: str | None = None, checkpoint: str | None = None, builtin: str | None = None,
          model: str = "toy", model_path: str | None = None) -> dict:  # fmt: skip
    """Score one policy; returns the result dict (with ``status`` "scored" or "failed")."""
    if (policy_spec is None) == (builtin is None):
        raise ValueError("give exactly one of policy_spec ('package.module:factory') or builtin")
    if builtin is not None and builtin not in BUILTIN_WHITE_BOX:
        raise ValueError(f"builtin must be one of {sorted(BUILTIN_WHITE_BOX)}, got {builtin!r}")
    if policy_spec is not None:
        load_factory(policy_spec)  # a clear error now for a wrong import path
    start = time.time()
    env = _make_env(model, model_path, B.EVAL_SEEDS + B.REPRO_SEEDS)
    info = env.unwrapped.model.circuit_gym_info
    provenance = {
        **B.definition(), "package_version": circuit_gym.__version__, "git_commit": _git_commit(),
        "model": info.name, "weights_hash": info.weights_hash, "policy": policy_spec or f"builtin:{builtin}",
        "checkpoint": str(checkpoint) if checkpoint else None,
        "policy_files_hash": _files_hash(policy_spec or "circuit_gym.baselines.greedy:attribution_scores", checkpoint),
        "white_box": builtin is not None,
    }  # fmt: skip
    result: dict = {"name": name, "provenance": provenance}
    sandbox = None
    try:
        if builtin == "greedy":
            from circuit_gym.baselines.greedy import attribution_scores

            def rank(obs, e):
                return attribution_scores(e)
        else:
            sandbox = SandboxedPolicy(
                policy_spec, checkpoint, timeout_s=B.CALL_TIMEOUT_S, memory_mb=B.MEMORY_LIMIT_MB
            )

            def rank(obs, e):
                return sandbox.rank_heads(obs)

        main = _episodes(env, rank, B.EVAL_SEEDS)
        repro = _episodes(env, rank, B.REPRO_SEEDS)
    except (PolicyFailureError, InvalidScoresError) as err:
        result.update(status="failed", failure={"type": type(err).__name__, "reason": str(err)})
    else:
        per_task = {t: _summary([e for e in main if e["task"] == t]) for t in B.HELD_OUT_TASKS}
        repro_rec = {
            t: _summary([e for e in repro if e["task"] == t])["k5"]["recovery_mean"] for t in B.HELD_OUT_TASKS
        }
        overall = _summary(main)
        result.update(
            status="scored",
            scores=_round(
                {
                    "overall": overall,
                    "per_task": per_task,
                    "reproducibility": {
                        "k5_recovery_other_seeds": repro_rec,
                        "k5_recovery_spread": max(
                            abs(overall["k5"]["recovery_mean"] - v) for v in repro_rec.values()
                        ),
                    },
                    "generalisation": {t: per_task[t]["k5"]["recovery_mean"] for t in B.HELD_OUT_TASKS},
                    "consistency_top5_jaccard": {
                        t: _consistency([e for e in main if e["task"] == t]) for t in B.HELD_OUT_TASKS
                    },
                    "episodes": main,
                }
            ),  # fmt: skip
        )
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
