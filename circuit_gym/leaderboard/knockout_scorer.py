"""Score a knock-out policy on the knock-out track (issue 60): which few ablations remove a behaviour?

Benchmark v8's track ``v8-knockout`` (a row of :data:`KNOCKOUT_BENCHMARKS`, named in
``circuit_gym/leaderboard/tracks.py``'s table as v8's other tracks are). Each episode is one ``CircuitDiscovery-Planted-{Kind}-KnockOut-v0`` episode
(``circuit_gym.envs.knockout.KnockOutEnv`` on a planted model of generator 3: up to K heads ablated one
at a time, cumulatively, the observation recomputed on the ablated model after each; no oracle
fields) on test-split batch 0, for each kind of the generator, on the row's **public** seeds and,
when the maintainers pass their seed file, on **secret** planted models: the Planted track's secret
draw from the file's first seed (``planted_scorer.private_model_seeds`` of the row named by
``planted_draw``; generated into a temporary cache, never the disk's), the first
``private_models`` of them.

**What an entry submits**: a policy (``package.module:factory``, run in the sealed sandbox of
``circuit_gym/leaderboard/sandbox.py``, the circuit track's machinery) answering
``act(observation, action_mask)``: a head to ablate, or ``n`` = STOP. It sees the observation and
the mask only: never ``info`` (which holds the truth at the episode's end), the weights, the
planted generator or the greedy cache. Every action is checked (``circuit_gym.policy.check_action``:
an integer, in range, not masked); anything else fails the run with the check's message (in the
private part, in fixed words), never a silently wrong score. **What it reads, and pays**: the
environment's observation, its per-head scores either attribution and EAP-IG (the default) or, when
the entry asks for it at submission (``--scores attribution``, recorded in its result), attribution
alone: the passes of one step of conditional attribution. The episode's last observation is never
measured (no decision follows it). Its passes are the environment's count of what it read
(``info["decision_passes"]``: the per-head scores of every observation it was given), never the
policy's word; the task metric the environment measures after each step (the reward, which every
entry gets, and the curve every entry is scored by) is counted for no entry, as for the references.

**References** (``builtin``): ``circuit_gym.solvers.knockout.REFERENCES``, white-box, in the
scorer's process, on the episode's runner; each order is then played through the same environment,
so its curve is read exactly as an entry's. Their passes are the reference's own count.

**Scores per episode** (``circuit_gym.circuits.knockout_scores``): the knock-out curve (metric left
after k = 1..K ablations, as a fraction of the clean metric), its area **relative to exact greedy's**
on the same batch (1 = as fast as exact greedy), and against the planted truth (backups and
suppressors counted): precision, recall, backup recall and the AUC of the order. Exact greedy's
curve on the public episodes comes from :data:`GREEDY_CACHE` (computed once by ``greedy-cache``,
checked against the model's weights hash and clean metric when read; a missing entry is computed);
on the secret models it is computed at scoring time and never written. Per kind and over all
episodes: means with 95% t-intervals (``circuit_gym.stats.mean_ci95``, as every track's), and the
entry's paired differences against the row's ``versus`` references on the same episodes
(``circuit_gym.edges.paired.paired_difference``). The private record is sealed
(``scoring.sealed_private``): scores and their intervals only.

    python -m circuit_gym.leaderboard.knockout_scorer score --builtin conditional_attribution --out F.json
    python -m circuit_gym.leaderboard.knockout_scorer score --policy circuit_gym.baselines.knockout_ppo:load_policy \
        --checkpoint runs/knockout_ppo --out F.json [--private-seeds SEEDS]
    python -m circuit_gym.leaderboard.knockout_scorer paired A.json B.json ... [--metric relative_area]
    python -m circuit_gym.leaderboard.knockout_scorer greedy-cache   # (re)compute the public greedy curves
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym.circuits.knockout_scores import relative_area, remaining_curve, truth_scores
from circuit_gym.edges.paired import adjacent_differences, paired_difference
from circuit_gym.envs.knockout import SCORES, KnockOutEnv
from circuit_gym.envs.planted import PlantedEnv
from circuit_gym.envs.registration import planted_knockout_id
from circuit_gym.leaderboard.knockout_benchmark import (  # noqa: F401  (the rows, re-exported)
    KNOCKOUT_BENCHMARKS,
    KNOCKOUT_V8,
    KnockOutBenchmark,
    knockout_benchmark,
    trained_tasks,
)
from circuit_gym.leaderboard.paths import REPO_ROOT, RESULTS_DIR
from circuit_gym.leaderboard.planted_scorer import (
    PrivateCache,
    planted_benchmark,
    private_model_seeds,
    weights_hash,
)
from circuit_gym.leaderboard.private_models import (
    MODELS_KEY,
    PrivateModelArg,
    distinct_weights,
    of_run,
)
from circuit_gym.leaderboard.sandbox import SandboxedPolicy
from circuit_gym.leaderboard.scoring import Part, PlayOne, TrackRun, read_private_seeds, score_track
from circuit_gym.models.trained_truth import verified_backup_tasks
from circuit_gym.policy import check_action
from circuit_gym.solvers.knockout import REFERENCES, Played, play_actions
from circuit_gym.stats import mean_ci95
from circuit_gym.tasks.planted import task_name

GREEDY_CACHE = REPO_ROOT / "docs" / "results" / "knockout" / "greedy_curves.json"
METHODS = ("act",)  # what a submitted policy must have
METRICS = ("relative_area", "precision", "recall", "backup_recall", "auc", "lm_passes")
TRAINED_KIND = "trained"  # the ``kind`` of every trained-model episode (its ``model`` and ``task`` say which)
PAIRED_METRICS = ("relative_area", "backup_recall", "recall", "auc")  # the ranking scores, entry - reference
CLEAN_RTOL = 1e-4  # a cached greedy curve is this batch's when its clean metric agrees this closely


for _row in KNOCKOUT_BENCHMARKS.values():  # each row's secret models are of its own generator
    if planted_benchmark(_row.planted_draw).generator != _row.generator:
        raise ValueError(
            f"{_row.track}: the secret draw of {_row.planted_draw} is of another generator version"
        )


def make_env(bench: KnockOutBenchmark, kind: str, seeds: tuple[int, ...], scores: str = SCORES[0]) -> gym.Env:
    """The kind's knock-out environment over the models of ``seeds``, the row's settings, no oracle;
    the observation's per-head ``scores`` as the entry asked, its last observation not measured."""
    return gym.make(planted_knockout_id(kind), seeds=tuple(seeds), version=bench.generator, split=bench.split,
                    pool_size=bench.batch_index + 1, batch_size=bench.batch_size, steps=bench.steps,
                    ablation=bench.ablation, oracle=False, oracle_info=False, scores=scores, observe_last=False,
                    inner_cache=max(1, len(seeds)))  # fmt: skip


def make_trained_env(bench: KnockOutBenchmark, member: str, scores: str = SCORES[0]) -> KnockOutEnv:
    """The knock-out environment of public trained model ``member`` over its verified tasks, the row's
    settings, no oracle; the observation's per-head ``scores`` as the entry asked."""
    return KnockOutEnv(model=member, tasks=trained_tasks(member), split=bench.split, pool_size=bench.batch_index + 1,
                       batch_size=bench.batch_size, steps=bench.steps, ablation=bench.ablation, oracle_info=False,
                       scores=scores, observe_last=False)  # fmt: skip


def _inner(env: gym.Env, seed: int) -> KnockOutEnv:
    planted = env.unwrapped
    if not isinstance(planted, PlantedEnv):
        raise TypeError(f"expected a Planted environment, got {type(planted).__name__}")
    inner = planted.inner_for(int(seed))
    if not isinstance(inner, KnockOutEnv):
        raise TypeError(f"expected a knock-out environment, got {type(inner).__name__}")
    return inner


# ------------------------------------------------------------------ playing
Play = Callable[[KnockOutEnv, str, int], Played]  # (environment, task, batch index) -> episode


def builtin_play(name: str) -> Play:
    """Reference ``name`` on the episode's runner, its order then played through the environment
    (so its curve is read as an entry's); its passes, the reference's own count."""
    reference = REFERENCES[name]

    def play(env: KnockOutEnv, task: str, index: int) -> Played:
        env.reset(options={"task": task, "batch_index": index})
        run = reference(env.state, env.steps)
        todo = list(run.order)
        played = play_actions(env, task, index, lambda obs, mask: todo.pop(0) if todo else env.stop_action)
        return Played(played.order, played.metrics, played.clean, run.passes)

    return play


def sandbox_play(sandbox: SandboxedPolicy) -> Play:
    """The sandboxed policy plays the episode, every action checked before the environment sees it."""

    def play(env: KnockOutEnv, task: str, index: int) -> Played:
        played = play_actions(env, task, index, lambda obs, mask: check_action(sandbox.act(obs, mask), mask))
        # the sandbox counts episodes at rank_heads, which this track never calls: the scorer counts
        # them here (a sealed failure says after how many public episodes it came)
        sandbox.episodes_answered += 1
        return played

    return play


# ------------------------------------------------------------------ greedy's curves
def _batch_key(bench: KnockOutBenchmark) -> str:
    """What every greedy cache key ends with: split, batch, batch size, K and ablation."""
    return f"{bench.split}/batch{bench.batch_index}x{bench.batch_size}/k{bench.steps}/{bench.ablation}"


def greedy_key(bench: KnockOutBenchmark, kind: str, seed: int) -> str:
    """The cache key of exact greedy's curve: generator, seed, kind, split, batch, batch size, K."""
    return f"g{bench.generator}/seed{int(seed)}/{kind}/{_batch_key(bench)}"


def read_greedy_cache(path: Path = GREEDY_CACHE) -> dict[str, dict]:
    """The committed greedy curves by :func:`greedy_key` (``{}`` without the file)."""
    return json.loads(Path(path).read_text())["curves"] if Path(path).exists() else {}


def trained_greedy_key(bench: KnockOutBenchmark, member: str, task: str) -> str:
    """The cache key of exact greedy's curve on a trained model's episode."""
    return f"{member}/{task}/{_batch_key(bench)}"


def greedy_entry(env: KnockOutEnv, bench: KnockOutBenchmark, task: str) -> dict:
    """Exact greedy's order and curve on ``env``'s batch of ``task`` (reset there), with what identifies the batch."""
    env.reset(options={"task": task, "batch_index": bench.batch_index})
    order, metrics = env.state.greedy_curve(bench.steps)
    return {"weights_hash": env.model.circuit_gym_info.weights_hash, "clean_metric": float(env.state.clean_metric),
            "order": [int(h) for h in order], "metrics": [float(m) for m in metrics]}  # fmt: skip


def _same_batch(entry: dict, env: KnockOutEnv, bench: KnockOutBenchmark, task: str) -> bool:
    """Whether a stored greedy ``entry`` is ``env``'s batch of ``task`` (reset there): its model's
    weights hash and its clean metric (to :data:`CLEAN_RTOL`)."""
    env.reset(options={"task": task, "batch_index": bench.batch_index})
    return entry["weights_hash"] == env.model.circuit_gym_info.weights_hash and bool(
        np.isclose(entry["clean_metric"], env.state.clean_metric, rtol=CLEAN_RTOL, atol=0.0)
    )


class PrivateCurves:
    """Exact greedy's curves on private episodes (secret planted models, private trained models): in
    this process's memory (references scored one after another in one process compute each once)
    and, when the maintainers attach a sealed file with their key (:meth:`attach`), in that file,
    encrypted (``custody.seal_secret``) and written after each new curve, so an interrupted run or
    the next one does not compute them again. Keyed by the model's weights hash, the task and the
    batch; an entry is checked against the batch's clean metric when used. A sandboxed policy runs in
    another process and sees neither."""

    WHAT = "exact greedy's knock-out curves on private episodes (circuit_gym/leaderboard/knockout_scorer.py)"

    def __init__(self) -> None:
        self.curves: dict[str, dict] = {}
        self.path: Path | None = None
        self.key_file: Path | None = None

    def attach(self, path: str | Path, key_file: str | Path) -> int:
        """Read the sealed file at ``path`` (when it exists) and keep it up to date; the curves read."""
        from circuit_gym.leaderboard.custody import open_secret

        self.path, self.key_file = Path(path), Path(key_file)
        if self.path.exists():
            self.curves.update(open_secret(self.path, self.key_file)["curves"])
        return len(self.curves)

    def metrics(self, env: KnockOutEnv, bench: KnockOutBenchmark, task: str) -> list[float]:
        """Greedy's metric after each ablation on ``env``'s batch of ``task`` (computed once)."""
        name = f"{env.model.circuit_gym_info.weights_hash}/{task}/{_batch_key(bench)}"
        entry = self.curves.get(name)
        if entry is None:
            entry = self.curves[name] = greedy_entry(env, bench, task)
            if self.path is not None:
                from circuit_gym.leaderboard.custody import seal_secret

                seal_secret({"curves": self.curves}, self.WHAT, self.key_file, self.path)
        elif not _same_batch(entry, env, bench, task):
            raise ValueError(
                f"a private greedy curve ({name[:12]}...) is not this batch's: its clean metric differs"
            )
        return list(entry["metrics"])


PRIVATE_CURVES = PrivateCurves()


def greedy_metrics(env: KnockOutEnv, bench: KnockOutBenchmark, task: str, key: str | None,
                   cache: dict[str, dict]) -> list[float]:  # fmt: skip
    """Exact greedy's metric after each ablation on this episode's batch of ``task``: the cache's
    entry ``key`` when it is this model's and batch's (weights hash and clean metric agree), else
    computed (private episodes: ``key`` None, :data:`PRIVATE_CURVES`)."""
    if key is None:
        return PRIVATE_CURVES.metrics(env, bench, task)
    if key not in cache:
        return greedy_entry(env, bench, task)["metrics"]
    entry = cache[key]
    if not _same_batch(entry, env, bench, task):
        raise ValueError(f"the greedy cache's entry {key} is not this model's batch: rebuild it "
                         "(python -m circuit_gym.leaderboard.knockout_scorer greedy-cache)")  # fmt: skip
    return list(entry["metrics"])


def build_greedy_cache(bench: KnockOutBenchmark, path: Path = GREEDY_CACHE, kinds: tuple[str, ...] | None = None,
                       seeds: tuple[int, ...] | None = None) -> dict[str, dict]:  # fmt: skip
    """Compute exact greedy's curve on the row's public episodes (or ``kinds`` x ``seeds`` of them)
    missing from the file at ``path`` and write it after each (a run stopped halfway keeps its work)."""
    seeds = bench.public_seeds if seeds is None else seeds
    if sorted(set(seeds) - set(bench.public_seeds)):
        raise ValueError(f"only the row's public seeds {bench.public_seeds} are cached, got {seeds}")
    curves = read_greedy_cache(path)

    def write(key: str, entry: dict) -> None:
        curves[key] = entry
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        text = {"about": "exact greedy knock-out on public planted and trained-model episodes "
                         "(circuit_gym/leaderboard/knockout_scorer.py greedy-cache)",
                "curves": dict(sorted(curves.items()))}  # fmt: skip
        Path(path).write_text(json.dumps(text, indent=1) + "\n")

    for kind in kinds or bench.kinds_played:
        env = make_env(bench, kind, tuple(seeds))
        try:
            for seed in seeds:
                if greedy_key(bench, kind, seed) not in curves:
                    write(
                        greedy_key(bench, kind, seed), greedy_entry(_inner(env, seed), bench, task_name(kind))
                    )
        finally:
            env.close()
    if kinds is None:  # the trained part's episodes too (a run asked for some kinds computes those only)
        for member in bench.trained_models:
            trained = make_trained_env(bench, member)
            try:
                for task in trained_tasks(member):
                    if trained_greedy_key(bench, member, task) not in curves:
                        write(trained_greedy_key(bench, member, task), greedy_entry(trained, bench, task))
            finally:
                trained.close()
    return curves


# ------------------------------------------------------------------ scores
def scores_of(played: Played, greedy: list[float], truth, kind: str, k: int, n_total: int) -> dict:
    """One episode's scores: curve, area relative to greedy's, truth scores (backups counted), passes."""
    return {"curve": remaining_curve(played.metrics, played.clean, k).tolist(),
            "relative_area": relative_area(played.metrics, greedy, played.clean, k),
            **truth_scores(played.order, truth.circuit(kind), truth.backups(kind), n_total),
            "lm_passes": played.passes}  # fmt: skip


def summary(rows: list[dict], metrics: tuple[str, ...] = METRICS) -> dict:
    """Per kind and ``"all"``: episodes, and the mean and 95% t-interval of each metric (NaN values,
    e.g. backup recall on a kind without backups, left out)."""
    out: dict = {}
    for key in (*dict.fromkeys(r["kind"] for r in rows), "all"):
        sel = [r for r in rows if key in ("all", r["kind"])]
        if sel:
            out[key] = {"episodes": len(sel)}
            for m in metrics:
                out[key][m], out[key][f"{m}_ci95"] = mean_ci95([float(r[m]) for r in sel])
    return out


def versus_summary(rows: list[dict], references: tuple[str, ...]) -> dict:
    """Per reference, per kind and ``"all"``: the entry's paired difference (entry - reference) of
    each of :data:`PAIRED_METRICS` over the episodes both played, its mean and 95% t-interval."""
    out: dict = {}
    for ref in references:
        out[ref] = {}
        for key in (*dict.fromkeys(r["kind"] for r in rows), "all"):
            sel = [(i, r) for i, r in enumerate(rows) if key in ("all", r["kind"])]
            cell: dict = {"episodes": len(sel)}
            for m in PAIRED_METRICS:
                d = paired_difference({i: r[m] for i, r in sel}, {i: r["versus"][ref][m] for i, r in sel})
                cell[m], cell[f"{m}_ci95"] = d["mean"], d["ci95"]
            out[ref][key] = cell
    return out


# ------------------------------------------------------------------ the run
class KnockOutRun(TrackRun):
    """A run on the knock-out track ``track``: one part per kind on the public seeds and per public
    trained model and, with the seed file, one per kind on the secret models and, with the private
    models (the row's ``private_trained_models``), one per private model on the tasks its card
    verifies (all private parts in a :class:`~planted_scorer.PrivateCache`)."""

    methods = METHODS
    builtin_spec = "circuit_gym.solvers.knockout:REFERENCES"

    def __init__(self, track: str, greedy_cache: Path = GREEDY_CACHE, scores: str = SCORES[0],
                 private_model: PrivateModelArg = None, private_seeds: str | Path | None = None) -> None:  # fmt: skip
        if scores not in SCORES:
            raise ValueError(f"scores must be one of {SCORES}, got {scores!r}")
        self.bench, self.name, self.observation = knockout_benchmark(track), track, scores
        if private_model is not None and not self.bench.private_trained_models:
            raise ValueError(
                f"the {track} track plays no private model (secret planted models only: give the seed file)"
            )
        # the seed file (the first private model's unless given) also draws the secret planted models
        wanted = self.bench.private_trained_models
        self.private, self.seed_file = of_run(private_model, private_seeds, wanted, track)
        self.greedy = read_greedy_cache(greedy_cache)
        self.weights: dict[int, str] = {}
        self.trained_weights: dict[str, str] = {}
        self.secret: tuple[int, ...] = ()
        self.cache: PrivateCache | None = None
        # per private model (in the order given): its verified tasks, truth, weights hash, seed file's SHA-256
        self.private_tasks: list[tuple[str, ...]] = []
        self.private_weights: list[str] = []
        self.seed_shas: list[str] = []
        self.versus = {ref: builtin_play(ref) for ref in self.bench.versus}

    def builtins(self) -> tuple[str, ...]:
        return tuple(REFERENCES)

    def parts(self, sample: bool) -> list[Part]:
        b = self.bench
        planted = [self._part(f"{self.name}: public seeds ({k})", tuple((k, int(s)) for s in b.public_seeds), True)
                   for k in b.kinds_played]  # fmt: skip
        trained = [self._trained_part(i, member) for i, member in enumerate(b.trained_models)]
        return planted + trained

    def _scored(self, env: KnockOutEnv, task: str, truth, truth_key: str, key: str | None, who: Play) -> dict:
        """One episode of ``task`` on ``env``: the entry's scores against greedy's curve (the cache's
        entry ``key``, or computed) and ``truth`` (its circuit and backups under ``truth_key``), and
        each ``versus`` reference's on the same batch."""
        bench = self.bench
        greedy = greedy_metrics(env, bench, task, key, self.greedy)

        def scores(played: Played) -> dict:
            return scores_of(played, greedy, truth, truth_key, bench.steps, env.n_total)

        row = scores(who(env, task, bench.batch_index))  # the entry first, then the references
        return {
            **row,
            "versus": {ref: scores(p(env, task, bench.batch_index)) for ref, p in self.versus.items()},
        }

    def _trained_part(self, index: int, member: str) -> Part:
        """Public trained model ``member``'s verified tasks, scored against its trained truth."""
        from circuit_gym.models.loading import embedded_dir
        from circuit_gym.models.trained_truth import trained_truth

        bench = self.bench

        def play(env: KnockOutEnv, who: Play) -> PlayOne:
            truth = trained_truth(embedded_dir(member), member)

            def one(task: str, _index: int, detailed: bool = True) -> dict:
                self.trained_weights[member] = env.model.circuit_gym_info.weights_hash
                scored = self._scored(env, task, truth, task, trained_greedy_key(bench, member, task), who)
                return {"kind": TRAINED_KIND, "model": member, "task": task, **scored}

            return one

        jobs = tuple(job for job in bench.trained_jobs() if job[1] == index)
        return Part(f"{self.name}: trained model {member}", jobs,
                    lambda jobs: make_trained_env(bench, member, self.observation), play)  # fmt: skip

    def check(self, private: tuple[int, ...] | None) -> None:
        """Each private model's card verifies some backup pair and was measured on its weights (read
        from the directory: the weights themselves are checked when its part builds the model)."""
        cards = []
        for model in self.private:
            card_path = Path(model.directory) / "card_metrics.json"
            if not card_path.is_file():
                raise FileNotFoundError(f"private model {model.directory} has no card_metrics.json")
            cards.append(json.loads(card_path.read_text()))
            tasks = verified_backup_tasks(cards[-1])
            if not tasks:
                raise ValueError(f"private model {model.directory}: its card verifies no backup pair")
            self.private_tasks.append(tasks)
            self.seed_shas.append(read_private_seeds(model.seeds)[1])
        # one model given twice is refused before anything plays (its part then checks the card's hash)
        distinct_weights([str(card.get("weights_hash")) for card in cards])

    def private_parts(self, seeds: tuple[int, ...]) -> list[Part]:
        self.secret = private_model_seeds(seeds, self.bench.planted_draw)[: self.bench.private_models]
        self.cache = PrivateCache()
        planted = [self._part(f"{self.name}: secret models ({k})", tuple((k, int(s)) for s in self.secret), False,
                              self.cache.scope) for k in self.bench.kinds_played]  # fmt: skip
        return planted + [self._private_trained_part(i) for i in range(len(self.private))]

    def _private_trained_part(self, index: int) -> Part:
        """Private model ``index``'s verified tasks, against its trained truth; greedy computed, no disk cache."""
        from circuit_gym.leaderboard.transfer_scorer import PRIVATE, check_card_weights
        from circuit_gym.models.trained_truth import trained_truth

        bench, model = self.bench, self.private[index]
        tasks = self.private_tasks[index]

        def env(jobs) -> KnockOutEnv:
            built = KnockOutEnv(model=PRIVATE, model_path=str(model.directory), tasks=tasks, split=bench.split,
                                pool_size=bench.batch_index + 1, batch_size=bench.batch_size, steps=bench.steps,
                                ablation=bench.ablation, oracle_info=False, scores=self.observation,
                                observe_last=False, cache=False)  # fmt: skip
            weights = built.model.circuit_gym_info.weights_hash
            check_card_weights(Path(model.directory), weights)  # the card check() read is these weights'
            self.private_weights.append(weights)
            return built

        def play(env: KnockOutEnv, who: Play) -> PlayOne:
            truth = trained_truth(model.directory, PRIVATE)

            def one(task: str, _index: int, detailed: bool = True) -> dict:
                scored = self._scored(env, task, truth, task, None, who)
                return {"kind": TRAINED_KIND, "private_model": index, "task": task, **scored}

            return one

        assert self.cache is not None  # private_parts made it
        return Part(f"{self.name}: private model {index + 1}", tuple((t, index) for t in tasks), env, play,
                    scope=self.cache.scope)  # fmt: skip

    def _part(self, label: str, jobs: tuple[tuple[str, int], ...], public: bool, scope=nullcontext) -> Part:
        from circuit_gym.models.planted.generator import truth_of

        bench, kind = self.bench, jobs[0][0]

        def play(env: gym.Env, who: Play) -> PlayOne:
            def one(kind: str, seed: int, detailed: bool = True) -> dict:
                inner = _inner(env, seed)
                if public:
                    self.weights[seed] = inner.model.circuit_gym_info.weights_hash
                key = greedy_key(bench, kind, seed) if public else None
                scored = self._scored(inner, task_name(kind), truth_of(seed, bench.generator), kind, key, who)
                return {"kind": kind, **({"seed": int(seed)} if public else {}), **scored}

            return one

        return Part(
            label,
            jobs,
            lambda jobs: make_env(bench, kind, tuple(s for _, s in jobs), self.observation),
            play,
            scope=scope,
        )

    def builtin_player(self, name: str) -> Play:
        return builtin_play(name)

    def sandbox_player(self, sandbox: SandboxedPolicy) -> Play:
        return sandbox_play(sandbox)

    def scores(self, main: list[dict], other: list[dict]) -> dict:
        return {"summary": summary(main), "versus": versus_summary(main, self.bench.versus), "episodes": main}

    def private_record(self, hidden: list[dict]) -> dict:
        record = {"n_models": len(self.secret),
                  "scores": {"summary": summary(hidden), "versus": versus_summary(hidden, self.bench.versus)}}  # fmt: skip
        if not self.private:
            return record
        # per private model: its weights, seed file and tasks, and its episodes' summary (sealed alike)
        models = []
        for i, weights in enumerate(self.private_weights):
            rows = [r for r in hidden if r.get("private_model") == i]
            models.append({"weights_hash": weights, "seed_file_sha256": self.seed_shas[i],
                           "tasks": list(self.private_tasks[i]),
                           "scores": {"summary": summary(rows), "versus": versus_summary(rows, self.bench.versus)}})  # fmt: skip
        return {**record, MODELS_KEY: models}

    def definition(self) -> dict:
        return {**self.bench.definition(), "observation_scores": self.observation}

    def model(self) -> SimpleNamespace:
        """The public models, by their weights hashes (None after a sample run, which plays some only)."""
        whole = set(self.weights) == set(self.bench.public_seeds)
        whole = whole and set(self.trained_weights) == set(self.bench.trained_models)
        models = weights_hash(self.weights, self.bench.public_seeds) if whole else None
        if models is not None and self.bench.trained_models:  # the trained members' weights too, in order
            trained = "\n".join(f"{m}:{self.trained_weights[m]}" for m in self.bench.trained_models)
            models = hashlib.sha256(f"{models}\n{trained}".encode()).hexdigest()
        return SimpleNamespace(circuit_gym_info=SimpleNamespace(name=f"planted-v{self.bench.generator}",
                                                                weights_hash=models))  # fmt: skip

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def score_knockout(name: str, track: str = KNOCKOUT_V8.track, policy_spec: str | None = None,
                   checkpoint: str | None = None, builtin: str | None = None,
                   private_seeds: str | Path | None = None, require_isolation: bool | None = None,
                   sample: int | None = None, greedy_cache: Path = GREEDY_CACHE, scores: str = SCORES[0],
                   private_model: PrivateModelArg = None) -> dict:  # fmt: skip
    """Score one knock-out policy (``policy_spec``, sandboxed) or reference (``builtin``) on the
    knock-out track ``track``; the result dict (``status`` "scored", "failed" or, with ``sample``,
    "sample"). ``private_seeds``: the maintainers' seed file (the secret planted models);
    ``private_model``: the row's private trained models (``private_models.PrivateModel`` each with its
    seed file, the first's drawing the secret planted models unless ``private_seeds`` is given);
    ``scores``: the observation's per-head scores the entry reads (and pays for)."""
    run = KnockOutRun(track, greedy_cache, scores, private_model, private_seeds)
    return score_track(run, name, policy_spec, checkpoint, builtin, run.seed_file, require_isolation, sample)


def episode_key(row: dict) -> tuple:
    """What identifies a public episode across result files: (kind, seed) on a planted model,
    (kind, model, task) on a trained one."""
    return (
        (row["kind"], row["model"], row["task"])
        if row["kind"] == TRAINED_KIND
        else (row["kind"], row["seed"])
    )


def paired_table(results: dict[str, dict], metric: str = "relative_area") -> list[dict]:
    """Adjacent entries' paired differences of ``metric`` over the public episodes both played
    (matched by :func:`episode_key`), entries ordered by their public mean, best first."""
    scores = {name: {episode_key(r): r[metric] for r in res["scores"]["episodes"]}
              for name, res in results.items() if res.get("status") == "scored"}  # fmt: skip
    means = {n: mean_ci95(list(s.values()))[0] for n, s in scores.items()}
    order = sorted(scores, key=lambda n: (-means[n] if np.isfinite(means[n]) else np.inf, n))
    return adjacent_differences(scores, order)


def headline(result: dict) -> list[str]:
    """A scored knock-out result, for the terminal."""
    if result["status"] != "scored":
        return [f"{result['status']}: {result.get('failure', {}).get('reason', '')}"]

    def line(part: str, s: dict) -> str:
        return (f"{part}: area / greedy {s['relative_area']:.3f} {_ci(s['relative_area_ci95'])}, backup recall "
                f"{s['backup_recall']:.2f}, recall {s['recall']:.2f}, precision {s['precision']:.2f}, AUC {s['auc']:.3f}")  # fmt: skip

    lines = [line("public seeds", result["scores"]["summary"]["all"])]
    private = (result.get("private") or {}).get("scores") or {}
    if "summary" in private:
        lines.append(line("secret models", private["summary"]["all"]))
    return lines


def _ci(ci) -> str:
    return "[-]" if ci is None or None in ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def score_references(args) -> None:
    """``references`` (see :func:`main`): each builtin of ``args.builtins``, then ``args.policy``."""
    from contextlib import ExitStack

    from circuit_gym.leaderboard import custody
    from circuit_gym.leaderboard.private_models import PrivateModel
    from circuit_gym.leaderboard.scoring import write_result

    if args.policy is not None and not args.name:
        raise SystemExit("--policy needs --name (its entry's name)")
    out_dir = (
        Path(args.out_dir) if args.out_dir else RESULTS_DIR / knockout_benchmark(args.track).results_folder
    )
    who = [(name, name, None, SCORES[0]) for name in args.builtins]
    who += [(args.name, None, args.policy, args.scores)] if args.policy else []
    with ExitStack() as stack:
        opened = [stack.enter_context(custody.open_private(p, args.key)) for p in args.private_model]
        models = [PrivateModel(o.model_dir, o.seeds) for o in opened]
        if args.private_curves:
            print(
                f"{PRIVATE_CURVES.attach(args.private_curves, args.key)} private greedy curves read",
                flush=True,
            )
        for name, builtin, policy, scores in who:
            out = out_dir / f"{name}.json"
            if out.exists():
                print(f"{name}: {out} exists, skipped", flush=True)
                continue
            result = score_knockout(name, args.track, policy, args.checkpoint if policy else None, builtin,
                                    scores=scores, private_model=models)  # fmt: skip
            write_result(result, out)
            print("\n".join([f"{name}: {out}", *headline(result)]), flush=True)


def main(argv: list[str] | None = None) -> None:
    """``score``: one entry on the knock-out track; ``references``: several, one after another in one
    process (maintainers: the private part, its greedy curves computed once); ``paired``: adjacent
    paired differences of result files; ``greedy-cache``: compute exact greedy's public curves missing
    from the cache."""
    import argparse

    from circuit_gym.leaderboard.scoring import write_result

    parser = argparse.ArgumentParser(description="the knock-out track's scorer (issue 60)")
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score")
    score.add_argument("--track", default=KNOCKOUT_V8.track)
    score.add_argument("--name")
    who = score.add_mutually_exclusive_group(required=True)
    who.add_argument("--builtin", choices=tuple(REFERENCES))
    who.add_argument("--policy", help="package.module:factory")
    score.add_argument("--checkpoint")
    score.add_argument("--private-seeds", help="the maintainers' seed file (the secret planted models)")
    score.add_argument("--sample", type=int, help="the first N public episodes only (status 'sample')")
    score.add_argument(
        "--scores",
        choices=SCORES,
        default=SCORES[0],
        help="the observation's per-head scores the policy reads (and pays for)",
    )
    score.add_argument("--out", required=True)
    paired = sub.add_parser("paired")
    paired.add_argument("results", nargs="+")
    paired.add_argument("--metric", default="relative_area", choices=PAIRED_METRICS)
    refs = sub.add_parser(
        "references",
        help="maintainers: score references (and one policy) one after another in one process, each result "
        "written to the track's folder as it is done (one already there is skipped); exact greedy's private "
        "curves computed once and kept in a sealed file",
    )
    refs.add_argument("--track", default=KNOCKOUT_V8.track)
    refs.add_argument("--builtins", nargs="*", choices=tuple(REFERENCES), default=list(REFERENCES))
    refs.add_argument("--policy", help="package.module:factory, scored after the builtins (with --name)")
    refs.add_argument("--checkpoint")
    refs.add_argument("--name", help="the policy's entry name")
    refs.add_argument("--scores", choices=SCORES, default=SCORES[0], help="the policy's observation scores")
    refs.add_argument("--private-model", nargs="+", required=True, metavar="FILE.enc",
                      help="the row's sealed private models (their first's seed file draws the secret planted models)")  # fmt: skip
    refs.add_argument("--key", default=str(REPO_ROOT.parent / "shared" / "private" / "board.key"))
    refs.add_argument("--private-curves", metavar="FILE.enc",
                      help="sealed file of exact greedy's private curves: read, and written after each new curve")  # fmt: skip
    refs.add_argument("--out-dir", help="default: the track's results folder")
    cache = sub.add_parser("greedy-cache")
    cache.add_argument("--track", default=KNOCKOUT_V8.track)
    cache.add_argument("--kinds", nargs="+")
    cache.add_argument("--seeds", nargs="+", type=int)
    args = parser.parse_args(argv)
    if args.command == "score":
        name = args.name or args.builtin or "entry"
        result = score_knockout(name, args.track, args.policy, args.checkpoint, args.builtin,
                                args.private_seeds, sample=args.sample, scores=args.scores)  # fmt: skip
        write_result(result, args.out)
        print("\n".join(headline(result)) if result["status"] != "sample" else "sample")
    elif args.command == "references":
        score_references(args)
    elif args.command == "paired":
        results = {Path(p).stem: json.loads(Path(p).read_text()) for p in args.results}
        for d in paired_table(results, args.metric):
            print(f"{d['above']} - {d['below']}: {d['mean']:+.3f} {_ci(d['ci95'])} over {d['n']} episodes"
                  + (" (separated)" if d["separated"] else ""))  # fmt: skip
    else:
        bench = knockout_benchmark(args.track)
        got = build_greedy_cache(bench, GREEDY_CACHE, tuple(args.kinds) if args.kinds else None,
                                 tuple(args.seeds) if args.seeds else None)  # fmt: skip
        print(f"{len(got)} greedy curves in {GREEDY_CACHE.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
