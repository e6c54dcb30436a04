"""ACDC at head level (Conmy et al. 2023) as a ranking function of the baselines' circuit scores.

The threshold sweep, what it visits and what it costs are documented in
:mod:`circuit_gym.solvers.acdc`, where it lives (the leaderboard's builtin ``acdc`` runs it too).

    ranking = acdc_ranking(model, task, batch)
"""

from __future__ import annotations

from collections.abc import Sequence

from circuit_gym.circuits import CircuitRunner, Ranking
from circuit_gym.solvers.acdc import acdc
from circuit_gym.tasks.base import PromptBatch, Task

__all__ = ["acdc_ranking"]


def acdc_ranking(model, task: Task, batch: PromptBatch, *, ablation: str | None = None,
                 taus: Sequence[float] | None = None) -> Ranking:  # fmt: skip
    """ACDC's head ranking for one prompt batch (a :data:`circuit_gym.circuits.RankingFn`)."""
    return acdc(CircuitRunner.for_task(model, task, batch, ablation), taus).ranking
