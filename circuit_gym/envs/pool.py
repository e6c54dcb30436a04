"""Episode pools: the finite, seeded set of prompt batches of one task and split.

Batch ``i`` of a pool is ``task.batch(model, split, batch_size, seed=i)``, so a pool is
fully determined by its settings and its sweep tables can be cached on disk. Everything
expensive about a batch (clean-run features, oracle table, live scorer, and what an
environment derives from it, :meth:`Episode.derived`) is computed lazily, once per pool.

Lifetime: environments with the same settings share one pool while any of them lives
(:class:`EnvPools` holds an environment's pools; the process-wide table holds them only
weakly), so a pool and everything computed for its episodes is freed with the last
environment that used it. A pool is keyed by the task *object*, not its name: re-registering
a task (``register_task(..., overwrite=True)``) gives the environments a new pool on their
next reset, built from the new definition. Loaded models are shared per process.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.contrastive import ContrastiveScorer, SweepTable, build_task_engine
from circuit_gym.ablation.engine import AblationEngine
from circuit_gym.ablation.tables import general_damage, general_engine, sweep_table
from circuit_gym.envs.features import FEATURE_BOUND, head_features, prediction_features
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task
from circuit_gym.tasks.base import PromptBatch, Task
from circuit_gym.tasks.reference import reference_batch

_MODELS: dict[tuple[str, str | None, str], object] = {}
# Weak values: a pool lives as long as an environment (EnvPools) or a caller holds it.
_POOLS: weakref.WeakValueDictionary[tuple, EpisodePool] = weakref.WeakValueDictionary()


def shared_model(name: str, path: str | None = None, device: str = "cpu"):
    """One loaded model per (name, path, device) per process."""
    key = (name, None if path is None else str(path), str(device))
    if key not in _MODELS:
        _MODELS[key] = load_model(name, path=path, device=device)
    return _MODELS[key]


def release_model(name: str, path: str | None = None, device: str = "cpu") -> None:
    """Forget one shared model and its general-damage sweeps (environments that draw a fresh
    model per episode, the Planted IDs, call it when they drop a model); environments still
    holding the model keep it."""
    from circuit_gym.ablation import tables

    model = _MODELS.pop((name, None if path is None else str(path), str(device)), None)
    if model is not None:
        for key in [k for k in tables._GENERAL if k[0] == id(model)]:
            del tables._GENERAL[key]


def clear_caches() -> None:
    """Forget every model, pool and general-damage sweep held by this process (tests use it
    to check that results do not depend on what an earlier environment computed); pools that
    live environments hold stay theirs, but are no longer shared with new ones."""
    from circuit_gym.ablation import tables

    _MODELS.clear()
    _POOLS.clear()
    tables._GENERAL.clear()


@dataclass
class Episode:
    """One prompt batch with its lazily computed observation and oracle data."""

    pool: EpisodePool
    index: int
    batch: PromptBatch
    _features: np.ndarray | None = None
    _prediction: np.ndarray | None = None
    _table: SweepTable | None = None
    _task_engine: AblationEngine | None = None
    _scorer: ContrastiveScorer | None = None
    _set_rewards: dict[frozenset[int], tuple[float, float]] = field(default_factory=dict)
    _derived: dict[str, Any] = field(default_factory=dict)

    def derived(self, key: str, build: Callable[[Episode], Any]) -> Any:
        """What an environment derives from this batch (the circuit-building runner, causal
        features, ...): ``build(self)`` once, then kept exactly as long as the episode and its pool."""
        if key not in self._derived:
            self._derived[key] = build(self)
        return self._derived[key]

    @property
    def features(self) -> np.ndarray:
        if self._features is None:
            self._features = head_features(self.pool.model, self.batch.tokens)
        return self._features

    @property
    def prediction_features(self) -> np.ndarray:
        """The ``"prediction"`` feature set's three columns (``circuit_gym.envs.features``)."""
        if self._prediction is None:
            p = self.pool
            general = general_damage(p.model, p.reference, p.ablation, p.cache)
            general = np.clip(general, -FEATURE_BOUND, FEATURE_BOUND).astype(np.float32)[:, None]
            self._prediction = np.concatenate(
                [prediction_features(p.model, self.batch.tokens), general], axis=1
            )
        return self._prediction

    @property
    def table(self) -> SweepTable:
        if self._table is None:
            p = self.pool
            self._table = sweep_table(p.model, p.task, self.batch, p.reference, ablation=p.ablation,
                                      lam=p.lam, cache=p.cache)  # fmt: skip
        return self._table

    @property
    def task_engine(self) -> AblationEngine:
        """The task metric's ablation engine on this batch: all the circuit-building environment
        needs (its reward has no general-damage half), so it never builds the reference text's
        engine that :attr:`scorer` adds."""
        if self._task_engine is None:
            p = self.pool
            self._task_engine = build_task_engine(p.model, p.task, self.batch, p.ablation)
        return self._task_engine

    @property
    def scorer(self) -> ContrastiveScorer:
        if self._scorer is None:
            p = self.pool
            self._scorer = ContrastiveScorer(
                p.model, p.task, self.batch, p.reference, p.ablation, p.lam,
                general_engine=general_engine(p.model, p.reference, p.ablation), task_engine=self.task_engine,
            )  # fmt: skip
        return self._scorer

    def damages(self, heads: frozenset[int], use_cache: bool) -> tuple[float, float]:
        """(task damage, general damage) of ablating ``heads`` together."""
        if not heads:
            return 0.0, 0.0
        if use_cache and len(heads) == 1:
            (h,) = heads
            return float(self.table.task_damage[h]), float(self.table.general_damage[h])
        if use_cache and heads in self._set_rewards:
            return self._set_rewards[heads]
        result = self.scorer.damages(sorted(heads))
        if use_cache:
            self._set_rewards[heads] = result
        return result


class EpisodePool:
    """The episodes of one task and split on one model, built on demand (``episode(i)``)."""

    def __init__(self, model, task: str | Task, split: str, batch_size: int, pool_size: int,
                 reference: str | None, ablation: str, lam: float, cache: SweepCache | None) -> None:  # fmt: skip
        self.model, self.task = model, get_task(task) if isinstance(task, str) else task
        self.split, self.batch_size, self.pool_size = split, batch_size, pool_size
        self.reference = reference_batch(model, reference)
        self.ablation, self.lam, self.cache = ablation, lam, cache
        self._episodes: dict[int, Episode] = {}

    def episode(self, index: int) -> Episode:
        if not 0 <= index < self.pool_size:
            raise ValueError(f"batch index must be in [0, {self.pool_size}), got {index}")
        if index not in self._episodes:
            batch = self.task.batch(self.model, self.split, self.batch_size, seed=index)
            self._episodes[index] = Episode(self, index, batch)
        return self._episodes[index]


def shared_pool(model, task: str | Task, split: str, batch_size: int, pool_size: int, reference: str | None,
                ablation: str, lam: float, cache: bool) -> EpisodePool:  # fmt: skip
    """The pool of these settings that an environment already uses, or a new one. A task name
    means the task registered under it now. Keyed by the identities of the model and the task
    object: the pool holds both, so neither id can be reused while its entry exists."""
    task = get_task(task) if isinstance(task, str) else task
    key = (id(model), model.circuit_gym_info.weights_hash, id(task), split, batch_size, pool_size, reference,
           ablation, lam, cache)  # fmt: skip
    pool = _POOLS.get(key)
    if pool is None:
        pool = EpisodePool(model, task, split, batch_size, pool_size, reference, ablation, lam,
                           SweepCache() if cache else None)  # fmt: skip
        _POOLS[key] = pool
    return pool


class EnvPools:
    """The pools of one environment, one per task it has reset to, held while it lives.

    ``get(name)`` returns the pool of the task registered under ``name`` now: when the task was
    re-registered since, the old pool is dropped (and freed once no environment holds it)."""

    def __init__(self, model, split: str, batch_size: int, pool_size: int, reference: str | None,
                 ablation: str, lam: float, cache: bool) -> None:  # fmt: skip
        self.model = model
        self._settings = (split, batch_size, pool_size, reference, ablation, lam, cache)
        self._pools: dict[str, EpisodePool] = {}

    def get(self, name: str) -> EpisodePool:
        task = get_task(name)
        pool = self._pools.get(name)
        if pool is None or pool.task is not task:
            pool = shared_pool(self.model, task, *self._settings)
            self._pools[name] = pool
        return pool
