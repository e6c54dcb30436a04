"""Every board version and track in one table, and the one function that scores an entry on any of them.

A version of the board is a row of :data:`BENCHMARKS` (:class:`Benchmark`): its transfer benchmark
(``circuit_gym.benchmark``: zoo, splits, seeds, private model), its Planted track's row
(``planted_scorer.PLANTED_BENCHMARKS``, named after the transfer row) and its edge track's row
(``edge_benchmark.EDGE_BENCHMARKS``). Its four tracks (single head, circuit building, Planted,
edges) follow from those rows, and the version in force (``benchmark.IN_FORCE``) is the only
default. Adding a version is its rows there and one row here (v8: zoo v3, and its knock-out track). A retired version's
tracks leave the tree and are refused by name, naming the version in force (:data:`REMOVED`);
their final tables: ``docs/archive.md``.

A row (:class:`Track`) holds what the rest of the leaderboard asks of a track: its definition
(the benchmark version, tasks, models and seeds its results are checked against), how an entry
is scored on it (its scorer, whose environment comes from the one builder
``circuit_gym.track_envs``), its builtins, the episodes a run plays and what one costs (the
estimate's model of the work), its terminal summary and board table, its results folder, and
whether the board ranks on it yet. :func:`score_reference` serves every row: the command
line's ``score``, the canary, ``rescore-references`` and ``render --rescore`` all call it.

Adding a track is a row here plus its table renderer (and its scorer, if it plays differently).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from circuit_gym import benchmark as B
from circuit_gym.envs.features import DEFAULT_FEATURES
from circuit_gym.leaderboard import paths
from circuit_gym.leaderboard.edge_benchmark import EDGE_BENCHMARKS, EdgeBenchmark
from circuit_gym.leaderboard.private_models import PrivateModelArg


@dataclass(frozen=True)
class Request:
    """What one scoring run is asked to do: who plays (``policy_spec`` sandboxed, or a
    ``builtin``), with what, and on which seeds and models."""

    policy_spec: str | None = None
    builtin: str | None = None
    checkpoint: str | None = None
    private_seeds: str | Path | None = None
    private_model: PrivateModelArg = None  # one, or (v8) the row's several: private_models.PrivateModel
    require_isolation: bool | None = None
    sample: int | None = None  # the canary's run: only the first episodes, status "sample"
    features: str = DEFAULT_FEATURES

    @classmethod
    def of(cls, policy: str, **kwargs) -> Request:
        """The request for ``policy`` as a manifest or a result's provenance writes it:
        ``package.module:factory`` or ``builtin:NAME``."""
        if policy.startswith("builtin:"):
            return cls(builtin=policy.removeprefix("builtin:"), **kwargs)
        return cls(policy_spec=policy, **kwargs)


@dataclass(frozen=True)
class Cost:
    """The estimate's model of a run: ``episodes x seconds per episode`` of a submitted policy,
    measured (``measured`` says with which policy, where and how) on a cold cache (no oracle table computed yet:
    the first run on a machine) and on a warm one. None: not measured; the estimate then uses
    what the track's committed random reference took where it was scored."""

    cold_s: float | None  # seconds per episode, cold cache
    warm_s: float | None  # seconds per episode, warm cache
    measured: str = ""  # where and how (command, machine, load, date)


@dataclass(frozen=True)
class Track:
    name: str
    benchmark: str  # the board version it belongs to (a key of BENCHMARKS)
    definition: Callable[[], dict]
    score: Callable[[str, Request], dict]  # (entry name, request) -> result
    builtins: Callable[[], tuple[str, ...]]
    episodes: Callable[[int], int]  # episodes a run plays with n private seeds
    headline: Callable[[dict], list[str]]  # a scored result, for the terminal
    results_dir: Path
    cost: Cost
    canary_episodes: int  # the canary's prefix (exact greedy search plays ~2,000 passes an episode)
    features: Callable[[], tuple[str, ...]] = lambda: (DEFAULT_FEATURES,)
    # ranked on the maintainers' private models: the transfer, edge and knock-out tracks
    private_model: bool = False


IN_FORCE = B.IN_FORCE  # the one place it is set: circuit_gym.benchmark (the main job reads it too)
# Retired tracks that left the tree: refused by name, naming the version in force (docs/archive.md
# holds their final tables and why each retired; docs/archive.md names the tag of the last commit that
# scores them). Each is named by what it was, not by its benchmark's version.
REMOVED = {
    "single-head": "held-out tasks on one model, toy", "circuit": "circuit building on one model, toy",
    "transfer-single-head": "held-out tasks and models, zoo v1", "transfer-circuit": "circuit building on zoo v1",
    "planted": "Planted circuit building on planted generator 2", "edges": "circuits as edges on zoo v1",
    "v7-single-head": "held-out tasks and models, zoo v2", "v7-circuit": "circuit building on zoo v2",
    "v7-planted": "Planted circuit building on planted generator 3 (zoo v2's board)",
    "v7-edges": "circuits as edges on zoo v2 (edge protocol 1)",
}  # fmt: skip


def _transfer(kind: str, version: str) -> Callable[[str, Request], dict]:
    def score(name: str, r: Request) -> dict:
        from circuit_gym.leaderboard.transfer_scorer import score_transfer

        return score_transfer(name, kind, policy_spec=r.policy_spec, checkpoint=r.checkpoint, builtin=r.builtin,
                              private_model=r.private_model, private_seeds=r.private_seeds,
                              require_isolation=r.require_isolation, sample=r.sample, features=r.features,
                              version=version)  # fmt: skip

    return score


def _planted(track: str) -> Callable[[str, Request], dict]:
    def score(name: str, r: Request) -> dict:
        from circuit_gym.leaderboard.planted_scorer import score_planted

        return score_planted(name, r.policy_spec, r.checkpoint, r.builtin, r.private_seeds, r.require_isolation,
                             r.sample, track=track)  # fmt: skip

    return score


def _white_boxes(kind: str) -> Callable[[], tuple[str, ...]]:
    def names() -> tuple[str, ...]:
        from circuit_gym.solvers.white_box import builtins

        return tuple(builtins(kind))

    return names


def _planted_builtins() -> tuple[str, ...]:
    from circuit_gym.leaderboard.planted_scorer import track_builtins

    return track_builtins()


def _transfer_features(kind: str) -> Callable[[], tuple[str, ...]]:
    def names() -> tuple[str, ...]:
        from circuit_gym.leaderboard.transfer_scorer import feature_sets

        return feature_sets(kind)

    return names


def _transfer_episodes(kind: str, version: str) -> Callable[[int], int]:
    """Every task each public model serves (its card's gate), then the held-out tasks on each private
    model (all of them: which it performs is read from its card only when it is scored)."""

    def episodes(n_private: int) -> int:
        bench = B.transfer_benchmark(version)
        public = sum(len(bench.tasks_of(m)) for m in bench.public_models()) * len(bench.seeds_of(kind))
        per_model = len(bench.held_out_tasks) * min(n_private, bench.n_private_seeds(kind))
        return public + bench.private_models * per_model

    return episodes


def _planted_episodes(track: str) -> Callable[[int], int]:
    def episodes(n_private: int) -> int:
        from circuit_gym.leaderboard.planted_scorer import episodes as planted_episodes

        return planted_episodes(n_private, track)

    return episodes


def _headline(module: str, function: str) -> Callable[[dict], list[str]]:
    def lines(result: dict) -> list[str]:
        import importlib

        return getattr(importlib.import_module(module), function)(result)

    return lines


def _planted_definition(track: str) -> Callable[[], dict]:
    def definition() -> dict:
        from circuit_gym.leaderboard.planted_scorer import definition as planted_definition

        return planted_definition(track)

    return definition


def _planted_row(track: str, benchmark: str, results_dir: Path, cost: Cost) -> Track:
    """A Planted track's row: its scorer, definition and episodes read ``planted_scorer``'s row ``track``."""
    return Track(
        name=track, benchmark=benchmark, definition=_planted_definition(track), score=_planted(track),
        builtins=_planted_builtins, episodes=_planted_episodes(track),
        headline=_headline("circuit_gym.leaderboard.planted_tables", "planted_headline"),
        results_dir=results_dir, cost=cost, canary_episodes=1,
    )  # fmt: skip


# A submitted policy's seconds per episode on v8's single-head track, measured on this machine
# (243.2 s cold and 53.7 s warm for 272 episodes, load 0.7 before); a track without one estimates
# from its random reference's scoring time.
_V8_SINGLE_HEAD_COST = Cost(
    0.89,
    0.20,
    "README's example policy from a fresh clone, idle 2-core machine, "
    "2026-12-02, `python benchmarks/speed_targets.py --parts score`",
)
_KIND_DIRS = {B.SINGLE_HEAD: ".", B.CIRCUIT: "circuit"}


def _edges(track: str) -> Callable[[str, Request], dict]:
    def score(name: str, r: Request) -> dict:
        from circuit_gym.leaderboard.edge_scorer import score_edges

        return score_edges(name, track, policy_spec=r.policy_spec, checkpoint=r.checkpoint, builtin=r.builtin,
                           private_seeds=r.private_seeds, private_model=r.private_model,
                           require_isolation=r.require_isolation, sample=r.sample)  # fmt: skip

    return score


def _edge_builtins() -> tuple[str, ...]:
    """The edge references: the registry of references that score the candidates, as it is now."""
    from circuit_gym.leaderboard.edge_scorer import reference_names

    return reference_names()


def _knockout_score(track: str) -> Callable[[str, Request], dict]:
    def score(name: str, r: Request) -> dict:
        from circuit_gym.envs.knockout import SCORES
        from circuit_gym.leaderboard.knockout_scorer import score_knockout

        # the observation's per-head scores the entry reads (and pays for): ``features``, as the
        # transfer tracks' observation; the command line's default (DEFAULT_FEATURES) means the track's
        scores = SCORES[0] if r.features == DEFAULT_FEATURES else r.features
        return score_knockout(name, track, policy_spec=r.policy_spec, checkpoint=r.checkpoint, builtin=r.builtin,
                              private_seeds=r.private_seeds, require_isolation=r.require_isolation,
                              sample=r.sample, scores=scores, private_model=r.private_model)  # fmt: skip

    return score


def _knockout_row(track: str, benchmark: str, results_dir: Path) -> Track:
    """A knock-out track's row (``knockout_scorer.KNOCKOUT_BENCHMARKS[track]``): public planted seeds
    and trained models; privately, the secret planted models of the seed file and (v8) the private
    zoo models, each on the tasks its card verifies."""

    def row():  # the scorer imports the environments: only when asked
        from circuit_gym.leaderboard.knockout_benchmark import knockout_benchmark

        return knockout_benchmark(track)

    def builtins() -> tuple[str, ...]:
        from circuit_gym.solvers.knockout import REFERENCES

        return tuple(REFERENCES)

    def features() -> tuple[str, ...]:
        from circuit_gym.envs.knockout import SCORES

        return (DEFAULT_FEATURES, *SCORES)

    return Track(
        name=track, benchmark=benchmark, definition=lambda: row().definition(), score=_knockout_score(track),
        builtins=builtins, episodes=lambda n_private: row().episodes(n_private > 0),
        headline=_headline("circuit_gym.leaderboard.knockout_scorer", "headline"), results_dir=results_dir,
        cost=Cost(None, None), canary_episodes=1, features=features, private_model=True,
    )  # fmt: skip


@dataclass(frozen=True)
class Benchmark:
    """One version of the board (a row of :data:`BENCHMARKS`): the rows its tracks are built from."""

    version: str
    transfer: B.TransferBenchmark  # zoo, splits, seeds and pinned settings of its transfer tracks
    edges: EdgeBenchmark  # its edge track (its transfer part reads ``transfer``'s models and tasks)
    costs: Mapping[str, Cost] = field(default_factory=dict)  # measured seconds per episode, per kind
    # Why the board does not rank on it yet (a version scored before it is put in force); None: it ranks.
    not_ranking: str | None = None
    knockout: str | None = (
        None  # its knock-out track (a key of knockout_scorer.KNOCKOUT_BENCHMARKS), from v8 on
    )

    def tracks(self) -> tuple[Track, ...]:
        """Its tracks in board order: single head, circuit building, Planted, edges, knock-out."""
        folder = paths.RESULTS_DIR / self.transfer.results_folder
        transfer = tuple(
            Track(
                name=self.transfer.track(kind),
                benchmark=self.version,
                definition=lambda kind=kind: B.transfer_definition(kind, self.version),
                score=_transfer(kind, self.version),
                builtins=_white_boxes(kind),
                episodes=_transfer_episodes(kind, self.version),
                headline=_headline("circuit_gym.leaderboard.transfer_scorer", "headline"),
                results_dir=folder / _KIND_DIRS[kind],
                cost=self.costs.get(kind, Cost(None, None)),
                canary_episodes=2 if kind == B.SINGLE_HEAD else 1,
                features=_transfer_features(kind),
                private_model=True,
            )
            for kind in (B.SINGLE_HEAD, B.CIRCUIT)
        )
        planted = _planted_row(
            self.transfer.track(B.PLANTED), self.version, folder / B.PLANTED, Cost(None, None)
        )
        knockout = (
            ()
            if self.knockout is None
            else (_knockout_row(self.knockout, self.version, folder / "knockout"),)
        )
        return (*transfer, planted, _edge_row(self.edges), *knockout)


def _edge_row(e: EdgeBenchmark) -> Track:
    """An edge track's row: its transfer part ranks on the private model, its planted part on the secret models."""
    return Track(
        name=e.track, benchmark=e.version, definition=e.definition, score=_edges(e.track), builtins=_edge_builtins,
        episodes=lambda n_private: e.episodes(n_private > 0),
        headline=_headline("circuit_gym.leaderboard.edge_scorer", "headline"),
        results_dir=paths.RESULTS_DIR / e.results_folder, cost=Cost(None, None), canary_episodes=1, private_model=True,
    )  # fmt: skip


# The board's versions (the board shows the one in force first: in_board_order); the retired ones
# left the tree (REMOVED, docs/archive.md).
BENCHMARKS: dict[str, Benchmark] = {
    # v8 (issues 55, 57, 60), in force: zoo v3's members (dormant backups by training) held out, its
    # two private models, planted generator 3, the edge track's protocol 2 and the knock-out track. It
    # came into force once every track's references were scored (the rule every version comes in by).
    "v8": Benchmark(
        "v8",
        B.transfer_benchmark("v8"),
        EDGE_BENCHMARKS["v8"],
        {B.SINGLE_HEAD: _V8_SINGLE_HEAD_COST},
        knockout="v8-knockout",
    ),
}
_ROWS = tuple(row for bench in BENCHMARKS.values() for row in bench.tracks())
TRACKS: dict[str, Track] = {t.name: t for t in _ROWS}
# The track `leaderboard score` plays unless told: the single-head track of the benchmark in force.
DEFAULT_TRACK = next(t.name for t in _ROWS if t.benchmark == IN_FORCE)


def track(name: str) -> Track:
    """The row ``name``; ValueError naming the tracks otherwise (a removed one's: naming the version
    in force and where its final tables are)."""
    if name in REMOVED:
        in_force = [t for t in TRACKS if TRACKS[t].benchmark == IN_FORCE]
        raise ValueError(
            f"track {name!r} ({REMOVED[name]}) is retired: the board ranks on benchmark {IN_FORCE}, tracks "
            f"{in_force}; its final tables, and the git tag that still scores it, are in docs/archive.md"
        )
    if name not in TRACKS:
        raise ValueError(f"track must be one of {list(TRACKS)}, got {name!r}")
    return TRACKS[name]


def in_board_order(names: Iterable[str]) -> list[str]:
    """Track ``names`` as the board shows them: the benchmark in force first, then the others in
    ``BENCHMARKS``' order (the order given within one benchmark)."""
    versions = list(BENCHMARKS)

    def place(name: str) -> tuple[bool, int]:
        version = track(name).benchmark
        return version != IN_FORCE, versions.index(version)

    return sorted(names, key=place)


def not_ranking(name: str) -> str | None:
    """Why the board does not rank on track ``name`` (None: it does): a version scored before it is
    put in force (its row's ``not_ranking``)."""
    return BENCHMARKS[track(name).benchmark].not_ranking


def check(row: Track, request: Request) -> None:
    """ValueError for what ``row`` cannot do, before anything runs (the scorer checks the rest)."""
    if request.builtin is not None and request.builtin not in row.builtins():
        raise ValueError(
            f"builtin on the {row.name} track is one of {sorted(row.builtins())}, got {request.builtin!r}"
        )
    if request.features not in row.features():
        raise ValueError(
            f"features on the {row.name} track is one of {list(row.features())}, got {request.features!r}"
        )
    if request.private_model is not None and not row.private_model:
        tracks = [t.name for t in _ROWS if t.private_model]
        raise ValueError(f"a private model belongs to the tracks {tracks}, not {row.name}")


def score_reference(track_name: str, name: str, request: Request) -> dict:
    """Score ``name`` on the track ``track_name`` as ``request`` says: the one entry point of every
    scoring (a user's entry, the canary's sample, a rescore of a reference or of a board entry)."""
    row = track(track_name)
    check(row, request)
    return row.score(name, request)


def reference_request(track_name: str, policy: str, checkpoint: str | None, features: str = DEFAULT_FEATURES,
                      **kwargs) -> Request:  # fmt: skip
    """The request that rescores an entry of ``track_name`` recorded with ``policy`` (``builtin:NAME``
    or a spec), ``checkpoint`` and ``features``."""
    track(track_name)  # a retired or unknown track is refused here
    return Request.of(policy, checkpoint=checkpoint, features=features, **kwargs)


def measured_seconds_per_episode(track_name: str, reference: Path) -> float:
    """What a committed reference result took per episode where it was scored (its
    ``diagnostics.wall_seconds`` over the episodes it played, public and private)."""
    result = json.loads(Path(reference).read_text())
    private = result.get("private") or {}
    n_private = private.get("n_seeds", private.get("n_models", 0))
    return result["diagnostics"]["wall_seconds"] / track(track_name).episodes(n_private)
