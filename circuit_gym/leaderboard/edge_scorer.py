"""Score an entry on the edge track: circuits as the field counts them (MIB's edges).

One scorer for every row of ``circuit_gym/leaderboard/edge_benchmark.py``. Every episode is one
prompt batch in the edge-building environment (``circuit_gym.envs.edge_building``: the top-K
|EAP-IG| edges as candidates, a pass budget), in two parts:

- **transfer**: each held-out task on each public held-out zoo member (test split), and, when the
  maintainers pass their private model and seed file, the held-out tasks it performs on it.
  Scores: the ranking's edge CPR (signed) and CMD (absolute) at MIB's sizes
  (``circuit_gym.edges.curve.edge_batch_scores``), and the faithfulness and size of the proposed
  circuit;
- **planted**: each kind of the generator's planted models, on the public seeds and, with the seed
  file, on secret models drawn from its first seed (``planted_scorer.private_model_seeds``, written
  to a temporary cache, never the disk's). Scores against the generator's edge truth
  (``GroundTruth.edges``): precision and recall of the proposed circuit, AUC of the ranking
  (``circuit_gym.models.planted.recovery``).

**What an entry submits** (the circuit track's interface, on edges): a policy (``package.module:
factory``, run in the sealed sandbox of ``circuit_gym/leaderboard/sandbox.py``) answering
``act(observation, action_mask)``, a candidate row to add or ``K`` = STOP, on the environment's
``[K, 13]`` observation, and at the end ``rank_heads(observation)`` (the sandbox's one ranking
call; here it ranks candidate *edges*): one finite score per candidate row. Its circuit is the
edges it added; its ranking of every edge (:func:`policy_ranking`): the added edges in order, then
the other candidates reordered by its scores among the places EAP-IG's signed order gives them,
every other edge where EAP-IG puts it (the policy never sees those). Its passes are the
environment's count (``info["forward_passes"]``: the setup's passes and one per added edge), never
the policy's word.

**References** (``builtin``): every ranking of the registry ``circuit_gym.edges.references.
EDGE_REFERENCES`` (read at call time: a reference added there joins the track), white-box, in the
scorer's process, on the same batch's patcher; its circuit is the top ``budget`` edges of its
ranking, its passes what the ranking records (``lm_passes``).

``sample``: the canary's run (first public episodes, their rows, ``status`` "sample").

    circuit-gym leaderboard score --track edges --builtin eap_ig --out leaderboard/results/edges/eap_ig.json
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym import benchmark as B
from circuit_gym.edges.curve import edge_batch_scores
from circuit_gym.edges.ranking import EdgeRanking
from circuit_gym.envs.edge_building import EdgeBuildingEnv, EdgeEpisode
from circuit_gym.leaderboard.edge_benchmark import EdgeBenchmark, edge_benchmark
from circuit_gym.leaderboard.probing import record_private_scoring
from circuit_gym.leaderboard.provenance import content_hash, files_hash, make_provenance
from circuit_gym.leaderboard.sandbox import SandboxedPolicy, failure_record, sandbox_usage, seal
from circuit_gym.leaderboard.scoring import (
    POLICY_FAILURES,
    _round,
    check_entry,
    isolation_record,
    isolation_required,
    play_episodes,
    read_private_seeds,
)
from circuit_gym.models.planted.recovery import precision_recall, ranking_auc
from circuit_gym.policy import check_action, check_scores
from circuit_gym.stats import mean_ci95
from circuit_gym.track_envs import PLANTED_BATCH_INDEX, PLANTED_BATCH_SIZE, PLANTED_SPLIT

EDGE_ENV_ID = "CircuitDiscovery-Toy-Multi-Edges-v0"  # any model and tasks given as arguments
PLANTED_EDGE_ENV_ID = "CircuitDiscovery-Planted-Induction-Edges-v0"  # the kind given as its task
PRIVATE = "private"  # the private model's name in results (its weights are named by their hash)
TRANSFER_METRICS = ("cpr", "cmd", "faithfulness", "circuit_size", "lm_passes")
PLANTED_METRICS = ("precision", "recall", "auc", "faithfulness", "circuit_size", "lm_passes")
METHODS = ("rank_heads", "act")  # what a submitted policy must have (the sandbox's two calls)


def reference_names() -> tuple[str, ...]:
    """The track's builtins: the edge references' registry as it is now."""
    from circuit_gym.edges.references import EDGE_REFERENCES

    return tuple(EDGE_REFERENCES)


@dataclass(frozen=True)
class Played:
    """One episode as the scorer scores it: the ranking of every edge, the proposed circuit (edge
    indices, in the order chosen) and the LM passes it cost."""

    ranking: EdgeRanking
    circuit: tuple[int, ...]
    passes: int
    state: EdgeEpisode


Play = Callable[[EdgeBuildingEnv, str, int], Played]  # (environment, task, batch index) -> episode


def policy_ranking(env: EdgeBuildingEnv, scores: np.ndarray) -> EdgeRanking:
    """A played episode's ranking of every edge: the added edges first, first added highest; the
    other candidates ordered by the policy's ``scores`` (one per candidate row, ties to the lower
    row) in the places their signed EAP-IG scores hold; every other edge at its EAP-IG score."""
    eap_ig = np.asarray(env.state.eap_ig.scores, dtype=np.float64)
    ranked = eap_ig.copy()
    candidates = env.state.candidates
    added = env.order
    rest = np.array(
        [row for row, edge in enumerate(candidates) if int(edge) not in set(added)], dtype=np.int64
    )
    if len(rest):
        places = np.sort(eap_ig[candidates[rest]])[::-1]
        by_policy = rest[np.lexsort((rest, -np.asarray(scores, dtype=np.float64)[rest]))]
        ranked[candidates[by_policy]] = places
    top = float(np.abs(eap_ig).max()) + 1.0
    for place, edge in enumerate(added):
        ranked[edge] = top + (len(added) - place)
    return EdgeRanking.from_array(ranked, "edge_policy", env.graph)


def builtin_play(name: str, bench: EdgeBenchmark) -> Play:
    """A reference of the registry on the episode's patcher; its circuit the top ``budget`` edges."""
    from circuit_gym.edges.references import EDGE_REFERENCES, lm_passes

    reference = EDGE_REFERENCES[name]

    def play(env: EdgeBuildingEnv, task: str, index: int) -> Played:
        env.reset(options={"task": task, "batch_index": index})
        ranking = reference(env.state.patcher)
        circuit = tuple(int(e) for e in ranking.order()[: bench.budget])
        return Played(ranking, circuit, lm_passes(ranking), env.state)

    return play


def sandbox_play(sandbox: SandboxedPolicy) -> Play:
    """The sandboxed policy plays the episode; every action and its final scores are validated."""

    def play(env: EdgeBuildingEnv, task: str, index: int) -> Played:
        obs, info = env.reset(options={"task": task, "batch_index": index})
        done = False
        while not done:
            action = check_action(sandbox.act(obs, info["action_mask"]), info["action_mask"])
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        scores = check_scores(sandbox.rank_heads(obs), env.k)
        return Played(policy_ranking(env, scores), tuple(env.order), int(info["forward_passes"]), env.state)

    return play


def _common(played: Played) -> dict:
    graph = played.state.graph
    return {"faithfulness": played.state.faithfulness(frozenset(played.circuit)), "circuit_size": len(played.circuit),
            "lm_passes": played.passes, "circuit": [graph.names[e] for e in played.circuit]}  # fmt: skip


def transfer_row(model: str, task: str, seed: int, played: Played) -> dict:
    """One transfer episode: edge CPR and CMD of the ranking, the proposed circuit's f and size."""
    scores = edge_batch_scores(played.state.patcher, played.ranking)
    return {"part": "transfer", "model": model, "task": task, "seed": int(seed), "cpr": scores["cpr"],
            "cmd": scores["cmd"], **_common(played)}  # fmt: skip


def planted_row(kind: str, seed: int, truth: frozenset[str], played: Played) -> dict:
    """One planted episode: precision / recall of the circuit and AUC of the ranking against the edge truth."""
    names = played.state.graph.names
    proposed = [names[e] for e in played.circuit]
    precision, recall = precision_recall(proposed, truth)
    auc = ranking_auc([names[e] for e in played.ranking.order()], truth)
    return {"part": "planted", "kind": kind, "seed": int(seed), "precision": precision, "recall": recall,
            "auc": auc, **_common(played)}  # fmt: skip


def summary(rows: list[dict], metrics: tuple[str, ...]) -> dict:
    """Episodes, and the mean and 95% t-interval of each metric."""
    out: dict = {"episodes": len(rows)}
    for m in metrics:
        out[m], out[f"{m}_ci95"] = mean_ci95([float(r[m]) for r in rows])
    return out


def transfer_summary(rows: list[dict]) -> dict:
    """Over all transfer episodes, per model and per task."""
    if not rows:
        return {}
    return {"all": summary(rows, TRANSFER_METRICS),
            "per_model": {m: summary([r for r in rows if r["model"] == m], TRANSFER_METRICS)
                          for m in dict.fromkeys(r["model"] for r in rows)},
            "per_task": {t: summary([r for r in rows if r["task"] == t], TRANSFER_METRICS)
                         for t in dict.fromkeys(r["task"] for r in rows)}}  # fmt: skip


def planted_summary(rows: list[dict]) -> dict:
    """Per kind and over all kinds."""
    kinds = dict.fromkeys(r["kind"] for r in rows)
    out = {k: summary([r for r in rows if r["kind"] == k], PLANTED_METRICS) for k in kinds}
    return {**out, "all": summary(rows, PLANTED_METRICS)} if rows else {}


# ------------------------------------------------------------------ environments
def transfer_env(bench: EdgeBenchmark, model: str, tasks: tuple[str, ...], pool_size: int,
                 model_path: str | None = None, cache: bool = True) -> gym.Env:  # fmt: skip
    """The edge-building environment of ``model``'s ``tasks`` (test split, the row's settings)."""
    kwargs = dict(model=model, tasks=tasks, split=B.SPLIT, pool_size=int(pool_size), batch_size=bench.batch_size,
                  ablation=bench.ablation, candidates=bench.candidates, budget=bench.budget, alpha=bench.alpha,
                  cache=cache)  # fmt: skip
    if model_path:
        kwargs["model_path"] = model_path
    return gym.make(EDGE_ENV_ID, **kwargs)


def planted_env(bench: EdgeBenchmark, kind: str, seeds: tuple[int, ...]) -> gym.Env:
    """The planted edge-building environment of ``kind`` over the models of ``seeds``."""
    from circuit_gym.tasks.planted import task_name

    return gym.make(PLANTED_EDGE_ENV_ID, tasks=(task_name(kind),), seeds=tuple(seeds), version=bench.planted_generator,
                    split=PLANTED_SPLIT, pool_size=PLANTED_BATCH_INDEX + 1, batch_size=PLANTED_BATCH_SIZE,
                    candidates=bench.candidates, budget=bench.budget, alpha=bench.alpha)  # fmt: skip


def _base(env: gym.Env) -> EdgeBuildingEnv:
    base = env.unwrapped
    if not isinstance(base, EdgeBuildingEnv):
        raise TypeError(f"expected an edge-building environment, got {type(base).__name__}")
    return base


# ------------------------------------------------------------------ the parts
def _transfer_rows(bench: EdgeBenchmark, play: Play, model: str, tasks: tuple[str, ...], seeds: tuple[int, ...],
                   desc: str, model_path: str | None = None, cache: bool = True,
                   weights: dict | None = None) -> list[dict]:  # fmt: skip
    env = transfer_env(bench, model, tasks, max(seeds) + 1, model_path, cache)
    base = _base(env)
    if weights is not None:
        weights[model] = base.model.circuit_gym_info.weights_hash
    try:
        jobs = [(t, int(s)) for t in tasks for s in seeds]
        return play_episodes(
            lambda t, s, detailed=True: transfer_row(model, t, s, play(base, t, s)), jobs, desc
        )
    finally:
        env.close()


def _planted_rows(bench: EdgeBenchmark, play: Play, jobs: list[tuple[str, int]], desc: str,
                  weights: dict | None = None) -> list[dict]:  # fmt: skip
    """The episodes ``jobs`` ((kind, seed), kind by kind), one environment per kind."""
    from circuit_gym.models.planted.generator import truth_of
    from circuit_gym.tasks.planted import task_name

    rows = []
    for kind in dict.fromkeys(k for k, _ in jobs):
        seeds = tuple(s for k, s in jobs if k == kind)
        env = planted_env(bench, kind, seeds)

        def one(kind_: str, seed: int, detailed: bool = True, env=env) -> dict:
            inner = _base(env.unwrapped.inner_for(seed))
            if weights is not None:
                weights[seed] = inner.model.circuit_gym_info.weights_hash
            truth = truth_of(seed, bench.planted_generator).edges(kind_)
            return planted_row(kind_, seed, truth, play(inner, task_name(kind_), PLANTED_BATCH_INDEX))

        try:
            rows += play_episodes(one, [(kind, int(s)) for s in seeds], f"{desc} ({kind})")
        finally:
            env.close()
    return rows


def _public_jobs(bench: EdgeBenchmark) -> list[tuple[str, ...]]:
    """The public episodes in scoring order: transfer (model, task, seed), then planted (kind, seed)."""
    transfer = [
        ("transfer", m, t, s) for m in bench.held_out_models for t in bench.tasks_on(m) for s in bench.seeds
    ]
    return transfer + [("planted", k, s) for k in bench.kinds for s in bench.planted_public_seeds]


def _check(name: str, bench: EdgeBenchmark, policy_spec: str | None, builtin: str | None, sample: int | None,
           private_model, private_seeds) -> None:  # fmt: skip
    check_entry(name, bench.track, policy_spec, builtin, reference_names())
    if private_model is not None and private_seeds is None:
        raise ValueError("a private model is scored on private seeds: give private_seeds too")
    if sample is not None:
        if private_seeds is not None:
            raise ValueError("a sample run (the canary's) does not score the private part")
        if not 1 <= sample <= bench.public_episodes():
            raise ValueError(f"sample must be between 1 and {bench.public_episodes()} episodes, got {sample}")


def score_edges(name: str, track: str, policy_spec: str | None = None, checkpoint: str | None = None,
                builtin: str | None = None, private_seeds: str | Path | None = None,
                private_model: str | Path | None = None, require_isolation: bool | None = None,
                sample: int | None = None) -> dict:  # fmt: skip
    """Score one policy (``policy_spec``, sandboxed) or reference (``builtin``) on the edge track
    ``track``; the result dict (``status`` "scored", "failed" or, with ``sample``, "sample").

    ``private_seeds``: the maintainers' seed file (secret planted models; with ``private_model``,
    the private zoo model's batches too)."""
    bench = edge_benchmark(track)
    _check(name, bench, policy_spec, builtin, sample, private_model, private_seeds)
    policy = policy_spec or f"builtin:{builtin}"
    policy_hash = files_hash(policy_spec or "circuit_gym.edges.references:EDGE_REFERENCES", checkpoint)
    private = read_private_seeds(private_seeds) if private_seeds is not None else None
    require_isolation = isolation_required(policy_spec, private, require_isolation)
    served = None
    if private_model is not None:
        from circuit_gym.envs.pool import shared_model
        from circuit_gym.leaderboard.transfer_scorer import check_card_weights, check_private_model

        # the private model of the edge row's board version (its zoo's shape, its held-out tasks)
        private_dir, served = check_private_model(private_model, B.transfer_benchmark(bench.version))
        # its card (the inclusion gate that chose the served tasks) must be these weights'
        check_card_weights(private_dir, shared_model(PRIVATE, str(private_dir)).circuit_gym_info.weights_hash)
        if len(private[0]) < bench.private_seeds_used:
            raise ValueError(
                f"private seed file {private_seeds} holds fewer than {bench.private_seeds_used} seeds"
            )
    jobs = _public_jobs(bench)[:sample] if sample is not None else _public_jobs(bench)
    start = time.time()
    result: dict = {"name": name, "track": bench.track, **record_private_scoring(private_seeds, name, policy, bench.track),
                    "isolation": isolation_record(builtin)}  # fmt: skip
    weights: dict = {}
    planted_weights: dict = {}
    sandbox = None
    try:
        if builtin is not None:
            play = builtin_play(builtin, bench)
        else:
            sandbox = SandboxedPolicy(policy_spec, checkpoint, timeout_s=B.CALL_TIMEOUT_S, memory_mb=B.MEMORY_LIMIT_MB,
                                      require_isolation=require_isolation, methods=METHODS)  # fmt: skip
            play = sandbox_play(sandbox)
        public = []
        for model in bench.held_out_models:
            tasks = tuple(dict.fromkeys(j[2] for j in jobs if j[0] == "transfer" and j[1] == model))
            if tasks:
                seeds = tuple(sorted({j[3] for j in jobs if j[0] == "transfer" and j[1] == model}))
                public += _transfer_rows(
                    bench, play, model, tasks, seeds, f"{bench.track}: {model}", weights=weights
                )
        planted_jobs = [(j[1], int(j[2])) for j in jobs if j[0] == "planted"]
        public += _planted_rows(bench, play, planted_jobs, f"{bench.track}: planted", planted_weights)
        if private is not None:
            seal(sandbox)  # the secret part: a failure from here on carries no policy text
            hidden = _private_part(bench, play, private[0], private_model, served)
    except POLICY_FAILURES as err:
        result.update(status="failed", failure=failure_record(err, sandbox))
    else:
        if sample is not None:
            result.update(status="sample", scores=_round({"episodes": public}))
        else:
            transfer = [r for r in public if r["part"] == "transfer"]
            planted = [r for r in public if r["part"] == "planted"]
            result.update(status="scored", scores=_round({"transfer": transfer_summary(transfer),
                                                          "planted": planted_summary(planted), "episodes": public}))  # fmt: skip
        if private is not None:
            result["private"] = {"seed_file_sha256": private[1], **_round(hidden)}
    finally:
        if sandbox is not None:
            sandbox.close()
    model_info = SimpleNamespace(circuit_gym_info=SimpleNamespace(name="zoo+planted", weights_hash=None))
    result["provenance"] = {**make_provenance(bench.definition(), model_info, policy, checkpoint, policy_hash,
                                              white_box=builtin is not None),
                            "weights_hashes": weights, "planted_weights_hash": _planted_hash(planted_weights)}  # fmt: skip
    result["diagnostics"] = {"wall_seconds": round(time.time() - start, 1), **sandbox_usage(sandbox)}
    result["content_hash"] = content_hash(result)
    return result


def _planted_hash(weights: dict[int, str]) -> str | None:
    import hashlib

    if not weights:
        return None
    return hashlib.sha256("\n".join(f"{s}:{weights[s]}" for s in sorted(weights)).encode()).hexdigest()


def _private_part(bench: EdgeBenchmark, play: Play, file_seeds: tuple[int, ...], private_model,
                  served: tuple[str, ...] | None) -> dict:  # fmt: skip
    """The secret planted models (a temporary cache) and, when given, the private model's held-out
    tasks (no disk cache): their summaries and what was played, never a seed."""
    from circuit_gym.leaderboard.planted_scorer import _private_cache, private_model_seeds

    out: dict = {}
    seeds = private_model_seeds(file_seeds)[: bench.planted_private_models]
    with _private_cache():
        jobs = [(k, int(s)) for k in bench.kinds for s in seeds]
        planted = _planted_rows(bench, play, jobs, f"{bench.track}: secret planted models")
    out["n_models"] = len(seeds)
    out["scores"] = {"planted": planted_summary(planted)}
    if private_model is not None:
        weights: dict = {}
        batches = tuple(file_seeds[: bench.private_seeds_used])
        rows = _transfer_rows(bench, play, PRIVATE, served, batches, f"{bench.track}: private model",
                              model_path=str(private_model), cache=False, weights=weights)  # fmt: skip
        out.update(weights_hash=weights[PRIVATE], n_seeds=len(batches), tasks=list(served))
        out["scores"]["transfer"] = transfer_summary(rows)
    return out


def headline(result: dict) -> list[str]:
    """A scored edge result, for the terminal."""
    if result["status"] != "scored":
        return [f"failed: {result['failure']['type']}: {result['failure']['reason']}"]
    t, p = result["scores"]["transfer"]["all"], result["scores"]["planted"]["all"]
    lines = [f"held-out tasks, held-out models: edge CPR {t['cpr']:.3f}, CMD {t['cmd']:.3f}, {t['lm_passes']:.0f} passes",
             f"planted, public seeds: precision {p['precision']:.2f}, recall {p['recall']:.2f}, AUC {p['auc']:.3f}"]  # fmt: skip
    private = (result.get("private") or {}).get("scores") or {}
    if "planted" in private:
        s = private["planted"]["all"]
        lines.append(
            f"planted, secret models: precision {s['precision']:.2f}, recall {s['recall']:.2f}, AUC {s['auc']:.3f}"
        )
    if "transfer" in private:
        lines.append(f"private model: edge CPR {private['transfer']['all']['cpr']:.3f}")
    return lines
