"""What every circuit runner shares: the task metric of any circuit on one prompt batch, over one
:class:`~circuit_gym.ablation.engine.AblationEngine` (its clean pass and replacement values).

A circuit of heads (:class:`~circuit_gym.circuits.runner.CircuitRunner`) and a circuit of edges
(:class:`~circuit_gym.edges.patching.EdgePatcher`) differ only in how they run the patched
passes (``metric_rows``); the engine they are built on, m(full) and the mean over the batch are
one definition here, so that the two levels' faithfulness curves read the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, Self, TypeVar

import numpy as np

from circuit_gym.ablation.contrastive import build_task_engine
from circuit_gym.ablation.engine import AblationEngine, default_ablation
from circuit_gym.tasks.base import PromptBatch, Task

C = TypeVar("C")


class CircuitMetric(Generic[C]):
    """Task metric of any circuit of kind ``C`` on one prompt batch (higher = better behaviour)."""

    def __init__(self, engine: AblationEngine) -> None:
        self.engine = engine
        self.ablation = engine.kind

    @classmethod
    def for_task(
        cls, model, task: Task, batch: PromptBatch, ablation: str | None = None, **options: Any
    ) -> Self:
        """One for ``task`` on ``batch``; ``ablation`` defaults to the model's
        (:func:`~circuit_gym.ablation.engine.default_ablation`); ``options`` go to the constructor."""
        if ablation is None:
            ablation = default_ablation(model.circuit_gym_info.name)
        return cls(build_task_engine(model, task, batch, ablation), **options)

    @property
    def full_metric(self) -> float:
        """m(full): the clean model's metric (nothing patched), averaged over the batch."""
        return self.engine.clean_score

    @property
    def batch_size(self) -> int:
        return int(self.engine.ev.tokens.shape[0])

    def metric(self, circuits: Sequence[C]) -> np.ndarray:
        """m(C) for each circuit: the task metric averaged over the batch, float64."""
        return self.metric_rows(circuits).mean(1)

    def metric_rows(self, circuits: Sequence[C]) -> np.ndarray:
        """Per-prompt task metric of each circuit, ``[len(circuits), batch]``, float64."""
        raise NotImplementedError
