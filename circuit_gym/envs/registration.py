"""Every Gymnasium ID of the package, in one table, registered on ``import circuit_gym``.

An ID is ``CircuitDiscovery-{model part}-{task part}{family suffix}-v{N}``:

- :data:`FAMILIES`: the kinds of environment, each with its entry point and ID suffix
  (single-head ablation: no suffix; circuit building: ``-Circuit``);
- :data:`REGISTRY`: one :class:`Line` per version of a family's IDs: its model parts (ID part
  -> ``load_model`` name), task parts (ID part -> tasks sampled at reset), notes, the ``make``
  defaults that pin its behaviour, and ``superseded_by`` when its behaviour cannot be
  reproduced any more (its IDs are then refused).

**A new model, task set, version or family is a line**, never a code path: e.g. a model
zoo's ``CircuitDiscovery-Zoo-{Task}-v0`` is ``Line(SINGLE_HEAD, 0, {"Zoo": "<model>"},
{"IOI": ("ioi",), ...}, "notes")`` appended to :data:`REGISTRY`; a kind of environment with
its own class is a :class:`Family` plus its lines. ``max_episode_steps`` of a spec is the
longest episode its environment allows on the line's model (one step per head: the
number of heads, :func:`model_grid`); a line whose model the table cannot size without
loading it gives ``max_episode_steps`` itself.

Gymnasium's rule: a change of behaviour bumps ``N``, and an old ID keeps its behaviour or is
refused. IDs a version does not define keep their latest earlier version as current; an older
ID's spec pins what made its behaviour (its model, tasks, generator version), so it never
silently builds a newer environment (``tests/test_old_ids.py``). When an old behaviour cannot
be reproduced (single-head v0: the code that defined it is gone), its IDs stay registered and
listed as *superseded*, and ``gym.make`` refuses them: :class:`RefusedEnvError` (Gymnasium's
``DeprecatedEnv``) names the newest version of the ID. (Gymnasium's own "out of date" warning
for an older ID names the newest version too.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from circuit_gym.env_ids import CIRCUIT_SUFFIX
from circuit_gym.env_ids import env_id as spell_id

REFUSED_ENTRY_POINT = "circuit_gym.envs.registration:make_refused"
# Head grids of models that are not shipped in the package (the embedded ones are read from
# their config.json): what max_episode_steps needs, without loading the model.
KNOWN_GRIDS: dict[str, tuple[int, int]] = {"gpt2": (12, 12), "planted": (12, 12)}


@dataclass(frozen=True)
class Family:
    """A kind of environment: its registry name, title, class (entry point) and ID suffix."""

    name: str
    title: str
    entry_point: str
    suffix: str = ""

    def env_id(self, model_key: str, task_key: str, version: int) -> str:
        return spell_id(model_key, task_key, version, self.suffix)


SINGLE_HEAD = Family(
    "single-head", "single-head ablation", "circuit_gym.envs.circuit_env:CircuitDiscoveryEnv"
)
CIRCUIT = Family("circuit", "circuit building", "circuit_gym.envs.circuit_building:CircuitBuildingEnv",
                 CIRCUIT_SUFFIX)  # fmt: skip
# The same two kinds over a set of models, each episode on a model drawn at reset (ZooEnv's
# ``inner`` names the kind); the Zoo IDs hold out models, not only tasks (docs/zoo.md).
ZOO_SINGLE_HEAD = Family(
    "zoo", "single-head ablation over the model zoo", "circuit_gym.envs.model_draw:ZooEnv"
)
ZOO_CIRCUIT = Family("zoo-circuit", "circuit building over the model zoo", "circuit_gym.envs.model_draw:ZooEnv",
                     "-Circuit")  # fmt: skip
# The same two kinds on planted models: a model generated from a seed drawn at each reset, whose
# circuit is known exactly (PlantedEnv's ``inner`` names the kind; docs/planted.md).
PLANTED_SINGLE_HEAD = Family(
    "planted", "single-head ablation on generated planted models", "circuit_gym.envs.planted:PlantedEnv"
)
PLANTED_CIRCUIT = Family("planted-circuit", "circuit building on generated planted models",
                         "circuit_gym.envs.planted:PlantedEnv", "-Circuit")  # fmt: skip
# Edge-circuit building (issue 43): the circuit is a set of edges (MIB's graph), chosen among the
# top-K EAP-IG edges; on one model, over the zoo and on planted models.
EDGES = Family("edges", "edge-circuit building", "circuit_gym.envs.edge_building:EdgeBuildingEnv", "-Edges")
ZOO_EDGES = Family("zoo-edges", "edge-circuit building over the model zoo", "circuit_gym.envs.model_draw:ZooEnv",
                   "-Edges")  # fmt: skip
PLANTED_EDGES = Family("planted-edges", "edge-circuit building on generated planted models",
                       "circuit_gym.envs.planted:PlantedEnv", "-Edges")  # fmt: skip
# Knock-out (issue 60): ablate heads one at a time, cumulatively, the observation recomputed on the
# ablated model after each; on one model, and on planted models (PlantedEnv's ``inner``).
KNOCKOUT = Family("knockout", "knock-out", "circuit_gym.envs.knockout:KnockOutEnv", "-KnockOut")
PLANTED_KNOCKOUT = Family("planted-knockout", "knock-out on generated planted models",
                          "circuit_gym.envs.planted:PlantedEnv", "-KnockOut")  # fmt: skip
ZOO_KNOCKOUT = Family("zoo-knockout", "knock-out over the model zoo", "circuit_gym.envs.model_draw:ZooEnv",
                      "-KnockOut")  # fmt: skip
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        SINGLE_HEAD,
        CIRCUIT,
        ZOO_SINGLE_HEAD,
        ZOO_CIRCUIT,
        PLANTED_SINGLE_HEAD,
        PLANTED_CIRCUIT,
        EDGES,
        ZOO_EDGES,
        PLANTED_EDGES,
        KNOCKOUT,
        PLANTED_KNOCKOUT,
        ZOO_KNOCKOUT,
    )
}


@dataclass(frozen=True)
class Line:
    """One version of a family's IDs: every (model part, task part) pair of ``models`` x ``task_sets``.

    ``kwargs``: extra ``make`` defaults that pin this version's behaviour; ``superseded_by``:
    the version that replaced this one when its behaviour could no longer be reproduced (its IDs
    are refused by ``gym.make``, naming the newest version); ``max_episode_steps``: only for a
    model :func:`model_grid` cannot size.
    """

    family: Family
    version: int
    models: Mapping[str, str]
    task_sets: Mapping[str, tuple[str, ...]]
    notes: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    superseded_by: int | None = None
    max_episode_steps: int | None = None

    def id_parts(self) -> list[tuple[str, str]]:
        return [(m, t) for m in self.models for t in self.task_sets]


# ---------------------------------------------------------------- the table's parts
# v0 and v1: "Toy" is the 4 x 4 model, now embedded as "tiny" (the ID's name, not the model's).
MODELS_V0 = {"Toy": "tiny", "GPT2": "gpt2"}
TASK_SETS_V0 = {"Induction": ("induction",), "IOI": ("ioi",), "Docstring": ("docstring",),
                "Multi": ("induction", "ioi")}  # fmt: skip
# v2: the 144-head embedded model (run D, embedded as "toy_d" since v4) and every built-in task;
# Multi samples the training tasks of leaderboard benchmark v3 (held-out ones only when asked).
MODELS_V2 = {"Toy": "toy_d", "GPT2": "gpt2"}
TASK_SETS_V2 = {
    "Induction": ("induction",), "IOI": ("ioi",), "Docstring": ("docstring",), "GreaterThan": ("greater_than",),
    "Successor": ("successor",), "Pronoun": ("pronoun",), "Agreement": ("agreement",), "Brackets": ("brackets",),
    "Multi": ("agreement", "docstring", "greater_than", "pronoun"),
}  # fmt: skip
# v3: InductionSeen IDs, and Multi samples the training tasks of leaderboard benchmark v4.
# Written out, not imported: a later benchmark that changes them must add a version (a test
# compares them with circuit_gym.leaderboard.benchmark.TRAIN_TASKS).
TASK_SETS_V3 = {
    "InductionSeen": ("induction_seen",),
    "Multi": ("agreement", "docstring", "greater_than", "pronoun", "successor"),
}
# v4: the retrained embedded model (run F) as "toy"; every task of v2 again (InductionSeen stays
# v3 on toy_d: on the new model it measures what Induction measures); Multi samples the training
# tasks every board has trained on since (benchmark.TRAIN_TASKS).
MODELS_V4 = {"Toy": "toy", "GPT2": "gpt2"}
MULTI_TASKS_V4 = ("agreement", "docstring", "greater_than", "ioi", "pronoun")
TASK_SETS_V4 = {**{k: v for k, v in TASK_SETS_V2.items() if k != "Multi"}, "Multi": MULTI_TASKS_V4}
# Circuit building v0: one ID per task part of the single-head IDs current when it was
# released (v4's and InductionSeen), on the current embedded model; Multi = v4's training tasks.
CIRCUIT_TASK_SETS_V0 = {"InductionSeen": ("induction_seen",), **TASK_SETS_V4}
# Zoo v0: the public zoo (circuit_gym.embedded.MODEL_SETS["zoo"]); one ID per task some member
# passes its inclusion gate on (the members' cards), each member serving only its gated tasks.
MODELS_ZOO_V0 = {"Zoo": "zoo"}
ZOO_TASK_SETS_V0 = {
    "Agreement": ("agreement",), "Brackets": ("brackets",), "Capital": ("capital",), "Docstring": ("docstring",),
    "GreaterThan": ("greater_than",), "IOI": ("ioi",), "Minimum": ("minimum",), "Pronoun": ("pronoun",),
    "Successor": ("successor",),
    # Multi samples the transfer benchmarks' training tasks (written out, as above).
    "Multi": ("agreement", "docstring", "greater_than", "ioi", "pronoun"),
}  # fmt: skip
# ZooV2 v0: zoo v2 (MODEL_SETS["zoo-v2"]: zoo5-zoo8; its board retired: docs/archive.md), behind a model part
# of its own so that the Zoo IDs keep drawing zoo v1 (gymnasium's rule: an ID keeps its behaviour). The
# same task parts: every one is performed by some zoo v2 member (their cards); Multi is the training tasks.
MODELS_ZOO_V2 = {"ZooV2": "zoo-v2"}
ZOO_V2_NOTES = "over zoo v2 (zoo5-zoo8, a retired board's public models), a member drawn at each reset"
# ZooV3 v0 (issue 55): zoo v3 (MODEL_SETS["zoo-v3"]: zoo9-zoo12, trained with the backup objective: each
# gated task's primary head has a backup that is silent while the primary works), benchmark v8's public
# models, behind a model part of its own as zoo v2's; the same task parts (every one gated by some member).
MODELS_ZOO_V3 = {"ZooV3": "zoo-v3"}
ZOO_V3_NOTES = "over zoo v3 (zoo9-zoo12, trained with dormant backups: benchmark v8's public models), a member drawn at each reset"
# Planted v0: a fresh planted model per reset ("planted" is the generated family, not one model);
# one ID per circuit kind (circuit_gym.tasks.planted.KINDS).
MODELS_PLANTED_V0 = {"Planted": "planted"}
# Pinned, not left to PlantedEnv's default: were the default to move to a later generator, the v0
# IDs would silently build v1's models (tests/test_old_ids.py).
PLANTED_GENERATOR_V0 = 2
PLANTED_TASK_SETS_V0 = {"Induction": ("planted_induction",), "MultiHop": ("planted_multihop",),
                        "Redundant": ("planted_redundant",), "Suppression": ("planted_suppression",)}  # fmt: skip
# Planted v1 (issue 41): the planted generator's version 3 (the v0 IDs keep version 2, a retired board's
# models): the defect fixed and two kinds more, one ID each (circuit_gym.tasks.planted.KINDS_V3).
# Written out, not imported: the version is what the IDs pin (tests/test_planted_track.py checks it
# against circuit_gym.models.planted.versions).
PLANTED_GENERATOR_V1 = 3
PLANTED_TASK_SETS_V1 = {
    **PLANTED_TASK_SETS_V0,
    "SelfRepair": ("planted_self_repair",),
    "And": ("planted_and",),
}
PLANTED_NOTES_V1 = (
    "planted generator version 3: every seed answers every kind (the BOS-fallback defect fixed), two kinds "
    "more (SelfRepair: a backup head that acts only when the primary is ablated; And: a receiver that needs "
    "two senders at once), edges and backup heads in the ground truth"
)

# Edges v0: the attention-only models only (edge patching of GPT-2's MLP nodes is not implemented);
# an episode is at most one step per edge of the 12 x 12 graph (its budget is at most its candidates).
MODELS_EDGES_V0 = {"Toy": "toy"}
EDGE_EPISODE_STEPS = 29_089  # circuit_gym.edges.graph.EdgeGraph(12, 12).n_edges (tests/test_edge_env.py)

# What each zoo family's first release on a new zoo generation is: its environment's name in the
# note, the inner environment the zoo draws a member for, and the edge IDs' step limit.
_ZOO_RELEASES = {
    ZOO_SINGLE_HEAD.name: ("single-head", {"inner": "single-head"}, {}),
    ZOO_CIRCUIT.name: ("circuit-building", {"inner": "circuit"}, {}),
    ZOO_EDGES.name: ("edge-building", {"inner": "edges"}, {"max_episode_steps": EDGE_EPISODE_STEPS}),
    ZOO_KNOCKOUT.name: ("knock-out", {"inner": "knockout"}, {}),
}


def zoo_generation_lines(
    models: dict[str, str], notes: str, families: tuple[Family, ...]
) -> tuple[Line, ...]:
    """Version 0 of each of ``families`` over a zoo generation's model part ``models`` (``ZooV2``,
    ``ZooV3``: a member drawn at each reset), every task part some member performs."""
    lines = []
    for family in families:
        what, kwargs, limits = _ZOO_RELEASES[family.name]
        lines.append(Line(family, 0, models, ZOO_TASK_SETS_V0, f"first release of the {what} environment {notes}",
                          kwargs=kwargs, **limits))  # fmt: skip
    return tuple(lines)


REGISTRY: tuple[Line, ...] = (
    Line(SINGLE_HEAD, 0, MODELS_V0, TASK_SETS_V0, "first release", superseded_by=1),
    Line(SINGLE_HEAD, 1, MODELS_V0, TASK_SETS_V0,
         "resample ablation by default on the embedded model; IOI batches use one name order each; "
         "the duplicate-token and induction features are averaged over the queries that have such a key"),
    Line(SINGLE_HEAD, 2, MODELS_V2, TASK_SETS_V2,
         "the embedded model has GPT-2 small's 12 x 12 head grid (144 actions); eight tasks in six "
         "families; Multi samples the training tasks of leaderboard benchmark v3"),
    Line(SINGLE_HEAD, 3, MODELS_V2, TASK_SETS_V3,
         "InductionSeen IDs (induction over the token ids the embedded model was trained to copy); "
         "Multi samples the training tasks of leaderboard benchmark v4, which holds induction_seen out"),
    Line(SINGLE_HEAD, 4, MODELS_V4, TASK_SETS_V4,
         "the embedded model is retrained so that its induction circuit copies any token (run F; run D "
         "stays as toy_d behind the v2/v3 IDs): induction passes its inclusion gate; Multi samples the "
         "training tasks every board has trained on since (agreement, docstring, greater-than, IOI, pronoun)"),
    Line(CIRCUIT, 0, MODELS_V4, CIRCUIT_TASK_SETS_V0,
         "first release: add heads from the empty circuit (or remove from the full one) until STOP or the budget"),
    Line(ZOO_SINGLE_HEAD, 0, MODELS_ZOO_V0, ZOO_TASK_SETS_V0,
         "first release: the single-head environment over the public model zoo, a member drawn at each reset "
         "(options['model'] picks one; info['model'] names it)", kwargs={"inner": "single-head"}),
    Line(ZOO_CIRCUIT, 0, MODELS_ZOO_V0, ZOO_TASK_SETS_V0,
         "first release: the circuit-building environment over the public model zoo, a member drawn at each reset",
         kwargs={"inner": "circuit"}),
    Line(PLANTED_SINGLE_HEAD, 0, MODELS_PLANTED_V0, PLANTED_TASK_SETS_V0,
         "first release: the single-head environment on a planted model generated from a seed drawn at each "
         "reset (options['model_seed'] picks one); the ground truth in info only at the episode's end",
         kwargs={"inner": "single-head", "version": PLANTED_GENERATOR_V0}),
    Line(PLANTED_CIRCUIT, 0, MODELS_PLANTED_V0, PLANTED_TASK_SETS_V0,
         "first release: the circuit-building environment on a planted model generated from a seed drawn at "
         "each reset; the ground truth in info only at the episode's end",
         kwargs={"inner": "circuit", "version": PLANTED_GENERATOR_V0}),
    Line(EDGES, 0, MODELS_EDGES_V0, CIRCUIT_TASK_SETS_V0,
         "first release: add (or cut) edges among the top-K EAP-IG edges until STOP or the pass budget",
         max_episode_steps=EDGE_EPISODE_STEPS),
    Line(ZOO_EDGES, 0, MODELS_ZOO_V0, ZOO_TASK_SETS_V0,
         "first release: the edge-building environment over the public model zoo, a member drawn at each reset",
         kwargs={"inner": "edges"}, max_episode_steps=EDGE_EPISODE_STEPS),
    Line(PLANTED_EDGES, 0, MODELS_PLANTED_V0, PLANTED_TASK_SETS_V0,
         "first release: the edge-building environment on a planted model generated from a seed drawn at each "
         "reset; the ground truth in info only at the episode's end",
         kwargs={"inner": "edges", "version": PLANTED_GENERATOR_V0}, max_episode_steps=EDGE_EPISODE_STEPS),
    *zoo_generation_lines(MODELS_ZOO_V2, ZOO_V2_NOTES, (ZOO_SINGLE_HEAD, ZOO_CIRCUIT, ZOO_EDGES)),
    Line(PLANTED_SINGLE_HEAD, 1, MODELS_PLANTED_V0, PLANTED_TASK_SETS_V1, PLANTED_NOTES_V1,
         kwargs={"inner": "single-head", "version": PLANTED_GENERATOR_V1}),
    Line(PLANTED_CIRCUIT, 1, MODELS_PLANTED_V0, PLANTED_TASK_SETS_V1, PLANTED_NOTES_V1,
         kwargs={"inner": "circuit", "version": PLANTED_GENERATOR_V1}),
    Line(PLANTED_EDGES, 1, MODELS_PLANTED_V0, PLANTED_TASK_SETS_V1, PLANTED_NOTES_V1,
         kwargs={"inner": "edges", "version": PLANTED_GENERATOR_V1}, max_episode_steps=EDGE_EPISODE_STEPS),
    Line(PLANTED_KNOCKOUT, 0, MODELS_PLANTED_V0, PLANTED_TASK_SETS_V1,
         "first release (issue 60): ablate heads one at a time on a planted model of generator version 3, the "
         "observation recomputed on the ablated model after each; the ground truth in info only at the episode's end",
         kwargs={"inner": "knockout", "version": PLANTED_GENERATOR_V1}),
    *zoo_generation_lines(MODELS_ZOO_V2, ZOO_V2_NOTES, (ZOO_KNOCKOUT,)),
    *zoo_generation_lines(MODELS_ZOO_V3, ZOO_V3_NOTES, (ZOO_SINGLE_HEAD, ZOO_CIRCUIT, ZOO_EDGES, ZOO_KNOCKOUT)),
)  # fmt: skip


def planted_knockout_id(kind: str) -> str:
    """``CircuitDiscovery-Planted-{Key}-KnockOut-v0`` of a planted kind of generator version 3
    (``self_repair`` -> ``...-SelfRepair-KnockOut-v0``); ValueError naming the kinds otherwise."""
    by_kind = {tasks[0].removeprefix("planted_"): key for key, tasks in PLANTED_TASK_SETS_V1.items()}
    if kind not in by_kind:
        raise ValueError(f"kind must be one of {tuple(by_kind)}, got {kind!r}")
    return PLANTED_KNOCKOUT.env_id("Planted", by_kind[kind], 0)


class RefusedEnvError(gym.error.DeprecatedEnv):
    """``gym.make`` of an ID whose behaviour cannot be reproduced (a superseded version): refused,
    never substituted (Gymnasium's rule); the message names the newest version of the ID."""


# ---------------------------------------------------------------- reading the table
@dataclass(frozen=True)
class EnvEntry:
    """One registered ID: its line, parts, model, tasks and status."""

    id: str
    line: Line
    model_key: str
    task_key: str
    current: bool
    use: str | None  # not current: the ID to use, the newest version of this one

    @property
    def family(self) -> Family:
        return self.line.family

    @property
    def model(self) -> str:
        return self.line.models[self.model_key]

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.line.task_sets[self.task_key])

    @property
    def superseded(self) -> bool:
        """Its behaviour cannot be reproduced: ``gym.make`` refuses it (:class:`RefusedEnvError`)."""
        return self.line.superseded_by is not None

    def row(self) -> dict:
        """What :func:`list_envs` returns for this ID (the notes are per version: :func:`version_notes`)."""
        row = {"id": self.id, "family": self.family.name, "model": self.model, "tasks": list(self.tasks),
               "version": self.line.version, "current": self.current}  # fmt: skip
        if self.use is not None:
            row["use"] = self.use
        return row


def entries() -> list[EnvEntry]:
    """Every ID of :data:`REGISTRY`, in table order, each with its status."""
    current: dict[tuple[str, str, str], Line] = {}
    for line in sorted(REGISTRY, key=lambda line: line.version):
        if line.superseded_by is None:
            for key in line.id_parts():
                current[(line.family.name, *key)] = line
    out = []
    for line in REGISTRY:
        for key in line.id_parts():
            newest = current[(line.family.name, *key)]
            use = None if newest is line else line.family.env_id(*key, newest.version)
            out.append(EnvEntry(line.family.env_id(*key, line.version), line, *key, use is None, use))
    return out


def _selected(all_versions: bool, family: str | None) -> list[EnvEntry]:
    if family is not None and family not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {family!r}")
    return [e for e in entries()
            if (e.current or all_versions) and (family is None or e.family.name == family)]  # fmt: skip


def list_envs(all_versions: bool = False, family: str | None = None) -> list[dict]:
    """The registered IDs of every family (or of ``family``: ``"single-head"``, ``"circuit"``):
    ``id``, ``family``, ``model``, ``tasks``, ``version``, ``current``; current versions only
    unless ``all_versions`` (then older and superseded IDs too, with ``use`` = the newest version's ID).
    What changed in a version: :func:`version_notes`."""
    return [e.row() for e in _selected(all_versions, family)]


def env_ids(all_versions: bool = False, family: str | None = None) -> list[str]:
    """The IDs of :func:`list_envs`."""
    return [e.id for e in _selected(all_versions, family)]


def version_notes(family: str, version: int) -> str:
    """What version ``version`` of ``family``'s IDs changed (one note per version, not per ID)."""
    notes = {line.notes for line in REGISTRY if line.family.name == family and line.version == version}
    if not notes:
        raise ValueError(f"no version {version} of the {family!r} IDs")
    return "; ".join(sorted(notes))


def entry(env_id: str) -> EnvEntry:
    """The registry entry of an ID (ValueError for an ID this package does not define)."""
    for e in entries():
        if e.id == env_id:
            return e
    raise ValueError(f"not an ID of this package: {env_id!r} (see circuit_gym.list_envs(all_versions=True))")


def model_grid(model: str) -> tuple[int, int]:
    """(layers, heads per layer) of a model named in the table, without loading it."""
    from circuit_gym.embedded import MODEL_SETS, is_embedded

    if model in MODEL_SETS:  # a set of models shares one grid (ModelDrawEnv refuses another)
        model = MODEL_SETS[model][0]
    if is_embedded(model):
        from circuit_gym.models.loading import embedded_dir

        config = json.loads((embedded_dir(model) / "config.json").read_text())
        return int(config["n_layers"]), int(config["n_heads"])
    if model in KNOWN_GRIDS:
        return KNOWN_GRIDS[model]
    raise ValueError(
        f"no known head grid for model {model!r}: give its Line max_episode_steps, or add it to KNOWN_GRIDS"
    )


def max_episode_steps(line: Line, model: str) -> int:
    """The longest episode of an ID: one step per head of its model (both families' episodes
    end by then: ``episode_length`` and ``budget`` are at most the number of heads)."""
    if line.max_episode_steps is not None:
        return line.max_episode_steps
    layers, heads = model_grid(model)
    return layers * heads


def register_envs() -> None:
    """Register every ID of :data:`REGISTRY` not registered yet: each with its own line's model,
    tasks and ``kwargs`` (a superseded one's spec still says what it was, and refuses to build)."""
    for e in entries():
        if e.id in gym.registry:
            continue
        kwargs = {"model": e.model, "tasks": e.tasks, **e.line.kwargs}
        entry_point = e.family.entry_point
        if e.superseded:
            kwargs["registered_id"], entry_point = e.id, REFUSED_ENTRY_POINT
        gym.register(id=e.id, entry_point=entry_point, kwargs=kwargs,
                     max_episode_steps=max_episode_steps(e.line, e.model))  # fmt: skip


def make_refused(registered_id: str, **kwargs: Any) -> gym.Env:
    """Entry point of a superseded ID: raise :class:`RefusedEnvError` naming the newest version
    (building another version's environment under the old ID would be a silent substitution)."""
    e = entry(registered_id)
    if not e.superseded:
        raise ValueError(f"{registered_id} is not superseded; make it with gymnasium.make")
    newest = entry(e.use) if e.use is not None else e
    raise RefusedEnvError(
        f"{registered_id} is refused: its behaviour (v{e.line.version}: {e.line.notes}) cannot be reproduced "
        f"any more, and an old ID keeps its behaviour or is refused (Gymnasium's rule). "
        f"Use {e.use}, the newest version (v{newest.line.version}); circuit_gym.envs.version_notes("
        f"{e.family.name!r}, N) says what each version changed."
    )


# ---------------------------------------------------------------- compatibility views
# The single-head family's lines by version (the table's first family, as VERSIONS was before
# the circuit-building IDs joined the table).
VERSIONS: dict[int, Line] = {line.version: line for line in REGISTRY if line.family == SINGLE_HEAD}
CIRCUIT_VERSION = max(line.version for line in REGISTRY if line.family == CIRCUIT)


def env_id(model_key: str, task_key: str, version: int) -> str:
    """A single-head ID."""
    return SINGLE_HEAD.env_id(model_key, task_key, version)


def circuit_env_id(model_key: str, task_key: str, version: int = CIRCUIT_VERSION) -> str:
    """A circuit-building ID (the current version unless ``version``)."""
    return CIRCUIT.env_id(model_key, task_key, version)
