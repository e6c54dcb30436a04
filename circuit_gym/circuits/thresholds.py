"""ACDC's threshold grid, shared by the head level (``solvers/acdc.py``) and the edge level
(``edges/acdc.py``): one grid and one formula, below both."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Relative thresholds: 12 geometric steps from 1e-3 to 0.5 of the gap between the full and the
# empty circuit's metric (the sweep removes more as tau grows).
DEFAULT_RELATIVE_TAUS = tuple(np.geomspace(1e-3, 0.5, 12).tolist())


def absolute_taus(
    m_full: float, m_empty: float, relative: Sequence[float] = DEFAULT_RELATIVE_TAUS
) -> list[float]:
    """The thresholds in the metric's unit: ``|m(full) - m(empty)| * t`` for each relative ``t``, increasing."""
    return [abs(float(m_full) - float(m_empty)) * float(t) for t in sorted(relative)]
