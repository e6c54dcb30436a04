"""Areas under faithfulness curves: MIB's CPR and CMD, auto-circuit's normalised area.

Pure functions of a :class:`~circuit_gym.circuits.curve.FaithfulnessCurve`, with MIB's
conventions (``MIB_circuit_track/evaluation.py::evaluate_area_under_curve``): trapezoids
on the *linear* fraction axis between the curve's first and last fraction (0.001 and 1 for
MIB's sizes, so the area's largest possible width is 0.999), no log axis.

- **CPR** (circuit performance ratio): area under ``f``; higher is better. The curve must
  come from the ranking's *signed* scores.
- **CMD** (circuit-model difference): area under ``|1 - f|``; lower is better (0 is best).
  The curve must come from the *absolute* scores.

MIB's maintainers confirmed the two ranking rules in MIB issue 19; each function checks
its curve's rule so they cannot be swapped by accident.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from circuit_gym.circuits.curve import FaithfulnessCurve


def trapezoid_area(x: Sequence[float], y: Sequence[float]) -> float:
    """Sum of trapezoids ``(x[i+1] - x[i]) * (y[i] + y[i+1]) / 2`` (x increasing)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"x and y must be 1-D of one length >= 2, got {x.shape} and {y.shape}")
    if np.any(np.diff(x) <= 0):
        raise ValueError("x must be strictly increasing")
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2))


def cpr(curve: FaithfulnessCurve) -> float:
    """Area under faithfulness (higher = better); needs a curve from signed scores."""
    if curve.absolute:
        raise ValueError("CPR ranks heads by signed score; this curve ranked them by absolute score")
    return trapezoid_area(curve.fractions, curve.faithfulness)


def cmd(curve: FaithfulnessCurve) -> float:
    """Area under ``|1 - f|`` (lower = better); needs a curve from absolute scores."""
    if not curve.absolute:
        raise ValueError("CMD ranks heads by absolute score; this curve ranked them by signed score")
    return trapezoid_area(curve.fractions, np.abs(1.0 - np.asarray(curve.faithfulness)))


def normalised_area(area: float, random_area: float) -> float:
    """auto-circuit's normalised area: a method's area over a random ranking's (its plots'
    "normalized AUC"). For CPR, above 1 beats random; for CMD, below 1 does. NaN when the
    random area is 0."""
    return float(area) / float(random_area) if random_area != 0 else float("nan")
