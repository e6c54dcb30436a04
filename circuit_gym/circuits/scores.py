"""A solver's circuit scores on a task: CPR and CMD per batch, with intervals.

:func:`circuit_scores` is what a leaderboard or the main job calls: for every prompt batch
(episode) it asks the solver for a ranking, runs the signed and absolute curves of that
ranking and of ``n_random`` random rankings in one stacked pass, and reports

- ``cpr``, ``cmd``: the mean over batches, with 95% Student-t intervals over batches;
- ``cpr_random``, ``cmd_random``: the same for random rankings (each batch: the mean over
  its random rankings), and ``cpr_normalised`` / ``cmd_normalised``: auto-circuit's ratio
  of the two means;
- ``curve``: the mean faithfulness at each fraction (signed ranking) with intervals, for
  figures (:func:`circuit_gym.circuits.plot.faithfulness_figure`);
- ``per_batch``: every batch's areas and curves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from circuit_gym.ablation.engine import default_ablation
from circuit_gym.circuits.area import cmd, cpr, normalised_area
from circuit_gym.circuits.curve import MIB_FRACTIONS, faithfulness_curves
from circuit_gym.circuits.random_baseline import random_rankings
from circuit_gym.circuits.ranking import Ranking
from circuit_gym.circuits.runner import CircuitRunner
from circuit_gym.progress import progress_iter
from circuit_gym.stats import mean_ci95, mean_ci_columns
from circuit_gym.tasks.base import PromptBatch, Task

# (model, task, batch) -> Ranking; partial() extra arguments such as the ablation kind.
RankingFn = Callable[[object, Task, PromptBatch], Ranking]


def batch_scores(runner: CircuitRunner, ranking: Ranking, n_random: int = 8, seed: int = 0,
                 fractions: Sequence[float] = MIB_FRACTIONS) -> dict:  # fmt: skip
    """CPR, CMD and curves of ``ranking`` and of random rankings on one runner's batch."""
    randoms = random_rankings(runner.n_layers, runner.n_heads, n_random, seed)
    requests = [(ranking, False), (ranking, True)] + [(r, a) for r in randoms for a in (False, True)]
    curves = faithfulness_curves(runner, requests, fractions)
    signed, absolute, rest = curves[0], curves[1], curves[2:]
    return {
        "cpr": cpr(signed), "cmd": cmd(absolute),
        "cpr_random": float(np.mean([cpr(c) for c in rest[0::2]])),
        "cmd_random": float(np.mean([cmd(c) for c in rest[1::2]])),
        "curve": signed.to_dict(), "curve_absolute": absolute.to_dict(),
        "curve_random": np.mean([c.faithfulness for c in rest[0::2]], axis=0).tolist(),
    }  # fmt: skip


def circuit_scores(model, task: Task, batches: Sequence[PromptBatch], ranking_fn: RankingFn, *,
                   ablation: str | None = None, n_random: int = 8, seed: int = 0,
                   fractions: Sequence[float] = MIB_FRACTIONS, progress: bool = False) -> dict:  # fmt: skip
    """CPR and CMD of the solver ``ranking_fn`` on ``task`` over ``batches``, with intervals."""
    if not batches:
        raise ValueError("circuit_scores needs at least one prompt batch")
    ablation = default_ablation(model.circuit_gym_info.name) if ablation is None else ablation
    per_batch, method = [], None
    for batch in progress_iter(batches, f"circuit scores {task.name}", unit="batch", requested=progress):
        ranking = ranking_fn(model, task, batch)
        if not isinstance(ranking, Ranking):
            raise TypeError(
                f"ranking_fn must return a circuit_gym.circuits.Ranking, got {type(ranking).__name__}"
            )
        method = ranking.method
        runner = CircuitRunner.for_task(model, task, batch, ablation)
        per_batch.append(batch_scores(runner, ranking, n_random, seed, fractions))
    return summarise_batches(per_batch, method, task.name, ablation)


def summarise_batches(per_batch: Sequence[dict], method: str | None, task: str, ablation: str) -> dict:
    """Means over batches of :func:`batch_scores` results, with 95% Student-t intervals."""
    if not per_batch:
        raise ValueError("no batches to summarise")
    per_batch = list(per_batch)
    out = {"method": method, "task": task, "ablation": ablation, "batches": len(per_batch)}
    for key in ("cpr", "cmd", "cpr_random", "cmd_random"):
        out[key], out[f"{key}_ci95"] = mean_ci95([b[key] for b in per_batch])
    out["cpr_normalised"] = normalised_area(out["cpr"], out["cpr_random"])
    out["cmd_normalised"] = normalised_area(out["cmd"], out["cmd_random"])
    f = np.array([b["curve"]["faithfulness"] for b in per_batch], dtype=np.float64)
    mean, lo, hi = mean_ci_columns(f)
    out["curve"] = {
        "fractions": list(per_batch[0]["curve"]["fractions"]), "sizes": list(per_batch[0]["curve"]["sizes"]),
        "faithfulness": mean.tolist(), "faithfulness_ci95": [lo.tolist(), hi.tolist()],
        "random_faithfulness": np.mean([b["curve_random"] for b in per_batch], axis=0).tolist(),
    }  # fmt: skip
    out["per_batch"] = per_batch
    return out
