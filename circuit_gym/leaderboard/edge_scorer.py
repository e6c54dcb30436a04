"""Score an entry on the edge track: circuits as the field counts them (MIB's edges).

One scorer for every row of ``circuit_gym/leaderboard/edge_benchmark.py``. Every episode is one
prompt batch in the edge-building environment (``circuit_gym.envs.edge_building``: the top-K
|EAP-IG| edges as candidates, a pass budget), in two parts:

- **transfer**: each held-out task on each public held-out zoo member (test split), and, when the
  maintainers pass their private model and seed file, the held-out tasks it performs on it (where
  the board version ranks on several private models, v8's two: each on the tasks its card gates, at
  its own seed file's first batches; the record keeps the summary over them all and one per model,
  ``circuit_gym/leaderboard/private_models.py``).
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
call; here it ranks candidate *edges*): one finite score per candidate row. Its passes are the
environment's count (``info["forward_passes"]``: the setup's passes and one per added edge), never
the policy's word.

**Edge protocol 2** (issue 57; ``edge_benchmark.EDGE_PROTOCOL``). The entry's ranking is
:func:`circuit_gym.edges.entry_ranking.entry_rankings`: its added edges, its other candidates by its
own signed scores (CPR) or their absolute values (CMD), ties and every other edge in one fixed random
order per episode (:func:`episode_key`), the same for every entry; no method's order fills in. A
reference (``builtin``: the registry ``circuit_gym.edges.references.CANDIDATE_REFERENCES``, read at
call time, white-box, in the scorer's process, on the same batch's patcher) is scored the same way:
its scores of the candidate rows, its top ``budget`` candidates as its circuit, its passes what its
ranking records (``lm_passes``). Transfer rows rank on ``cpr_log`` / ``cmd_log``
(``circuit_gym/edges/small_circuits.py``: MIB's sizes up to 5% and up to K edges, on a log axis),
with ``f`` of each budgeted circuit; MIB's linear ``cpr`` / ``cmd`` stay as secondary columns.
Planted rows add ``auc_candidates`` (:func:`candidate_auc`: the AUC of the entry's order of its
candidates, which the board shows: over every edge the AUC mostly reads which edges are candidates)
and ``truth_in_candidates``. ``circuit_gym.leaderboard.edge_tables.paired_table`` gives adjacent
entries' paired differences (the board's edge section shows them beside each entry); ``paired
--versus A:B --out F`` adds named pairs and writes every column's report.

``sample``: the canary's run (first public episodes, their rows, ``status`` "sample").

    python -m circuit_gym.leaderboard.edge_scorer score --track v8-edges --builtin eap_ig \
        --out leaderboard/results/v8/edges/eap_ig.json
    python -m circuit_gym.leaderboard.edge_scorer paired leaderboard/results/v8/edges/*.json \
        [--metric auc_candidates --part planted] [--versus acdc_eap_ig:eap_ig] [--out paired.json]
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym import benchmark as B
from circuit_gym.circuits.area import cmd, cpr
from circuit_gym.circuits.curve import MIB_FRACTIONS
from circuit_gym.edges.curve import edge_faithfulness_curves
from circuit_gym.edges.entry_ranking import entry_order, entry_rankings, fixed_order
from circuit_gym.edges.ranking import EdgeRanking
from circuit_gym.edges.small_circuits import budgeted, cmd_log, cpr_log, log_axis_fractions
from circuit_gym.envs.edge_building import EdgeBuildingEnv, EdgeEpisode
from circuit_gym.leaderboard.edge_benchmark import MIN_PRIVATE_EPISODES, EdgeBenchmark, edge_benchmark
from circuit_gym.leaderboard.edge_tables import paired_report, paired_table
from circuit_gym.leaderboard.planted_scorer import PrivateCache, private_model_seeds, weights_hash
from circuit_gym.leaderboard.private_models import (
    MODELS_KEY,
    PrivateModelArg,
    distinct_weights,
    of_run,
)
from circuit_gym.leaderboard.sandbox import SandboxedPolicy
from circuit_gym.leaderboard.scoring import Part, PlayOne, TrackRun, read_private_seeds, score_track
from circuit_gym.models.planted.recovery import precision_recall, ranking_auc
from circuit_gym.policy import check_action, check_scores
from circuit_gym.stats import mean_ci95
from circuit_gym.track_envs import PLANTED_BATCH_INDEX, PLANTED_BATCH_SIZE, PLANTED_SPLIT

# The newest ID of each family (an older one makes gymnasium warn "out of date" in every scoring
# log); every argument that differs between versions is given below, so the ID's defaults do not.
EDGE_ENV_ID = "CircuitDiscovery-Toy-Multi-Edges-v0"  # any model and tasks given as arguments
PLANTED_EDGE_ENV_ID = "CircuitDiscovery-Planted-Induction-Edges-v1"  # the kind given as its task
PRIVATE = "private"  # the private model's name in results (its weights are named by their hash)
# the log-axis pair ranks, MIB's linear pair stays as secondary columns
TRANSFER_METRICS = ("cpr_log", "cmd_log", "cpr", "cmd", "faithfulness", "circuit_size", "lm_passes")
PLANTED_METRICS = ("precision", "recall", "auc", "faithfulness", "circuit_size", "lm_passes", "auc_candidates",
                   "truth_in_candidates")  # fmt: skip
METHODS = ("rank_heads", "act")  # what a submitted policy must have (the sandbox's two calls)


def reference_names() -> tuple[str, ...]:
    """The track's builtins: the registry of references that score the candidates, as it is now."""
    from circuit_gym.edges.references import CANDIDATE_REFERENCES

    return tuple(CANDIDATE_REFERENCES)


@dataclass(frozen=True)
class Played:
    """One episode as the scorer scores it: the ranking of every edge, the proposed circuit (edge
    indices, in the order chosen) and the LM passes it cost."""

    ranking: EdgeRanking
    circuit: tuple[int, ...]
    passes: int
    state: EdgeEpisode
    absolute: EdgeRanking  # the entry's ranking by absolute score (for CMD)


Play = Callable[[EdgeBuildingEnv, str, int], Played]  # (environment, task, batch index) -> episode


def episode_key(env: EdgeBuildingEnv, task: str, index: int) -> str:
    """What seeds the fixed order: the model's weights, the task and the batch (the same
    for every entry of the episode)."""
    return f"{env.model.circuit_gym_info.weights_hash}/{task}/{int(index)}"


def entry_played(env: EdgeBuildingEnv, task: str, index: int, added: list[int], scores: np.ndarray,
                 passes: int, method: str = "entry") -> Played:  # fmt: skip
    """An episode: the entry's rankings from its candidate ``scores`` and ``added`` edges."""
    tie = fixed_order(env.graph, episode_key(env, task, index))
    signed, absolute = entry_rankings(env.graph, env.state.candidates, added, scores, tie, method)
    return Played(signed, tuple(int(e) for e in added), int(passes), env.state, absolute)


def builtin_play(name: str, bench: EdgeBenchmark) -> Play:
    """A reference of the registry on the episode's patcher: its scores of the candidates rank them,
    its circuit their top ``budget``."""
    from circuit_gym.edges.references import CANDIDATE_REFERENCES, lm_passes

    reference = CANDIDATE_REFERENCES[name]

    def play(env: EdgeBuildingEnv, task: str, index: int) -> Played:
        env.reset(options={"task": task, "batch_index": index})
        candidates = env.state.candidates
        ranking = reference(env.state.patcher, candidates.copy())
        scores = np.asarray(ranking.scores, dtype=np.float64)[candidates]
        tie = fixed_order(env.graph, episode_key(env, task, index))
        top = entry_order(env.graph.n_edges, candidates, [], scores, tie)[: bench.budget].tolist()
        return entry_played(env, task, index, top, scores, lm_passes(ranking), ranking.method)

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
        return entry_played(
            env, task, index, list(env.order), np.asarray(scores), int(info["forward_passes"])
        )

    return play


def _common(played: Played) -> dict:
    graph = played.state.graph
    return {"faithfulness": played.state.faithfulness(frozenset(played.circuit)), "circuit_size": len(played.circuit),
            "lm_passes": played.passes, "circuit": [graph.names[e] for e in played.circuit]}  # fmt: skip


def transfer_row(model: str, task: str, seed: int, played: Played) -> dict:
    """One transfer episode: ``cpr_log`` / ``cmd_log`` on the log axis up to the candidates (the
    ranking metric), ``f`` of each budgeted circuit, MIB's linear ``cpr`` / ``cmd``; one stacked call
    runs every circuit of the signed and the absolute curve."""
    state = played.state
    signed, absolute = edge_faithfulness_curves(state.patcher, [(played.ranking, False), (played.absolute, True)],
                                                MIB_FRACTIONS)  # fmt: skip
    axis = log_axis_fractions(state.graph.n_edges, len(state.candidates))
    return {"part": "transfer", "model": model, "task": task, "seed": int(seed),
            "cpr_log": cpr_log(signed, axis), "cmd_log": cmd_log(absolute, axis), "cpr": cpr(signed),
            "cmd": cmd(absolute), "budgeted": budgeted(signed, axis), **_common(played)}  # fmt: skip


def planted_row(kind: str, seed: int, truth: frozenset[str], played: Played) -> dict:
    """One planted episode: precision / recall of the circuit and AUC of the ranking against the edge
    truth, over every edge and over the candidates (:func:`candidate_auc`)."""
    names = played.state.graph.names
    proposed = [names[e] for e in played.circuit]
    precision, recall = precision_recall(proposed, truth)
    auc = ranking_auc([names[e] for e in played.ranking.order()], truth)
    row = {"part": "planted", "kind": kind, "seed": int(seed), "precision": precision, "recall": recall,
           "auc": auc, **_common(played)}  # fmt: skip
    return {**row, **candidate_auc(played, truth)}


def candidate_auc(played: Played, truth: frozenset[str]) -> dict:
    """The AUC of the entry's order of its candidates against the truth edges among
    them (``auc_candidates``; NaN when the candidates hold no truth edge or nothing else), and the
    share of the truth the candidates hold (``truth_in_candidates``, the same for every entry).
    ``auc`` over every edge mostly measures which edges are candidates (the top K by |EAP-IG|,
    above the fixed order): the random entry's is ~0.94 (docs/circuits.md)."""
    names = played.state.graph.names
    offered = {names[int(e)] for e in played.state.candidates}
    order = [names[e] for e in played.ranking.order() if names[e] in offered]
    inside = truth & offered
    auc = ranking_auc(order, inside) if 0 < len(inside) < len(order) else float("nan")
    return {"auc_candidates": auc, "truth_in_candidates": len(inside) / len(truth) if truth else float("nan")}


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


def transfer_jobs(bench: EdgeBenchmark) -> dict[str, tuple[tuple[str, int], ...]]:
    """Per public held-out model, its transfer episodes in scoring order: (task, seed) for every task
    its card's inclusion gate admits, the row's seeds."""
    return {
        m: tuple((t, int(s)) for t in bench.tasks_on(m) for s in bench.seeds) for m in bench.held_out_models
    }


class EdgeRun(TrackRun):
    """A run on the edge track ``track``: one part per public held-out model (its transfer
    episodes) and per planted kind, each on its own environment; with the seed file, the secret
    planted models (a temporary cache) and the private model."""

    methods = METHODS
    builtin_spec = "circuit_gym.edges.references:CANDIDATE_REFERENCES"

    def __init__(self, track: str, private_model: PrivateModelArg = None,
                 private_seeds: str | Path | None = None) -> None:  # fmt: skip
        self.bench, self.name = edge_benchmark(track), track
        if private_model is not None and private_seeds is None and isinstance(private_model, str | Path):
            raise ValueError("a private model is scored on private seeds: give private_seeds too")
        wanted = B.transfer_benchmark(self.bench.transfer_version).private_models
        self.private, self.seed_file = of_run(private_model, private_seeds, wanted, track)
        # after the check: per private model, its directory and served tasks, its seed file's SHA-256, its batches
        self.checked: list[tuple[Path, tuple[str, ...]]] = []
        self.seed_shas: list[str] = []
        self.model_batches: list[tuple[int, ...]] = []
        self.weights: dict[str, str] = {}  # the public held-out models' weights hashes, as built
        self.planted_weights: dict[int, str] = {}
        # per private model (in the order given): its weights hash, as built
        self.private_weights: list[dict[str, str]] = [{} for _ in self.private]
        self.cache: PrivateCache | None = None

    def builtins(self) -> tuple[str, ...]:
        return reference_names()

    def check(self, private: tuple[int, ...] | None) -> None:
        if not self.private or private is None:  # (a private model without seeds: refused above)
            return
        from circuit_gym.envs.pool import shared_model
        from circuit_gym.leaderboard.transfer_scorer import check_card_weights, check_private_model

        checked, hashes, shas, batches = [], [], [], []
        for model in self.private:
            # the private model of the edge row's board version (its zoo's shape, its held-out tasks)
            directory, served = check_private_model(
                model.directory, B.transfer_benchmark(self.bench.transfer_version)
            )
            # its card (the inclusion gate that chose the served tasks) must be these weights'
            hashes.append(shared_model(PRIVATE, str(directory)).circuit_gym_info.weights_hash)
            check_card_weights(directory, hashes[-1])
            seeds, sha = read_private_seeds(model.seeds)
            if len(seeds) < self.bench.private_seeds_used:
                raise ValueError(
                    f"private seed file {model.seeds} holds fewer than {self.bench.private_seeds_used} seeds"
                )
            cells = self.bench.private_cells(len(served))
            if min(cells.values()) < MIN_PRIVATE_EPISODES:
                raise ValueError(f"the private model serves {len(served)} held-out tasks: {cells} private "
                                 f"episodes per cell, fewer than {MIN_PRIVATE_EPISODES}")  # fmt: skip
            checked.append((directory, served))
            shas.append(sha)
            batches.append(tuple(seeds[: self.bench.private_seeds_used]))
        distinct_weights(hashes)
        self.checked, self.seed_shas, self.model_batches = checked, shas, batches
        # a one-model row's names (its record: private_record)
        self.served, self.batches = checked[0][1], batches[0]

    def parts(self, sample: bool) -> list[Part]:
        """Transfer model by model, then planted kind by kind (a model its gate admits no task on: none)."""
        b = self.bench
        transfer = [self._transfer(f"{self.name}: {m}", m, jobs, self.weights)
                    for m, jobs in transfer_jobs(b).items() if jobs]  # fmt: skip
        planted = [self._planted(f"{self.name}: planted ({k})", tuple((k, int(s)) for s in b.planted_public_seeds),
                                 self.planted_weights) for k in b.kinds]  # fmt: skip
        return transfer + planted

    def _transfer(self, label: str, model: str, jobs: tuple[tuple[str, int], ...], weights: dict,
                  model_path: str | None = None, cache: bool = True, private: int | None = None) -> Part:  # fmt: skip
        """The transfer episodes ``jobs`` ((task, seed)) of ``model``: edge CPR and CMD (``private``:
        which private model it is, marked in its rows for the record's per-model summaries)."""
        mark = {} if private is None else {"private_model": private}

        def env(jobs: tuple[tuple[str, int], ...]) -> gym.Env:
            tasks, pool = tuple(dict.fromkeys(t for t, _ in jobs)), max(s for _, s in jobs) + 1
            made = transfer_env(self.bench, model, tasks, pool, model_path, cache)
            weights[model] = _base(made).model.circuit_gym_info.weights_hash
            return made

        def play(env: gym.Env, who: Play) -> PlayOne:
            return lambda t, s, detailed=True: {**transfer_row(model, t, s, who(_base(env), t, s)), **mark}

        return Part(label, jobs, env, play)

    def _planted(self, label: str, jobs: tuple[tuple[str, int], ...], weights: dict | None,
                 scope=nullcontext) -> Part:  # fmt: skip
        """The planted episodes ``jobs`` ((kind, seed), one kind): precision, recall and AUC against the edge truth."""
        from circuit_gym.models.planted.generator import truth_of
        from circuit_gym.tasks.planted import task_name

        def play(env: gym.Env, who: Play) -> PlayOne:
            def one(kind: str, seed: int, detailed: bool = True) -> dict:
                inner = _base(env.unwrapped.inner_for(seed))
                if weights is not None:
                    weights[seed] = inner.model.circuit_gym_info.weights_hash
                truth = truth_of(seed, self.bench.planted_generator).edges(kind)
                return planted_row(kind, seed, truth, who(inner, task_name(kind), PLANTED_BATCH_INDEX))

            return one

        kind = jobs[0][0]
        return Part(label, jobs, lambda jobs: planted_env(self.bench, kind, tuple(s for _, s in jobs)), play,
                    scope=scope)  # fmt: skip

    def builtin_player(self, name: str) -> Play:
        return builtin_play(name, self.bench)

    def sandbox_player(self, sandbox: SandboxedPolicy) -> Play:
        return sandbox_play(sandbox)

    def private_parts(self, seeds: tuple[int, ...]) -> list[Part]:
        """The secret planted models (a temporary cache) and, when given, the private model's held-out
        tasks (no disk cache). The secret models are the edge track's own draw (``planted_scorer.EDGE_DRAW``) from the file's first seed."""
        self.secret, self.cache = (
            private_model_seeds(seeds)[: self.bench.planted_private_models],
            PrivateCache(),
        )
        out = [self._planted(f"{self.name}: secret planted models ({k})", tuple((k, int(s)) for s in self.secret),
                             None, self.cache.scope) for k in self.bench.kinds]  # fmt: skip
        for i, ((directory, served), batches) in enumerate(
            zip(self.checked, self.model_batches, strict=True)
        ):
            jobs = tuple((t, int(s)) for t in served for s in batches)
            label = "private model" if len(self.private) == 1 else f"private model {i + 1}"
            out.append(self._transfer(f"{self.name}: {label}", PRIVATE, jobs, self.private_weights[i],
                                      str(directory), cache=False, private=i))  # fmt: skip
        return out

    def scores(self, main: list[dict], other: list[dict]) -> dict:
        transfer = [r for r in main if r["part"] == "transfer"]
        planted = [r for r in main if r["part"] == "planted"]
        return {"transfer": transfer_summary(transfer), "planted": planted_summary(planted), "episodes": main}

    def private_record(self, hidden: list[dict]) -> dict:
        out: dict = {"n_models": len(self.secret),
                     "scores": {"planted": planted_summary([r for r in hidden if r["part"] == "planted"])}}  # fmt: skip
        transfer = [r for r in hidden if r["part"] == "transfer"]
        if len(self.private) == 1:  # one private model: its fields at the top level
            out.update(
                weights_hash=self.private_weights[0][PRIVATE],
                n_seeds=len(self.batches),
                tasks=list(self.served),
            )
            out["scores"]["transfer"] = transfer_summary(transfer)
        elif self.private:  # several: the summary over every private model's episodes, then each model's
            served_any = [t for t in self.bench.tasks if any(t in served for _, served in self.checked)]
            out.update(n_seeds=len(self.batches), tasks=served_any)
            out["scores"]["transfer"] = transfer_summary(transfer)
            out[MODELS_KEY] = [
                {"weights_hash": self.private_weights[i][PRIVATE], "seed_file_sha256": self.seed_shas[i],
                 "n_seeds": len(self.model_batches[i]), "tasks": list(self.checked[i][1]),
                 "scores": {"transfer": transfer_summary([r for r in transfer if r.get("private_model") == i])}}
                for i in range(len(self.private))
            ]  # fmt: skip
        return out

    def definition(self) -> dict:
        return self.bench.definition()

    def model(self) -> SimpleNamespace:
        return SimpleNamespace(circuit_gym_info=SimpleNamespace(name="zoo+planted", weights_hash=None))

    def provenance(self) -> dict:
        played = self.planted_weights  # the public planted models played (none in a short sample)
        planted = weights_hash(played, tuple(sorted(played))) if played else None
        return {"weights_hashes": self.weights, "planted_weights_hash": planted}

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def score_edges(name: str, track: str, policy_spec: str | None = None, checkpoint: str | None = None,
                builtin: str | None = None, private_seeds: str | Path | None = None,
                private_model: PrivateModelArg = None, require_isolation: bool | None = None,
                sample: int | None = None) -> dict:  # fmt: skip
    """Score one policy (``policy_spec``, sandboxed) or reference (``builtin``) on the edge track
    ``track``; the result dict (``status`` "scored", "failed" or, with ``sample``, "sample").

    ``private_seeds``: the maintainers' seed file (secret planted models; with ``private_model``,
    the private zoo model's batches too; where the board version ranks on several private models,
    ``private_model`` is a sequence of them, ``private_models.PrivateModel`` each with its seed file)."""
    run = EdgeRun(track, private_model, private_seeds)
    return score_track(run, name, policy_spec, checkpoint, builtin, run.seed_file, require_isolation, sample)


def _aucs(summary: dict) -> str:
    """The planted part's AUCs: over the candidates (what the board ranks and pairs) first, then over
    every edge (which mostly reads which edges are candidates: :func:`candidate_auc`)."""
    return f"AUC (candidates) {summary['auc_candidates']:.3f}, AUC (every edge) {summary['auc']:.3f}"


def headline(result: dict) -> list[str]:
    """A scored edge result, for the terminal."""
    if result["status"] != "scored":
        return [f"failed: {result['failure']['type']}: {result['failure']['reason']}"]
    t, p = result["scores"]["transfer"]["all"], result["scores"]["planted"]["all"]
    log = f"edge CPR(log) {t['cpr_log']:.3f}, CMD(log) {t['cmd_log']:.3f}, MIB's "
    lines = [f"held-out tasks, held-out models: {log}edge CPR {t['cpr']:.3f}, CMD {t['cmd']:.3f}, {t['lm_passes']:.0f} passes",
             f"planted, public seeds: precision {p['precision']:.2f}, recall {p['recall']:.2f}, {_aucs(p)}"]  # fmt: skip
    private = (result.get("private") or {}).get("scores") or {}
    if "planted" in private:
        s = private["planted"]["all"]
        lines.append(
            f"planted, secret models: precision {s['precision']:.2f}, recall {s['recall']:.2f}, {_aucs(s)}"
        )
    if "transfer" in private:  # the log-axis pair ranks: first, MIB's beside it
        h = private["transfer"]["all"]
        log = f"edge CPR(log) {h['cpr_log']:.3f}, CMD(log) {h['cmd_log']:.3f}, MIB's "
        lines.append(f"private part: {log}edge CPR {h['cpr']:.3f}")
    return lines


def main(argv: list[str] | None = None) -> None:
    """``score``: one entry on an edge track; ``paired``: the
    adjacent paired differences of scored result files."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description="the edge track's scorer (edge protocol 2: issue 57)")
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score")
    score.add_argument("--track", default="v8-edges")
    score.add_argument("--name")
    who = score.add_mutually_exclusive_group(required=True)
    who.add_argument("--builtin")
    who.add_argument("--policy")
    score.add_argument("--checkpoint")
    score.add_argument("--sample", type=int, help="the first N public episodes only (status 'sample')")
    score.add_argument("--out", required=True)
    paired = sub.add_parser("paired")
    paired.add_argument("results", nargs="+")
    paired.add_argument("--metric", default="cpr_log")
    paired.add_argument("--part", default="transfer")
    paired.add_argument(
        "--versus", nargs="*", default=[], metavar="A:B", help="also print A - B for these pairs"
    )
    paired.add_argument("--out", help="write every column's means, adjacent and named pairs (JSON) here")
    args = parser.parse_args(argv)
    if args.command == "score":
        name = args.name or args.builtin or "entry"
        result = score_edges(name, args.track, args.policy, args.checkpoint, args.builtin, sample=args.sample)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        print("\n".join(headline(result)) if result["status"] == "scored" else result["status"])
        return
    results = {Path(p).stem: json.loads(Path(p).read_text()) for p in args.results}
    versus = tuple((a, b) for a, _, b in (pair.partition(":") for pair in args.versus))
    report = paired_report(results, versus)
    column = f"{args.part}_{args.metric}"
    lacking = [f"{a}:{b}" for a, b in versus if column not in report["versus"].get(f"{a}_vs_{b}", {})]
    if lacking:
        parser.error(f"{', '.join(lacking)}: no {args.metric} of the {args.part} part on both sides")
    shown = [*paired_table(results, args.metric, args.part),
             *({"above": a, "below": b, **report["versus"][f"{a}_vs_{b}"][column]} for a, b in versus)]  # fmt: skip
    for d in shown:
        low, high = d["ci95"]
        print(f"{d['above']} - {d['below']}: {d['mean']:+.3f} [{low:+.3f}, {high:+.3f}] over {d['n']} episodes"
              + (" (separated)" if d["separated"] else ""))  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
