"""Episode pools: the finite, seeded set of prompt batches of one task and split.

Batch ``i`` of a pool is ``task.batch(model, split, batch_size, seed=i)``, so a pool is
fully determined by its settings and its sweep tables can be cached on disk. Everything
expensive about a batch (clean-run features, oracle table, live scorer) is computed
lazily, once per process; environments with the same settings share one pool, and
processes share loaded models.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.contrastive import ContrastiveScorer, SweepTable
from circuit_gym.ablation.tables import general_damage, general_engine, sweep_table
from circuit_gym.envs.features import FEATURE_BOUND, head_features, prediction_features
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task
from circuit_gym.tasks.base import PromptBatch
from circuit_gym.tasks.reference import reference_batch

_MODELS: dict[tuple[str, str | None], object] = {}
_POOLS: dict[tuple, EpisodePool] = {}


def shared_model(name: str, path: str | None = None, device: str = "cpu"):
    """One loaded model per (name, path, device) per process."""
    key = (name, None if path is None else str(path), str(device))
    if key not in _MODELS:
        _MODELS[key] = load_model(name, path=path, device=device)
    return _MODELS[key]


def clear_caches() -> None:
    """Forget every model, pool and general-damage sweep held by this process (tests use it
    to check that results do not depend on what an earlier environment computed)."""
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
    _scorer: ContrastiveScorer | None = None
    _set_rewards: dict[frozenset[int], tuple[float, float]] = field(default_factory=dict)

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
    def scorer(self) -> ContrastiveScorer:
        if self._scorer is None:
            p = self.pool
            self._scorer = ContrastiveScorer(
                p.model, p.task, self.batch, p.reference, p.ablation, p.lam,
                general_engine=general_engine(p.model, p.reference, p.ablation),
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
    def __init__(self, model, task: str, split: str, batch_size: int, pool_size: int,
                 reference: str | None, ablation: str, lam: float, cache: SweepCache | None) -> None:  # fmt: skip
        self.model, self.task = model, get_task(task)
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


def shared_pool(model, task: str, split: str, batch_size: int, pool_size: int, reference: str | None,
                ablation: str, lam: float, cache: bool) -> EpisodePool:  # fmt: skip
    key = (id(model), model.circuit_gym_info.weights_hash, task, split, batch_size, pool_size, reference,
           ablation, lam, cache)  # fmt: skip
    if key not in _POOLS:
        _POOLS[key] = EpisodePool(model, task, split, batch_size, pool_size, reference, ablation, lam,
                                  SweepCache() if cache else None)  # fmt: skip
    return _POOLS[key]
