"""Contrastive reward: task damage minus lambda times general damage, and the oracle table.

``task_damage(S)``   = task metric (clean) - task metric (heads S ablated), on the prompts;
``general_damage(S)`` = reference loss (S ablated) - reference loss (clean);
``reward(S)``         = task_damage(S) - lam * general_damage(S).

A :class:`SweepTable` holds these for every single head plus the per-episode oracle (the
head with the highest reward), and serialises to JSON/CSV.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

from circuit_gym.ablation.engine import AblationEngine, Evaluation, check_ablation
from circuit_gym.heads import head_name  # re-exported as circuit_gym.ablation.head_name
from circuit_gym.models.loading import model_device
from circuit_gym.tasks.base import PromptBatch, Task
from circuit_gym.tasks.reference import ReferenceBatch


def contrastive_reward(task_damage, general_damage, lam: float):
    """The one formula: task damage minus ``lam`` times general damage (floats or arrays)."""
    return task_damage - lam * general_damage


@dataclass
class SweepTable:
    """Per-head single-ablation numbers for one prompt batch."""

    model: str
    weights_hash: str
    task: str
    split: str
    seed: int
    batch_size: int
    ablation: str
    lam: float
    reference: str
    n_layers: int
    n_heads: int
    clean_metric: float
    clean_general_loss: float
    task_damage: np.ndarray
    general_damage: np.ndarray

    @property
    def reward(self) -> np.ndarray:
        return contrastive_reward(self.task_damage, self.general_damage, self.lam)

    @property
    def oracle_head(self) -> int:
        return int(np.argmax(self.reward))

    @property
    def oracle_reward(self) -> float:
        return float(self.reward[self.oracle_head])

    def top(self, k: int = 5) -> list[tuple[str, float]]:
        order = np.argsort(-self.reward, kind="stable")[:k]
        return [(head_name(int(h), self.n_heads), float(self.reward[h])) for h in order]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["task_damage"] = self.task_damage.tolist()
        d["general_damage"] = self.general_damage.tolist()
        d["reward"] = self.reward.tolist()
        d["oracle_head"], d["oracle_reward"] = self.oracle_head, self.oracle_reward
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SweepTable:
        fields = {k: d[k] for k in cls.__dataclass_fields__}
        fields["task_damage"] = np.asarray(d["task_damage"], dtype=np.float64)
        fields["general_damage"] = np.asarray(d["general_damage"], dtype=np.float64)
        return cls(**fields)

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["head_id", "head", "task_damage", "general_damage", "reward"])
        for h in range(len(self.task_damage)):
            w.writerow(
                [h, head_name(h, self.n_heads), self.task_damage[h], self.general_damage[h], self.reward[h]]
            )
        return buf.getvalue()


def build_task_engine(model, task: Task, batch: PromptBatch, ablation: str) -> AblationEngine:
    """The ablation engine of ``task``'s metric on ``batch`` (the task half of the reward)."""
    return AblationEngine(model, Evaluation.for_task(task, batch, model_device(model)), ablation)


class ContrastiveScorer:
    """Exact contrastive rewards for any head set on one prompt batch. ``task_engine`` and
    ``general_engine``: engines already built for this batch and reference (shared, not rebuilt)."""

    def __init__(self, model, task: Task, batch: PromptBatch, reference: ReferenceBatch,
                 ablation: str = "zero", lam: float = 1.0, general_engine: AblationEngine | None = None,
                 task_engine: AblationEngine | None = None) -> None:  # fmt: skip
        check_ablation(ablation)
        if not np.isfinite(lam) or lam < 0:
            raise ValueError(f"lam must be a finite number >= 0, got {lam}")
        self.model, self.task, self.batch, self.reference = model, task, batch, reference
        self.ablation, self.lam = ablation, float(lam)
        device = model_device(model)
        self.task_engine = task_engine or build_task_engine(model, task, batch, ablation)
        # The reference batch is fixed per model, so its engine can be shared across batches.
        self.general_engine = general_engine or AblationEngine(
            model, Evaluation.for_reference(reference, device), ablation
        )

    def damages(self, heads: Iterable[int]) -> tuple[float, float]:
        heads = list(heads)
        task = self.task_engine.clean_score - self.task_engine.score(heads)
        general = self.general_engine.clean_score - self.general_engine.score(heads)
        return task, general

    def reward(self, heads: Iterable[int]) -> float:
        task, general = self.damages(heads)
        return contrastive_reward(task, general, self.lam)

    def sweep(self, general_damage: np.ndarray | None = None, progress: bool | None = False) -> SweepTable:
        """The single-head table; pass a cached ``general_damage`` to skip that sweep."""
        task_damage = self.task_engine.clean_score - self.task_engine.sweep(
            progress, desc=f"oracle sweep ({self.task.name})"
        )
        if general_damage is None:
            general_damage = self.general_engine.clean_score - self.general_engine.sweep(
                progress, desc="general-damage sweep"
            )
        info = self.model.circuit_gym_info
        return SweepTable(
            model=info.name, weights_hash=info.weights_hash, task=self.task.name,
            split=self.batch.split, seed=self.batch.seed, batch_size=self.batch.batch_size,
            ablation=self.ablation, lam=self.lam, reference=self.reference.name,
            n_layers=info.n_layers, n_heads=info.n_heads,
            clean_metric=self.task_engine.clean_score,
            clean_general_loss=-self.general_engine.clean_score,
            task_damage=np.asarray(task_damage, dtype=np.float64),
            general_damage=np.asarray(general_damage, dtype=np.float64),
        )  # fmt: skip
