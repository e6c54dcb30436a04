"""A ranking metric that weighs small circuits: MIB's CPR and CMD on a logarithmic size axis.

MIB's CPR and CMD integrate over the *linear* fraction axis from 0.001 to 1
(:mod:`circuit_gym.circuits.area`): on 29,089 edges the circuits of 20% of the edges or more carry
0.85 of the width and the 29- and 58-edge points 0.0025 (issue 57), so the ranking of the first
few hundred edges, the circuit a method is for, barely counts. Here the same trapezoids run over
``log10(fraction)`` and the area is divided by the axis' width: the mean of ``f`` (CPR) or of
``|1 - f|`` (CMD) with every doubling of the circuit weighted alike, in the units of ``f`` (an
exact circuit at every size: CPR 1, CMD 0).

The axis is MIB's fractions that keep at least one edge and at most ``ranked`` edges (what the
entry ranked; :func:`log_axis_fractions`) and at most :data:`LOG_AXIS_MAX_FRACTION` of the graph:
on a 12 x 12 zoo model with 512 ranked candidates, 0.001-0.01 (29, 58, 145 and 290 edges), so
the metric reads only edges the entry ordered itself. Pure functions of a
:class:`~circuit_gym.circuits.curve.FaithfulnessCurve` (a curve at MIB's fractions is cut to the axis).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from circuit_gym.circuits.area import trapezoid_area
from circuit_gym.circuits.curve import MIB_FRACTIONS, FaithfulnessCurve

LOG_AXIS_MAX_FRACTION = 0.05  # issue 57: small circuits are the goal; 5% of 29,089 edges is 1,454


def log_axis_fractions(
    n_edges: int, ranked: int, fractions: Sequence[float] = MIB_FRACTIONS
) -> tuple[float, ...]:
    """The fractions ``k`` of ``fractions`` with ``1 <= int(k * n_edges) <= ranked`` and
    ``k <= LOG_AXIS_MAX_FRACTION``; ValueError when fewer than two remain (no area)."""
    axis = tuple(
        float(k) for k in fractions if k <= LOG_AXIS_MAX_FRACTION and 1 <= int(k * n_edges) <= int(ranked)
    )
    if len(axis) < 2:
        raise ValueError(f"{ranked} ranked of {n_edges} edges leave fewer than two sizes on the log axis")
    return axis


def log_mean(fractions: Sequence[float], values: Sequence[float] | np.ndarray) -> float:
    """Trapezoid area of ``values`` over ``log10(fractions)``, divided by the axis' width."""
    x = np.log10(np.asarray(fractions, dtype=np.float64))
    return trapezoid_area(x.tolist(), np.asarray(values, dtype=np.float64).tolist()) / float(x[-1] - x[0])


def _on_axis(curve: FaithfulnessCurve, axis: Sequence[float]) -> np.ndarray:
    where = {k: i for i, k in enumerate(curve.fractions)}
    missing = [k for k in axis if k not in where]
    if missing:
        raise ValueError(f"the curve has no point at fractions {missing}")
    return np.asarray([curve.faithfulness[where[k]] for k in axis], dtype=np.float64)


def cpr_log(curve: FaithfulnessCurve, axis: Sequence[float]) -> float:
    """Mean ``f`` on the log axis ``axis`` (higher = better); a curve from signed scores."""
    if curve.absolute:
        raise ValueError("CPR ranks edges by signed score; this curve ranked them by absolute score")
    return log_mean(axis, _on_axis(curve, axis))


def cmd_log(curve: FaithfulnessCurve, axis: Sequence[float]) -> float:
    """Mean ``|1 - f|`` on the log axis ``axis`` (lower = better); a curve from absolute scores."""
    if not curve.absolute:
        raise ValueError("CMD ranks edges by absolute score; this curve ranked them by signed score")
    return log_mean(axis, np.abs(1.0 - _on_axis(curve, axis)))


def budgeted(curve: FaithfulnessCurve, axis: Sequence[float]) -> dict[str, float]:
    """``f`` of the circuit at each size of the axis, keyed ``f_<edges>`` (the budgeted circuits)."""
    values = _on_axis(curve, axis)
    sizes = dict(zip(curve.fractions, curve.sizes, strict=True))
    return {f"f_{sizes[k]}": float(v) for k, v in zip(axis, values, strict=True)}
