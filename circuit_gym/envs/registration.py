"""Gymnasium IDs, registered on ``import circuit_gym``.

``CircuitDiscovery-{model}-{task set}-v{N}``, one row of :data:`VERSIONS` per version.
Gymnasium's rule: a change of behaviour bumps ``N`` and the old ID keeps working. When
the old behaviour can no longer be reproduced (v0: the code that defined it is gone), the
old ID is registered as *superseded*: ``gym.make`` builds the newer version's environment
and emits a :class:`SupersededEnvWarning` (a ``DeprecationWarning``) naming the ID to use.

Adding a version is one entry of :data:`VERSIONS` (models, task sets, notes); IDs that a
version does not define keep their latest earlier version as current. Multi samples
induction and IOI; the held-out docstring task only when asked
(``reset(options={"task": "docstring"})`` or ``tasks=[...]``).
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field

import gymnasium as gym

from circuit_gym.envs.circuit_env import CircuitDiscoveryEnv

ENTRY_POINT = "circuit_gym.envs.circuit_env:CircuitDiscoveryEnv"
SUPERSEDED_ENTRY_POINT = "circuit_gym.envs.registration:make_superseded"
PREFIX = "CircuitDiscovery"

# The model and task-set parts of the IDs of v0 and v1 (the names of the ID, not of the model):
# their "Toy" is the 4 x 4 model, now embedded as "tiny".
MODELS = {"Toy": "tiny", "GPT2": "gpt2"}
TASK_SETS = {
    "Induction": ("induction",),
    "IOI": ("ioi",),
    "Docstring": ("docstring",),
    "Multi": ("induction", "ioi"),
}
# v2: the 144-head embedded model (run D, embedded as "toy_d" since v4) and every built-in task. Multi samples the training tasks
# of leaderboard benchmark v3 (the held-out ones only when asked, as before).
MODELS_V2 = {"Toy": "toy_d", "GPT2": "gpt2"}
TASK_SETS_V2 = {
    "Induction": ("induction",),
    "IOI": ("ioi",),
    "Docstring": ("docstring",),
    "GreaterThan": ("greater_than",),
    "Successor": ("successor",),
    "Pronoun": ("pronoun",),
    "Agreement": ("agreement",),
    "Brackets": ("brackets",),
    "Multi": ("agreement", "docstring", "greater_than", "pronoun"),
}
# v3: the induction_seen task gets IDs, and Multi samples the training tasks of leaderboard
# benchmark v4 (circuit_gym.leaderboard.benchmark.TRAIN_TASKS). Written out, not imported: a
# later benchmark that changes them must add a version here (a test compares the two).
TASK_SETS_V3 = {
    "InductionSeen": ("induction_seen",),
    "Multi": ("agreement", "docstring", "greater_than", "pronoun", "successor"),
}

# v4: the retrained embedded model (run E, copies any token) as "toy"; every task of v2 again
# (InductionSeen stays v3 on toy_d: on the new model it measures what Induction measures), and
# Multi samples the training tasks of leaderboard benchmark v5, written out (a test compares
# them with circuit_gym.leaderboard.benchmark.TRAIN_TASKS).
MODELS_V4 = {"Toy": "toy", "GPT2": "gpt2"}
TASK_SETS_V4 = {
    **{name: tasks for name, tasks in TASK_SETS_V2.items() if name != "Multi"},
    "Multi": ("agreement", "docstring", "greater_than", "ioi", "pronoun"),
}


@dataclass(frozen=True)
class Version:
    """One version of the environment IDs.

    ``models``: ID part -> ``load_model`` name; ``task_sets``: ID part -> tasks sampled at
    reset; ``kwargs``: extra ``make`` defaults that pin this version's behaviour;
    ``superseded_by``: set when this version's behaviour cannot be reproduced any more, so
    its IDs build that version's environment and warn.
    """

    models: dict[str, str]
    task_sets: dict[str, tuple[str, ...]]
    notes: str
    kwargs: dict = field(default_factory=dict)
    superseded_by: int | None = None


VERSIONS: dict[int, Version] = {
    0: Version(MODELS, TASK_SETS, "first release", superseded_by=1),
    1: Version(
        MODELS,
        TASK_SETS,
        "resample ablation by default on the embedded model; IOI batches use one name order each; "
        "the duplicate-token and induction features are averaged over the queries that have such a key",
    ),
    2: Version(
        MODELS_V2,
        TASK_SETS_V2,
        "the embedded model has GPT-2 small's 12 x 12 head grid (144 actions); eight tasks in six "
        "families; Multi samples the training tasks of leaderboard benchmark v3",
    ),
    3: Version(
        MODELS_V2,
        TASK_SETS_V3,
        "InductionSeen IDs (induction over the token ids the embedded model was trained to copy); "
        "Multi samples the training tasks of leaderboard benchmark v4, which holds induction_seen out",
    ),
    4: Version(
        MODELS_V4,
        TASK_SETS_V4,
        "the embedded model is retrained so that its induction circuit copies any token (run E; run D "
        "stays as toy_d behind the v2/v3 IDs): induction passes its inclusion gate; Multi samples the "
        "training tasks of leaderboard benchmark v5",
    ),
}


class SupersededEnvWarning(DeprecationWarning):
    """An ID whose version was superseded: it now builds a newer version's environment."""


def env_id(model_key: str, task_key: str, version: int) -> str:
    return f"{PREFIX}-{model_key}-{task_key}-v{version}"


def _ids(version: int) -> list[tuple[str, str]]:
    v = VERSIONS[version]
    return [(m, t) for m in v.models for t in v.task_sets]


def _current_versions() -> dict[tuple[str, str], int]:
    """(model part, task part) -> the highest version that defines it and is not superseded."""
    current: dict[tuple[str, str], int] = {}
    for version in sorted(VERSIONS):
        if VERSIONS[version].superseded_by is None:
            for key in _ids(version):
                current[key] = version
    return current


def _resolve(version: int) -> int:
    """Follow ``superseded_by`` to the version whose behaviour an ID now has."""
    seen = set()
    while VERSIONS[version].superseded_by is not None:
        if version in seen:
            raise RuntimeError(f"superseded_by cycle in VERSIONS at v{version}")
        seen.add(version)
        version = VERSIONS[version].superseded_by
    return version


def list_envs(all_versions: bool = False) -> list[dict]:
    """The registered IDs with model, tasks, version and notes; current versions only unless
    ``all_versions`` (then superseded IDs too, with ``current=False`` and ``use`` = the ID to use)."""
    current = _current_versions()
    rows = []
    for version in sorted(VERSIONS):
        v = VERSIONS[version]
        for model_key, task_key in _ids(version):
            is_current = current.get((model_key, task_key)) == version
            if not (is_current or all_versions):
                continue
            row = {
                "id": env_id(model_key, task_key, version), "model": v.models[model_key],
                "tasks": list(v.task_sets[task_key]), "version": version, "current": is_current,
                "notes": v.notes,
            }  # fmt: skip
            if not is_current:  # a superseded ID: what it now builds; an older one: the current
                use = _resolve(version) if v.superseded_by is not None else current[(model_key, task_key)]
                row["use"] = env_id(model_key, task_key, use)
            rows.append(row)
    return rows


def env_ids(all_versions: bool = False) -> list[str]:
    """The current IDs (every registered one with ``all_versions``)."""
    return [row["id"] for row in list_envs(all_versions)]


def register_envs() -> None:
    for version, v in VERSIONS.items():
        for model_key, task_key in _ids(version):
            id_ = env_id(model_key, task_key, version)
            if id_ in gym.registry:
                continue
            kwargs = {"model": v.models[model_key], "tasks": v.task_sets[task_key], **v.kwargs}
            if v.superseded_by is None:
                gym.register(id=id_, entry_point=ENTRY_POINT, kwargs=kwargs)
            else:
                target = VERSIONS[_resolve(version)]
                kwargs = {"model": target.models[model_key], "tasks": target.task_sets[task_key],
                          **target.kwargs, "registered_id": id_}  # fmt: skip
                gym.register(id=id_, entry_point=SUPERSEDED_ENTRY_POINT, kwargs=kwargs)
    from circuit_gym.envs.circuit_registration import register_circuit_envs  # after the IDs it lists

    register_circuit_envs()


def make_superseded(registered_id: str, **kwargs) -> CircuitDiscoveryEnv:
    """Entry point of a superseded ID: warn, then build the environment of the version it
    now behaves as (``kwargs`` are that version's)."""
    name, sep, version = registered_id.rpartition("-v")
    if not (sep and name.startswith(PREFIX) and version.isdigit()):
        raise ValueError(f"not an ID of this package: {registered_id!r}")
    now = _resolve(int(version))
    new_id = f"{name}-v{now}"
    warnings.warn(
        f"{registered_id} is deprecated: its original behaviour cannot be reproduced, so it now "
        f"builds exactly the {new_id} environment (v{now}: {VERSIONS[now].notes}). "
        f"Use {new_id}; results made with it are v{now} results.",
        SupersededEnvWarning,
        stacklevel=_caller_stacklevel(),
    )
    return CircuitDiscoveryEnv(**kwargs)


# gym.make reads the entry point's metadata to validate render_mode (and to apply its
# human/_list rendering wrappers); give the function the class's.
make_superseded.metadata = CircuitDiscoveryEnv.metadata


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside this module and gymnasium, so the warning is
    attributed to (and, for DeprecationWarning in ``__main__``, shown to) the code calling make."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module == __name__ or module.startswith("gymnasium")):
            return level
        frame, level = frame.f_back, level + 1
    return 2
