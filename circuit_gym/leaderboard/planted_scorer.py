"""Score a circuit-building policy on the Planted track: exact ground truth, models nobody has seen.

The track has one row per board version (:class:`PlantedBenchmark`, :data:`PLANTED_BENCHMARKS`):
``v8-planted`` (benchmark v8: generator version 3, six kinds, its own private salt). Every function
here takes the row's track name (default: the benchmark in force's) and reads nothing else that
differs between versions. (The retired Planted tracks: docs/archive.md.)

A row's track (:func:`definition`): for each of its circuit kinds, the policy plays the kind's
circuit-building Planted ID of the row's generator version (``CircuitDiscovery-Planted-{Kind}-Circuit-v1``
on version 3; ``start="empty"``, the circuit track's budget and alpha, no
oracle fields, resample ablation) on the planted model of each seed: the row's public seeds
(published, anyone can rescore), and, when the maintainers pass their private seed file, the row's
number of private models drawn from its first seed (:func:`private_model_seeds`).
Each episode is one test-split batch of the kind's task. As on the circuit track the policy
answers ``act(observation, action_mask)`` (a head to add, or STOP) and, at the end,
``rank_heads(observation)``; its proposed circuit is the heads it added, its ranking those heads
in insertion order then the rest by its scores (``circuit_gym.solvers.episodes``).

Scores, against the generator's ground truth (``circuit_gym.models.planted``), never against a
solver: precision and recall of the proposed circuit and the AUC of the ranking
(``circuit_gym.models.planted.recovery``), per kind and over all episodes (means with 95%
t-intervals), plus the circuit's faithfulness and size. The policy sees observations only; the
truth reaches neither it nor the environment's ``info`` (``oracle=False``).

References (``builtin``), run in the scorer's process: the white-box solvers of the circuit track
(``circuit_gym.solvers.white_box``: ``acdc``, ``eap_ig``, ``attribution``, ``greedy_search``) and
the observation-only rules of ``circuit_gym.solvers.planted_rules`` (``random``,
``shallow_first``, ``feature``: the column chosen on the public seeds, and ``memoriser``: the
public models' circuit heads). A submitted policy runs sandboxed, as on the circuit track.

Private models are generated into a temporary directory removed afterwards (never the disk
cache, where their directory names would give the seeds away); the result stores their summary
and the seed file's SHA-256, never a seed. The skeleton (checks, sandbox, episode loop,
provenance, content hash) is ``scoring.py``'s; :class:`PlantedRun` is what differs.

    circuit-gym leaderboard score --track v8-planted --builtin acdc --out leaderboard/results/v8/planted/acdc.json
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np

from circuit_gym import benchmark as B
from circuit_gym.envs.planted import PlantedEnv
from circuit_gym.leaderboard.sandbox import SandboxedPolicy
from circuit_gym.leaderboard.scoring import Part, PlayOne, TrackRun, score_track
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.models.planted.recovery import precision_recall, ranking_auc
from circuit_gym.models.planted.versions import DEFAULT_VERSION, kinds_of
from circuit_gym.policy import check_action, check_scores
from circuit_gym.solvers import planted_rules as rules
from circuit_gym.solvers.episodes import CircuitSolver, play, play_episode
from circuit_gym.solvers.white_box import builtins as white_boxes
from circuit_gym.stats import mean_ci95
from circuit_gym.tasks.planted import task_name
from circuit_gym.track_envs import PLANTED_BATCH_INDEX as BATCH_INDEX
from circuit_gym.track_envs import PLANTED_BATCH_SIZE as BATCH_SIZE
from circuit_gym.track_envs import PLANTED_SPLIT as SPLIT
from circuit_gym.track_envs import planted_env, planted_env_id

TRACK = B.transfer_benchmark(B.IN_FORCE).track(
    B.PLANTED
)  # the benchmark in force's: every function's default
RULES = ("random", "shallow_first", "feature", "memoriser")
METRICS = ("precision", "recall", "auc", "exact", "faithfulness", "circuit_size")


@dataclass(frozen=True)
class PlantedBenchmark:
    """One version of the Planted track (a row of :data:`PLANTED_BENCHMARKS`): what differs between
    versions. The episode (split, batch, budget, alpha, ablation) and the rules are every row's."""

    track: str  # its track's name on the board (circuit_gym/leaderboard/tracks.py)
    benchmark_version: str  # recorded in (and checked against) every result's provenance
    generator: int  # the planted generator's version (circuit_gym.models.planted.versions)
    kinds: tuple[str, ...]  # the circuit kinds played, in order (the generator's)
    public_seeds: tuple[int, ...] = tuple(range(20))
    private_models: int = 20  # secret models per kind, drawn from the seed file's first seed
    salt: int = 0x5EC2E7  # keeps the private models' seeds apart from other uses of the file's seed

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds) - set(kinds_of(self.generator)))
        if not self.kinds or unknown:
            raise ValueError(f"kinds must be some of {kinds_of(self.generator)}, got {list(self.kinds)}")

    def jobs(self) -> list[tuple[str, int]]:
        """The public episodes in scoring order: kind by kind, seed by seed."""
        return [(kind, seed) for kind in self.kinds for seed in self.public_seeds]

    def episodes(self, private: bool) -> int:
        """Episodes a run plays: the public ones, and the secret models' with the seed file."""
        return len(self.kinds) * (len(self.public_seeds) + (self.private_models if private else 0))


_V8 = B.transfer_benchmark("v8")
PLANTED_BENCHMARKS: dict[str, PlantedBenchmark] = {
    row.track: row
    for row in (
        # benchmark v8: its generator version (benchmark.TRANSFER_BENCHMARKS), all of its kinds, 20
        # public seeds; a salt of its own, so its secret models are not those of the retired rows
        # (whose private scores have been published: RETIRED_SALTS)
        PlantedBenchmark(_V8.track(B.PLANTED), f"circuit-gym-planted-{_V8.version}", _V8.planted_generator,
                         kinds_of(_V8.planted_generator), salt=0x5EC8A3),
    )
}  # fmt: skip
# The salts of the retired Planted rows (docs/archive.md): a new row's salt must differ from them,
# or one seed file would draw secret models whose scores have been published.
RETIRED_SALTS = (0x5EC7A3,)
# How the edge track draws its secret planted models (``edge_scorer`` asks without a track): as the
# retired Planted track of generator version 2 drew them, its salt, 20 models, public seeds 0-19 left out, so the
# edge track's committed private scores reproduce.
EDGE_DRAW = PlantedBenchmark("edges", "edge-track-draw", DEFAULT_VERSION, kinds_of(DEFAULT_VERSION))


def planted_benchmark(track: str = TRACK) -> PlantedBenchmark:
    """The row of ``track``; ValueError naming the Planted tracks otherwise."""
    if track not in PLANTED_BENCHMARKS:
        raise ValueError(f"planted track must be one of {list(PLANTED_BENCHMARKS)}, got {track!r}")
    return PLANTED_BENCHMARKS[track]


def env_id(kind: str, track: str = TRACK) -> str:
    """The kind's circuit-building Planted ID on ``track``'s generator version."""
    return planted_env_id(kind, planted_benchmark(track).generator)


def definition(track: str = TRACK) -> dict:
    """What the track's results are comparable under (an entry scored under another is not)."""
    row = planted_benchmark(track)
    return {
        "benchmark_version": row.benchmark_version, "track": row.track, "kinds": list(row.kinds),
        "env_ids": [env_id(k, track) for k in row.kinds], "generator_version": row.generator,
        "public_seeds": list(row.public_seeds), "private_models": row.private_models, "split": SPLIT,
        "batch_size": BATCH_SIZE, "batch_index": BATCH_INDEX, "ablation": "resample", "start": B.CIRCUIT_START,
        "budget": B.CIRCUIT_BUDGET, "alpha": B.CIRCUIT_ALPHA, "rule_proposed": rules.PROPOSED,
    }  # fmt: skip


def private_model_seeds(file_seeds: tuple[int, ...], track: str | None = None) -> tuple[int, ...]:
    """The row's number of private model seeds, drawn from the first seed of the maintainers' file
    with the row's salt, none of them public (``track`` None: the edge track's draw, :data:`EDGE_DRAW`)."""
    row = EDGE_DRAW if track is None else planted_benchmark(track)
    rng = np.random.default_rng([row.salt, int(file_seeds[0])])
    out: list[int] = []
    while len(out) < row.private_models:
        seed = int(rng.integers(2**31))
        if seed not in row.public_seeds and seed not in out:
            out.append(seed)
    return tuple(out)


def make_planted_envs(seeds: tuple[int, ...], track: str = TRACK) -> dict[str, gym.Env]:
    """One circuit-building Planted environment per kind of ``track``, over ``seeds`` (``track_envs.planted_env``)."""
    row = planted_benchmark(track)
    return {kind: planted_env(kind, seeds, row.generator) for kind in row.kinds}


class PrivateCache:
    """A temporary directory for secret planted models (and their sweep tables), never the disk
    cache, where their directory names would give the seeds away: :meth:`scope` points the
    package's cache at it, :meth:`close` removes it. One per run, shared by its secret parts."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="circuit_gym_private_")

    @contextmanager
    def scope(self) -> Iterator[None]:
        before = os.environ.get("CIRCUIT_GYM_CACHE")
        os.environ["CIRCUIT_GYM_CACHE"] = self._dir.name
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("CIRCUIT_GYM_CACHE", None)
            else:
                os.environ["CIRCUIT_GYM_CACHE"] = before

    def close(self) -> None:
        self._dir.cleanup()


def episode_scores(kind: str, seed: int, played: dict, track: str = TRACK) -> dict:
    """The ground-truth scores of one played episode (a row of ``solvers.episodes.play``) on the
    model of ``seed`` of ``track``'s generator version."""
    truth = truth_of(seed, planted_benchmark(track).generator).circuit(kind)
    ranking = played["ranking"].order().tolist()
    precision, recall = precision_recall(played["order"], truth)
    return {"kind": kind, "seed": seed, "order": [int(h) for h in played["order"]], "ranking": ranking,
            "precision": precision, "recall": recall, "auc": ranking_auc(ranking, truth),
            "exact": float(set(played["order"]) == set(truth)), "faithfulness": played["faithfulness"],
            "circuit_size": played["circuit_size"], "forward_passes": played["forward_passes"]}  # fmt: skip


Play = Callable[[gym.Env, str], dict]  # (inner env of the episode's model, task) -> a played row


def _player(env: gym.Env, play_inner: Play, weights: dict[int, str], track: str):
    """``(kind, seed) -> row`` on the kind's environment ``env`` (``scoring.play_episodes``'
    signature); records each model's weights hash."""

    def play_one(kind: str, seed: int, detailed: bool = True) -> dict:
        planted: PlantedEnv = env.unwrapped
        inner = planted.inner_for(seed)
        weights[seed] = inner.unwrapped.model.circuit_gym_info.weights_hash
        return episode_scores(kind, seed, play_inner(inner, task_name(kind)), track)

    return play_one


def _solver_play(solver: CircuitSolver) -> Play:
    return lambda inner, task: play_episode(inner, solver, task, BATCH_INDEX)


def _sandbox_play(sandbox: SandboxedPolicy) -> Play:
    """Every action and the final scores of the sandboxed policy validated."""

    def run(inner: gym.Env, task: str) -> dict:
        n = inner.unwrapped.n_total
        return play(inner, task, BATCH_INDEX, lambda obs, info: check_action(sandbox.act(obs, info["action_mask"]), info["action_mask"]),
                    lambda obs, info: check_scores(sandbox.rank_heads(obs), n), "policy")  # fmt: skip

    return run


def _feature_choice(envs: dict[str, gym.Env], track: str) -> dict:
    """The ``feature`` rule's column and sign, chosen on the public seeds' first observations."""
    row = planted_benchmark(track)
    observations, truths = [], []
    for kind in row.kinds:
        for seed in row.public_seeds:
            inner = envs[kind].unwrapped.inner_for(seed)
            obs, _ = inner.reset(options={"task": task_name(kind), "batch_index": BATCH_INDEX})
            observations.append(obs)
            truths.append(truth_of(seed, row.generator).circuit(kind))
    column, sign, auc = rules.choose_column(observations, truths)
    return {"column": rules.COLUMNS[column], "index": column, "sign": sign, "public_auc": auc}


def reference_solver(name: str, envs: dict[str, gym.Env], track: str = TRACK) -> tuple[CircuitSolver, dict]:
    """A builtin of this track, and what it chose on ``track``'s public seeds (``{}`` for most)."""
    row = planted_benchmark(track)
    if name in white_boxes("circuit"):
        return white_boxes("circuit")[name].build(), {}
    if name == "random":
        return rules.random_rule(0), {}
    if name == "shallow_first":
        return rules.shallow_first(), {}
    if name == "feature":
        choice = _feature_choice(envs, track)
        return rules.feature_rule(choice["index"], choice["sign"]), {"feature": choice}
    if name == "memoriser":
        public = (truth_of(s, row.generator).circuit(k) for s in row.public_seeds for k in row.kinds)
        return rules.memoriser(public), {}
    raise ValueError(f"builtin must be one of {sorted(track_builtins())}, got {name!r}")


def track_builtins() -> tuple[str, ...]:
    return (*white_boxes("circuit"), *RULES)


def summary(rows: list[dict], track: str = TRACK) -> dict:
    """Per kind of ``track`` and ``"all"``: episodes, and the mean and 95% t-interval of each of :data:`METRICS`."""
    out = {}
    for key in (*planted_benchmark(track).kinds, "all"):
        sel = [r for r in rows if key in ("all", r["kind"])]
        if not sel:
            continue
        out[key] = {"episodes": len(sel)}
        for m in METRICS:
            out[key][m], out[key][f"{m}_ci95"] = mean_ci95([float(r[m]) for r in sel])
    return out


def episodes(n_private: int, track: str = TRACK) -> int:
    """Episodes a run of ``track`` plays, with ``n_private`` private seeds given (any: the secret models)."""
    return planted_benchmark(track).episodes(n_private > 0)


def weights_hash(weights: dict[int, str], seeds: tuple[int, ...]) -> str:
    """One hash of the planted models of ``seeds`` (in that order), by their weights hashes."""
    return hashlib.sha256("\n".join(f"{s}:{weights[s]}" for s in seeds).encode()).hexdigest()


class PlantedRun(TrackRun):
    """A run on the Planted track ``track``: one part per kind, on the public seeds' models and, with
    the seed file, on the secret models (generated into a :class:`PrivateCache`)."""

    methods = ("rank_heads", "act")
    builtin_spec = "circuit_gym.solvers.planted_rules:ScoreRule"

    def __init__(self, track: str = TRACK) -> None:
        self.row, self.name = planted_benchmark(track), track
        self.envs: dict[str, gym.Env] = {}
        self.weights: dict[int, str] = {}  # the public models' weights hashes, as they are played
        self.chosen: dict = {}  # what a builtin chose on the public seeds
        self.cache: PrivateCache | None = None

    def builtins(self) -> tuple[str, ...]:
        return track_builtins()

    def parts(self, sample: bool) -> list[Part]:
        return [Part(f"{self.name}: public seeds ({kind})", tuple((kind, s) for s in self.row.public_seeds),
                     self._public_env, self._play(self.weights), owns_env=False)
                for kind in self.row.kinds]  # fmt: skip

    def _public_env(self, jobs: tuple[tuple[str, int], ...]) -> gym.Env:
        return self.envs[jobs[0][0]]  # one kind a part

    def _secret_env(self, jobs: tuple[tuple[str, int], ...]) -> gym.Env:
        return planted_env(jobs[0][0], tuple(s for _, s in jobs), self.row.generator)

    def _play(self, weights: dict[int, str]) -> Callable[[gym.Env, Play], PlayOne]:
        return lambda env, play_inner: _player(env, play_inner, weights, self.name)

    def open(self) -> None:
        self.envs = make_planted_envs(self.row.public_seeds, self.name)

    def builtin_player(self, name: str) -> Play:
        solver, self.chosen = reference_solver(name, self.envs, self.name)
        return _solver_play(solver)

    def sandbox_player(self, sandbox: SandboxedPolicy) -> Play:
        return _sandbox_play(sandbox)

    def private_parts(self, seeds: tuple[int, ...]) -> list[Part]:
        self.private, self.cache = private_model_seeds(seeds, self.name), PrivateCache()
        return [Part(f"{self.name}: private models ({kind})", tuple((kind, s) for s in self.private),
                     self._secret_env, self._play({}),
                     scope=self.cache.scope)
                for kind in self.row.kinds]  # fmt: skip

    def scores(self, main: list[dict], other: list[dict]) -> dict:
        return {"summary": summary(main, self.name), **self.chosen, "episodes": main}

    def private_record(self, hidden: list[dict]) -> dict:
        return {"n_models": len(self.private), "scores": {"summary": summary(hidden, self.name)}}

    def definition(self) -> dict:
        return definition(self.name)

    def model(self) -> SimpleNamespace:
        """The public models, by their weights hashes (None after a sample run, which plays some only)."""
        whole = len(self.weights) == len(self.row.public_seeds)
        models = weights_hash(self.weights, self.row.public_seeds) if whole else None
        return SimpleNamespace(circuit_gym_info=SimpleNamespace(name=f"planted-v{self.row.generator}",
                                                                weights_hash=models))  # fmt: skip

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def score_planted(name: str, policy_spec: str | None = None, checkpoint: str | None = None,
                  builtin: str | None = None, private_seeds: str | Path | None = None,
                  require_isolation: bool | None = None, sample: int | None = None, track: str = TRACK) -> dict:  # fmt: skip
    """Score one circuit-building policy (``policy_spec``, sandboxed) or builtin on the Planted
    track ``track`` (a row of :data:`PLANTED_BENCHMARKS`); the result dict (``track`` the row's,
    ``status`` "scored" or "failed").

    ``sample``: the canary's run (``circuit_gym/leaderboard/canary.py``): only the first ``sample``
    public episodes (kind by kind, seed by seed), their rows under ``scores["episodes"]``, no
    summaries, ``status`` "sample" (the board refuses it)."""
    return score_track(PlantedRun(track), name, policy_spec, checkpoint, builtin, private_seeds, require_isolation,
                       sample)  # fmt: skip
