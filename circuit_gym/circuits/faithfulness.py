"""Faithfulness of a circuit, MIB's definition (the one place for this formula).

``f(C) = (m(C) - m(empty)) / (m(full) - m(empty))`` with ``m`` the task metric averaged
over the batch, ``m(full)`` the clean model and ``m(empty)`` the circuit with every head
ablated. ``f = 1``: the circuit alone recovers the model's behaviour; ``f = 0``: no better
than nothing. ``f`` can leave [0, 1] (a circuit can beat the full model, or do worse than
the empty one).
"""

from __future__ import annotations

import numpy as np


def faithfulness(metric: float | np.ndarray, empty_metric: float, full_metric: float) -> float | np.ndarray:
    """``(m(C) - m(empty)) / (m(full) - m(empty))``; NaN where ``m(full) == m(empty)``
    (then ablating every head changes nothing and no circuit can be told apart)."""
    span = float(full_metric) - float(empty_metric)
    if span == 0.0:
        return np.full_like(np.asarray(metric, dtype=np.float64), np.nan) if np.ndim(metric) else float("nan")
    out = (np.asarray(metric, dtype=np.float64) - float(empty_metric)) / span
    return out if np.ndim(metric) else float(out)
