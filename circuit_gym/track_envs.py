"""The board's environments: one builder for every track's episodes, below both apps.

The leaderboard scores on these environments and the baselines train and fit on the same ones
(``circuit_gym.baselines`` never imports ``circuit_gym.leaderboard``, so the builder lives in the
core). Each track's settings come from :mod:`circuit_gym.benchmark`; a caller gives only what
varies: the model, the tasks, the split, how far the pool reaches and whether tables may reach
the disk cache.

- :func:`board_env`: the single-head and circuit-building tracks of a transfer benchmark
  (``transfer``: its zoo's pinned ablation and reference text, any feature set);
- :func:`planted_env`: the Planted track's circuit-building environment of one circuit kind (and
  planted generator version).

What the policy may see is the scorer's business: the single-head environments keep their oracle
fields here (training reads them; ``envs.HideOracleInfo`` removes them for scoring), the
circuit-building ones are built without them (``oracle_info=False``) unless asked.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym import benchmark as B
from circuit_gym.envs.features import DEFAULT_FEATURES

# The Planted track's episode: one test-split batch (batch index 0) of 8 prompts per model.
PLANTED_SPLIT, PLANTED_BATCH_SIZE, PLANTED_BATCH_INDEX = "test", 8, 0


def board_env(kind: str, model: str, pool_size: int, *, tasks: Sequence[str] | None = None, split: str = B.SPLIT,
              cache: bool = True, model_path: str | None = None, transfer: bool | B.TransferBenchmark = False,
              features: str = DEFAULT_FEATURES, **overrides) -> gym.Env:  # fmt: skip
    """The environment of ``kind`` (``benchmark.SINGLE_HEAD`` or ``benchmark.CIRCUIT``) on ``model``
    over batches ``0 .. pool_size - 1`` of ``split``, with the shared settings of ``circuit_gym.benchmark`` (with
    ``transfer``, a transfer benchmark's row's: ``True`` is the one in force, ``benchmark.IN_FORCE``). ``tasks``: the environment's
    default (every task) when None. ``overrides``: environment arguments a caller changes on
    purpose (e.g. ``oracle_info`` for training)."""
    if kind not in (B.SINGLE_HEAD, B.CIRCUIT):
        raise ValueError(f"kind must be {B.SINGLE_HEAD!r} or {B.CIRCUIT!r}, got {kind!r}")
    bench = B.transfer_benchmark(B.IN_FORCE) if transfer is True else transfer or None
    kwargs: dict = dict(model=model, split=split, pool_size=int(pool_size), batch_size=B.PROMPTS_PER_EPISODE,
                        ablation=bench.ablation if bench else B.ABLATION, cache=cache, features=features)  # fmt: skip
    if tasks is not None:
        kwargs["tasks"] = tuple(tasks)
    if model_path:
        kwargs["model_path"] = model_path
    # a transfer benchmark's IDs are its zoo's (the private model is loaded from a directory, under its own name)
    id_model = bench.train_models[0] if bench else model
    if kind == B.CIRCUIT:
        kwargs.update(
            start=B.CIRCUIT_START, budget=B.CIRCUIT_BUDGET, alpha=B.CIRCUIT_ALPHA, oracle_info=False
        )
        env_id = B.circuit_env(id_model)
    else:
        kwargs["lam"] = B.LAM
        if bench:
            kwargs["reference"] = bench.reference
        env_id = B.multi_env_id(id_model)
    return gym.make(env_id, **{**kwargs, **overrides})


def planted_env_id(kind: str, version: int | None = None) -> str:
    """The circuit-building Planted ID of the circuit ``kind`` on the planted generator's ``version``
    (None: the default, 2, ``-v0``, a retired board's: docs/archive.md; 3: ``-v1``): the
    registry's line that pins it."""
    # imported here: the planted modules register the planted tasks, which the suite's users never see
    from circuit_gym.envs.registration import PLANTED_CIRCUIT, REGISTRY
    from circuit_gym.models.planted.versions import DEFAULT_VERSION
    from circuit_gym.tasks.planted import task_name

    version = DEFAULT_VERSION if version is None else version
    for line in REGISTRY:
        pinned = line.kwargs.get("version", DEFAULT_VERSION)
        if line.family == PLANTED_CIRCUIT and pinned == version and line.superseded_by is None:
            for key, tasks in line.task_sets.items():
                if tasks == (task_name(kind),):
                    return PLANTED_CIRCUIT.env_id("Planted", key, line.version)
    raise ValueError(
        f"no circuit-building Planted ID of kind {kind!r} on planted generator version {version!r}"
    )


def planted_env(kind: str, seeds: Sequence[int], version: int | None = None, **overrides) -> gym.Env:
    """The Planted track's environment of ``kind`` over the planted models of ``seeds`` (generator
    ``version``, :func:`planted_env_id`): the circuit track's budget and alpha, no oracle fields,
    the track's split and batch."""
    kwargs = dict(seeds=tuple(seeds), split=PLANTED_SPLIT, pool_size=PLANTED_BATCH_INDEX + 1,
                  batch_size=PLANTED_BATCH_SIZE, start=B.CIRCUIT_START, budget=B.CIRCUIT_BUDGET,
                  alpha=B.CIRCUIT_ALPHA, oracle_info=False)  # fmt: skip
    return gym.make(planted_env_id(kind, version), **{**kwargs, **overrides})
