"""Scores of a knock-out (issue 60): how fast an ablation order removes a behaviour, and what it hits.

Pure functions of numbers (no model): a knock-out is an order of ablated heads and the task
metric after each cumulative ablation.

- **knock-out curve**: the metric remaining after ``k = 1..K`` ablations, as a fraction of the
  clean metric (:func:`remaining_curve`). An order that stopped before ``K`` keeps its last value
  (nothing more was ablated); an empty order stays at the clean metric (1).
- **knock-out area**: the mean fraction removed over ``k = 1..K``, ``mean_k (1 - remaining_k)``
  (:func:`knockout_area`): 1 = the whole behaviour gone at the first ablation, 0 = nothing removed;
  its ratio to exact greedy's area on the same batch (:func:`relative_area`): 1 = as fast as
  exact greedy, above 1 where greedy's myopia costs it (backups, OR pairs).
- **against a truth** (planted models): precision and recall of the ablated set over the truth
  circuit (backups and suppressors counted as circuit heads), backup recall, and the ROC AUC of
  the order as a ranking (:func:`truth_scores`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def _padded(metrics: Sequence[float], clean: float, k: int) -> np.ndarray:
    m = np.asarray(metrics, dtype=np.float64)[:k]
    if m.size < k:
        m = np.concatenate([m, np.full(k - m.size, m[-1] if m.size else clean)])
    return m


def remaining_curve(metrics: Sequence[float], clean: float, k: int | None = None) -> np.ndarray:
    """The metric remaining after ``1..k`` ablations as fractions of ``clean`` (``k``: default the
    length of ``metrics``; a shorter order keeps its last value). ``clean`` must be positive: a
    behaviour that is not there cannot be knocked out."""
    if not np.isfinite(clean) or clean <= 0:
        raise ValueError(f"the clean metric must be finite and > 0, got {clean}")
    k = len(metrics) if k is None else int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return _padded(metrics, clean, k) / clean


def knockout_area(metrics: Sequence[float], clean: float, k: int | None = None) -> float:
    """The mean fraction of the clean metric removed after ``1..k`` ablations."""
    return float(np.mean(1.0 - remaining_curve(metrics, clean, k)))


def relative_area(metrics: Sequence[float], greedy_metrics: Sequence[float], clean: float, k: int) -> float:
    """``knockout_area(metrics) / knockout_area(greedy_metrics)`` over ``1..k``; NaN when greedy
    removes nothing (no reference to compare with)."""
    reference = knockout_area(greedy_metrics, clean, k)
    if reference <= 0:
        return float("nan")
    return knockout_area(metrics, clean, k) / reference


def ranking_auc(order: Sequence[int], truth: Iterable[int], n_total: int) -> float:
    """ROC AUC of the order as a ranking of all ``n_total`` heads: the ``j``-th head ablated
    scores ``len(order) - j``, heads never ablated tie at 0 below them (a tie counts one half).
    NaN when the truth is empty or holds every head."""
    truth = {int(h) for h in truth}
    scores = np.zeros(n_total)
    for j, h in enumerate(order):
        scores[int(h)] = len(order) - j
    pos = scores[sorted(truth)]
    neg = np.delete(scores, sorted(truth))
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (pos.size * neg.size))


def truth_scores(order: Sequence[int], truth: Iterable[int], backups: Iterable[int], n_total: int) -> dict:
    """Precision and recall of the ablated set over ``truth``, backup recall (NaN without
    backups) and :func:`ranking_auc`."""
    ablated, truth, backups = {int(h) for h in order}, {int(h) for h in truth}, {int(h) for h in backups}
    hit = len(ablated & truth)
    return {
        "precision": hit / len(ablated) if ablated else float("nan"),
        "recall": hit / len(truth) if truth else float("nan"),
        "backup_recall": len(ablated & backups) / len(backups) if backups else float("nan"),
        "auc": ranking_auc(order, truth, n_total),
    }
