"""Score a policy on a transfer track (benchmark v8's, in force): held-out *models* as well as held-out tasks.

``benchmark.transfer_definition(track)`` says what is scored. Every policy plays, on the test
split, every task of both splits on every public zoo member (training models and held-out
models), and its episodes are summarised in four quadrants (``benchmark.QUADRANTS``: seen /
unseen task x seen / unseen model). With the maintainers' private model (``private_model``: a
directory trained by the public recipe with a secret seed, never committed) and private seed
file, it also plays the held-out tasks on that model at the file's first seeds; the result keeps
only summaries, the private model's weights hash and the seed file's SHA-256, so verifying it
needs the same weights (``circuit_gym/leaderboard/verification.py``) and nobody else can reproduce it.
A row that ranks on several private models (``TransferBenchmark.private_models``: v8's two) plays
each on the held-out tasks its own card gates, at its own seed file's first seeds, and records the
summary over every private episode (the board's column) and one summary per model
(``circuit_gym/leaderboard/private_models.py``).

The per-episode play is each kind's own (``circuit_gym/leaderboard/single_head_play.py``: oracle
recovery; ``circuit_gym/leaderboard/circuit_play.py``: circuit building, with CPR and CMD); the checks, sandbox, provenance and content hash are the skeleton's
(``circuit_gym/leaderboard/scoring.py``). What is new here is only the cells: (model, tasks, seeds)
(:class:`TransferRun`).

``features`` picks the observation the policy is given (``circuit_gym.envs.features``: the
environment's ``features`` argument). The causal columns are attribution and EAP-IG passes made
for the policy, so their passes count as its compute, and a result scored with them says so in
``provenance["features"]`` (rescoring it uses the same observation).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

from circuit_gym import benchmark as B
from circuit_gym.embedded import is_embedded
from circuit_gym.envs import HideOracleInfo
from circuit_gym.envs.features import DEFAULT_FEATURES
from circuit_gym.leaderboard import circuit_play, single_head_play
from circuit_gym.leaderboard.private_models import (
    MODELS_KEY,
    PrivateModelArg,
    as_private_models,
    check_count,
    distinct_weights,
    primary_seeds,
)
from circuit_gym.leaderboard.scoring import Part, PlayersRun, PlayOne, read_private_seeds, score_track
from circuit_gym.track_envs import board_env

TRACKS = (B.SINGLE_HEAD, B.CIRCUIT)
PRIVATE = "private"  # the private model's name in results (its weights are named by their hash)
# The private model must have the zoo's head grid and the zoo tokenizer's tasks.
PRIVATE_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
# A private model must perform at least this many held-out tasks to rank a board.
MIN_PRIVATE_TASKS = 2


@dataclass(frozen=True)
class Cell:
    """Episodes of ``tasks`` x ``seeds`` on one model (``path``: its directory, None for a shipped
    one); ``cache``: whether its tables may reach the disk cache (never for the private model);
    ``private``: which private model it is (0, 1, ...; None: a public one)."""

    model: str
    path: str | None
    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    cache: bool
    private: int | None = None

    @property
    def key(self) -> str:
        """The run's name of its environment (each private model its own; all load as ``PRIVATE``)."""
        return self.model if self.private in (None, 0) else f"{PRIVATE}-{self.private + 1}"

    def jobs(self) -> list[tuple[str, int]]:
        return [(task, seed) for task in self.tasks for seed in self.seeds]


def check_private_model(path: str | Path, bench: B.TransferBenchmark) -> tuple[Path, tuple[str, ...]]:
    """``(directory, the held-out tasks served on it)`` if ``path`` holds a model of the zoo's shape
    whose card says it performs at least :data:`MIN_PRIVATE_TASKS` of the held-out tasks (its
    inclusion gate: a task it does not perform is never served on it), else a clear error, before
    any scoring."""
    from circuit_gym.models.loading import embedded_dir

    directory = Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(f"private model directory {directory} does not exist")
    missing = [f for f in PRIVATE_MODEL_FILES if not (directory / f).is_file()]
    if missing:
        raise FileNotFoundError(f"private model directory {directory} lacks {', '.join(missing)}")
    config = json.loads((directory / "config.json").read_text())
    zoo = json.loads((embedded_dir(bench.train_models[0]) / "config.json").read_text())
    shape_keys = ("n_layers", "n_heads", "d_model", "d_head", "d_vocab")
    got, want = ({k: c.get(k) for k in shape_keys} for c in (config, zoo))
    if got != want:
        raise ValueError(f"private model {directory} has another shape than the zoo's: {got} != {want}")
    # The inclusion gate is per model, as on the public zoo: a held-out task the private model
    # does not perform is never served on it; its card (scripts/model_card.py --path DIR) says which.
    card_path = directory / "card_metrics.json"
    if not card_path.is_file():
        raise FileNotFoundError(
            f"private model {directory} has no card_metrics.json: measure its inclusion gate first "
            f"(python scripts/model_card.py --model private --path {directory} --ablation resample "
            "--reference stdlib+taskstyle: measured as the public zoo's members are)"
        )
    included = set(json.loads(card_path.read_text())["suite"]["included"])
    served = tuple(t for t in bench.held_out_tasks if t in included)
    if len(served) < MIN_PRIVATE_TASKS:
        raise ValueError(
            f"private model {directory} passes its inclusion gate on held-out tasks {list(served)} only "
            f"(at least {MIN_PRIVATE_TASKS} needed): draw and train another (docs/private_model.md)"
        )
    return directory, served


def check_card_weights(directory: Path, weights_hash: str) -> None:
    """ValueError unless the private model's card was measured on the weights being scored."""
    card = json.loads((directory / "card_metrics.json").read_text())
    if card.get("weights_hash") != weights_hash:
        raise ValueError(
            f"private model {directory}: its card_metrics.json was measured on other weights "
            f"({card.get('weights_hash')}, these: {weights_hash}); measure it again"
        )


def feature_sets(track: str) -> tuple[str, ...]:
    """The observations a policy may ask for on ``track``."""
    from circuit_gym.envs.features import CIRCUIT_FEATURE_SETS, FEATURE_SETS

    return tuple(CIRCUIT_FEATURE_SETS if track == B.CIRCUIT else FEATURE_SETS)


def cell_env(track: str, cell: Cell, features: str, bench: B.TransferBenchmark) -> gym.Env:
    """The environment of ``cell`` on ``track`` (``benchmark.SINGLE_HEAD`` or ``benchmark.CIRCUIT``)."""
    env = board_env(track, cell.model, max(cell.seeds) + 1, tasks=cell.tasks, cache=cell.cache,
                    model_path=cell.path, transfer=bench, features=features)  # fmt: skip
    return HideOracleInfo(env) if track == B.SINGLE_HEAD else env


# Per track: the players (builtin, sandboxed) and the policy's methods.
_TRACK = {B.SINGLE_HEAD: single_head_play.SINGLE_HEAD, B.CIRCUIT: circuit_play.CIRCUIT}


def summary(track: str, rows: list[dict]) -> dict:
    """One group of episodes: best-of-k recovery (and the proposed circuits' CPR / CMD) on the
    single-head track; CPR, CMD, faithfulness, size and passes on the circuit track."""
    if not rows:
        return {}
    if track == B.CIRCUIT:
        return circuit_play.summary(rows)["all"]
    from circuit_gym.circuits.preferences import areas_summary

    return {**single_head_play.recovery_by_k(rows), "circuits": areas_summary(rows)}


def transfer_scores(track: str, rows: list[dict], bench: B.TransferBenchmark) -> dict:
    """A result's ``scores``: per quadrant, per (model, task), and the rows."""
    quadrants = {
        q: summary(track, [r for r in rows if bench.quadrant(r["task"], r["model"]) == q])
        for q in B.QUADRANTS
    }
    per_cell = {
        m: {
            t: summary(track, [r for r in rows if r["model"] == m and r["task"] == t])
            for t in bench.all_tasks()
        }
        for m in bench.public_models()
    }
    out = {"quadrants": quadrants, "per_model_task": per_cell, "episodes": rows}
    if track == B.SINGLE_HEAD:  # the circuit track's summaries hold their passes already
        out["compute"] = single_head_play.compute(rows)
    return out


def cells(track: str, private: tuple[tuple[Path, tuple[str, ...], tuple[int, ...]], ...],
          bench: B.TransferBenchmark) -> list[Cell]:  # fmt: skip
    """The public cells (every public model, every task its card's inclusion gate admits, the
    track's seeds), then each private model's (``private``: its directory, the held-out tasks it
    performs and its seed file's seeds, of which the track's first are played). A task a model does
    not perform is never served on it (on zoo v1 every member performs every task of both splits; a
    zoo v2 member trained with the knob may not)."""
    out = [Cell(m, None, bench.tasks_of(m), bench.seeds_of(track), True) for m in bench.public_models()]
    for i, (directory, served, seeds) in enumerate(private):
        out.append(
            Cell(PRIVATE, str(directory), served, tuple(seeds[: bench.n_private_seeds(track)]), False, i)
        )
    return out


class TransferRun(PlayersRun):
    """A run on the transfer track of ``kind`` (single head or circuit) of ``bench``: one part per
    cell (:func:`cells`), every environment built before the policy plays."""

    def __init__(self, kind: str, bench: B.TransferBenchmark, features: str = DEFAULT_FEATURES,
                 models: tuple[str, ...] | None = None, private_model: PrivateModelArg = None,
                 private_seeds: str | Path | None = None) -> None:  # fmt: skip
        if kind not in TRACKS:
            raise ValueError(f"track must be one of {TRACKS}, got {kind!r}")
        if features not in feature_sets(kind):
            raise ValueError(
                f"features must be one of {feature_sets(kind)} on the {kind} track, got {features!r}"
            )
        private = as_private_models(private_model, private_seeds)
        self.seed_file = primary_seeds(private, private_seeds)
        if bool(private) != (self.seed_file is not None):
            raise ValueError(
                "give both private_model and private_seeds (the private model is scored on private seeds), or neither"
            )
        self.bench, self.features, self.models = bench, features, models
        self.name, self.players = bench.track(kind), _TRACK[kind]  # self.kind: the players' kind
        check_count(private, bench.private_models, self.name)
        self.private = private
        self.checked = tuple(check_private_model(m.directory, bench) for m in private)
        self.private_cells: tuple[tuple[Path, tuple[str, ...], tuple[int, ...]], ...] = ()
        self.seed_shas: tuple[str, ...] = ()  # each private model's seed file's SHA-256
        self.envs: dict[str, gym.Env] = {}

    def check(self, private: tuple[int, ...] | None) -> None:
        """Each private model's seed file holds the track's seeds (``private``: the run's seed file's)."""
        if private is None:
            return
        wanted = self.bench.n_private_seeds(self.kind)
        read = [read_private_seeds(m.seeds) for m in self.private]
        for model, (seeds, _) in zip(self.private, read, strict=True):
            if len(seeds) < wanted:
                raise ValueError(
                    f"private seed file {model.seeds} holds {len(seeds)} seeds; the {self.kind} transfer track "
                    f"uses {wanted}"
                )
        self.private_cells = tuple(
            (d, served, seeds) for (d, served), (seeds, _) in zip(self.checked, read, strict=True)
        )
        self.seed_shas = tuple(sha for _, sha in read)

    def parts(self, sample: bool) -> list[Part]:
        plan = cells(self.kind, self.private_cells, self.bench)
        plan = plan[:1] if sample else plan
        if self.models is not None:
            unknown = sorted(set(self.models) - set(self.bench.public_models()))
            if unknown:
                raise ValueError(
                    f"models must be public zoo members {list(self.bench.public_models())}, got {unknown}"
                )
            plan = [c for c in plan if c.model in self.models or c.private is not None]
        unshipped = [c.model for c in plan if c.private is None and not is_embedded(c.model)]
        if unshipped:
            raise ValueError(
                f"benchmark {self.bench.version}'s models {unshipped} are not shipped in this release"
            )
        self.plan = plan
        return [self._part(c) for c in plan if c.private is None]

    def _part(self, cell: Cell) -> Part:
        def play(env: gym.Env, who) -> PlayOne:
            play_one = who(env)
            # a private episode's row names which private model played it (the record's per-model summaries)
            mark = {} if cell.private is None else {"private_model": cell.private}
            return lambda task, seed, detailed=True: {
                "model": cell.model,
                **mark,
                **play_one(task, seed, detailed),
            }

        return Part(f"{self.name}: {cell.key}", tuple(cell.jobs()), lambda jobs: self.envs[cell.key], play,
                    owns_env=False)  # fmt: skip

    def _private_plan(self) -> list[Cell]:
        return [c for c in self.plan if c.private is not None]

    def open(self) -> None:
        self.envs = {c.key: cell_env(self.kind, c, self.features, self.bench) for c in self.plan}
        for cell in self._private_plan():  # each card measured on the weights it gates
            check_card_weights(Path(str(cell.path)), self._weights(cell.key))
        distinct_weights([self._weights(c.key) for c in self._private_plan()])

    def _weights(self, key: str) -> str:
        return self.envs[key].unwrapped.model.circuit_gym_info.weights_hash

    def private_parts(self, seeds: tuple[int, ...]) -> list[Part]:
        return [self._part(c) for c in self._private_plan()]

    def scores(self, main: list[dict], other: list[dict]) -> dict:
        return transfer_scores(self.kind, main, self.bench)

    def _model_record(self, cell: Cell, hidden: list[dict]) -> dict:
        """One private model's record: its weights, seeds used, tasks served and its summaries."""
        return {"weights_hash": self._weights(cell.key), "n_seeds": len(cell.seeds), "tasks": list(cell.tasks),
                "scores": {"overall": summary(self.kind, hidden),
                           "per_task": {t: summary(self.kind, [r for r in hidden if r["task"] == t])
                                        for t in cell.tasks}}}  # fmt: skip

    def private_record(self, hidden: list[dict]) -> dict:
        plan = self._private_plan()
        if len(plan) == 1:  # one private model: its fields at the top level
            return self._model_record(plan[0], hidden)
        # several private models: the overall summary over every private episode (the board's column)
        # and per task over the models serving it, then each model's own record with its seed file
        tasks = [t for t in self.bench.held_out_tasks if any(t in c.tasks for c in plan)]
        models = [{**self._model_record(c, [r for r in hidden if r["private_model"] == i]),
                   "seed_file_sha256": self.seed_shas[i]}
                  for i, c in enumerate(plan)]  # fmt: skip
        return {"n_seeds": len(plan[0].seeds), "tasks": tasks,
                "scores": {"overall": summary(self.kind, hidden),
                           "per_task": {t: summary(self.kind, [r for r in hidden if r["task"] == t]) for t in tasks}},
                MODELS_KEY: models}  # fmt: skip

    def definition(self) -> dict:
        return self.bench.definition(self.kind)

    def model(self):
        return self.envs[self.plan[0].model].unwrapped.model

    def provenance(self) -> dict:
        weights = {c.model: self._weights(c.key) for c in self.plan if c.private is None}
        # the default observation is left unsaid (earlier results lack the key)
        features = {} if self.features == DEFAULT_FEATURES else {"features": self.features}
        return {"model": "zoo", "weights_hash": None, "weights_hashes": weights, **features}

    def fields(self) -> dict:
        return {} if self.models is None else {"partial": sorted(self.models)}

    def close(self) -> None:
        for env in self.envs.values():
            env.close()


def score_transfer(name: str, track: str = B.SINGLE_HEAD, policy_spec: str | None = None,
                   checkpoint: str | None = None, builtin: str | None = None,
                   private_model: PrivateModelArg = None, private_seeds: str | Path | None = None,
                   require_isolation: bool | None = None, models: tuple[str, ...] | None = None,
                   sample: int | None = None, features: str = DEFAULT_FEATURES, version: str = B.IN_FORCE) -> dict:  # fmt: skip
    """Score one policy (sandboxed) or builtin on a transfer track; the result dict (``track`` the
    version's, e.g. ``"v8-single-head"`` or ``"v8-circuit"``, ``status`` "scored" or "failed").

    ``private_model`` needs ``private_seeds`` (the private model is played at the seed file's
    first seeds, without disk cache); where the version's row ranks on several private models,
    ``private_model`` is a sequence of them (``private_models.PrivateModel``: each with its seed
    file; or directories, each on ``private_seeds``), exactly the row's count. ``models``: only
    these public models (a quick look; such a result is marked ``partial`` and the board refuses it). ``sample``: the canary's run
    (``circuit_gym/leaderboard/canary.py``): only the first ``sample`` episodes of the first public model,
    their rows under ``scores["episodes"]``, ``status`` "sample" (the board refuses it).
    ``features``: the observation (:func:`feature_sets`), recorded in the provenance unless the default.
    ``version``: the transfer benchmark's row (``benchmark.TRANSFER_BENCHMARKS``: its zoo and splits).
    """
    run = TransferRun(track, B.transfer_benchmark(version), features, models, private_model, private_seeds)
    return score_track(run, name, policy_spec, checkpoint, builtin, run.seed_file, require_isolation, sample)


def _line(track: str, s: dict) -> str:
    if not s:
        return "no episodes"
    if track.endswith(B.CIRCUIT):
        return f"CPR {s['cpr']:.3f}, CMD {s['cmd']:.3f} ({s['episodes']} episodes)"
    ci = ", ".join("nan" if v is None else f"{v:.3f}" for v in s["k1"]["recovery_ci95"])
    return (f"best-of-1 {s['k1']['recovery']:.3f} [{ci}], best-of-5 {s['k5']['recovery']:.3f} "
            f"({s['k1']['episodes']} episodes)")  # fmt: skip


def headline(result: dict) -> list[str]:
    """One line per quadrant (and the private model's), for the terminal."""
    if result["status"] != "scored":
        return [f"failed: {result['failure']['type']}: {result['failure']['reason']}"]
    track = result["track"]
    lines = [f"{q}: {_line(track, s)}" for q, s in result["scores"]["quadrants"].items()]
    if "private" in result:
        n = len(result["private"].get(MODELS_KEY, ())) or 1
        label = "private model" if n == 1 else f"{n} private models"
        lines.append(f"{label}, held-out tasks: {_line(track, result['private']['scores']['overall'])}")
    return lines
