"""Faithfulness curves: circuits of growing size from one ranking, all run in one pass.

Sizes follow MIB's circuit track: fractions :data:`MIB_FRACTIONS` of the ``N`` heads, and
the circuit at fraction ``k`` keeps ``n = int(k * N)`` heads (MIB's rounding, kept so that
areas compare with MIB's). With ``N = 144`` heads the sizes are
``0, 0, 0, 1, 2, 7, 14, 28, 72, 144``: the first three points are the empty circuit
(``f = 0`` by definition) and are kept, duplicated, as MIB keeps them; with ``N = 16``
("tiny") the first five are. The curve records the size actually kept at each fraction.

Every circuit of a curve, the empty circuit (for ``m(empty)``) and any other curve
requested in the same call are run together, stacked along the batch, by one
:meth:`CircuitRunner.metric` call; identical circuits are run once. ``m(full)`` is the
clean model's metric (MIB's ``evaluate_baseline``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from circuit_gym.circuits.circuit import Circuit
from circuit_gym.circuits.faithfulness import faithfulness
from circuit_gym.circuits.ranking import Ranking
from circuit_gym.circuits.runner import CircuitRunner

MIB_FRACTIONS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def circuit_sizes(n_total: int, fractions: Sequence[float] = MIB_FRACTIONS) -> tuple[int, ...]:
    """``int(k * n_total)`` heads for each fraction ``k`` (MIB's rounding: down)."""
    if any(not 0 < k <= 1 for k in fractions):
        raise ValueError(f"fractions must be in (0, 1], got {list(fractions)}")
    if list(fractions) != sorted(set(fractions)):
        raise ValueError("fractions must be strictly increasing")
    return tuple(int(k * n_total) for k in fractions)


@dataclass(frozen=True)
class FaithfulnessCurve:
    """``f`` of a ranking's top-``n`` circuits at each fraction, and what it was computed from."""

    method: str
    absolute: bool  # ranked by |score| (MIB's rule for CMD) or by signed score (for CPR)
    fractions: tuple[float, ...]
    sizes: tuple[int, ...]  # heads actually kept at each fraction
    faithfulness: tuple[float, ...]
    metric: tuple[float, ...]  # m(C) at each fraction
    empty_metric: float
    full_metric: float

    def to_dict(self) -> dict:
        return {
            "method": self.method, "absolute": self.absolute, "fractions": list(self.fractions),
            "sizes": list(self.sizes), "faithfulness": list(self.faithfulness), "metric": list(self.metric),
            "empty_metric": self.empty_metric, "full_metric": self.full_metric,
        }  # fmt: skip


def faithfulness_curves(runner: CircuitRunner, requests: Sequence[tuple[Ranking, bool]],
                        fractions: Sequence[float] = MIB_FRACTIONS) -> list[FaithfulnessCurve]:  # fmt: skip
    """One curve per ``(ranking, absolute)`` request, from a single stacked pass."""
    empty = Circuit.empty(runner.n_layers, runner.n_heads)
    return stacked_curves(runner.metric, runner.full_metric, empty, runner.n_layers * runner.n_heads, requests,
                          fractions)  # fmt: skip


def stacked_curves(metric: Callable[[list], np.ndarray], full_metric: float, empty, n_total: int,
                   requests: Sequence[tuple], fractions: Sequence[float] = MIB_FRACTIONS) -> list[FaithfulnessCurve]:  # fmt: skip
    """The curves of any level (heads, edges): ``metric(circuits)`` runs every circuit of every request and
    ``empty`` in one call (identical circuits once); a ranking needs ``top(n, absolute)`` and ``method``,
    a circuit ``size``; ``n_total`` components."""
    sizes = circuit_sizes(n_total, fractions)
    wanted = [[ranking.top(n, absolute) for n in sizes] for ranking, absolute in requests]
    unique = list(dict.fromkeys([empty, *(c for circuits in wanted for c in circuits)]))
    metrics = dict(zip(unique, np.asarray(metric(unique)).tolist(), strict=True))
    m_empty = metrics[empty]
    curves = []
    for (ranking, absolute), circuits in zip(requests, wanted, strict=True):
        m = [metrics[c] for c in circuits]
        f = [float(faithfulness(v, m_empty, full_metric)) for v in m]
        curves.append(FaithfulnessCurve(ranking.method, bool(absolute), tuple(float(k) for k in fractions),
                                        tuple(c.size for c in circuits), tuple(f), tuple(m), m_empty, full_metric))  # fmt: skip
    return curves


def faithfulness_curve(runner: CircuitRunner, ranking: Ranking, absolute: bool = False,
                       fractions: Sequence[float] = MIB_FRACTIONS) -> FaithfulnessCurve:  # fmt: skip
    """The curve of one ranking (signed scores unless ``absolute``)."""
    return faithfulness_curves(runner, [(ranking, absolute)], fractions)[0]
