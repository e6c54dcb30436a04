"""The exact task metric of a set of heads ablated, and of that set plus each candidate head (the
knock-out track's rewards and its exact greedy step), through the circuit runner: a knock-out set
is the circuit of every other head."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from circuit_gym.circuits.circuit import Circuit
from circuit_gym.circuits.runner import CircuitRunner


def knockout_metrics(runner: CircuitRunner, ablated: Iterable[int], candidates: Sequence[int]) -> np.ndarray:
    """The exact batch-mean metric with ``ablated`` and each of ``candidates`` ablated, one
    stacked pass (copy ``i`` of the batch ablates ``candidates[i]`` on top), float64."""
    n_total = runner.n_layers * runner.n_heads
    base = frozenset(range(n_total)) - frozenset(int(h) for h in ablated)
    circuits = [Circuit(base - {int(h)}, runner.n_layers, runner.n_heads) for h in candidates]
    return np.asarray(runner.metric(circuits), dtype=np.float64) if circuits else np.zeros(0)


def set_metric(runner: CircuitRunner, ablated: Iterable[int]) -> float:
    """The exact batch-mean metric with ``ablated`` ablated (one partial pass; the clean metric
    for an empty set)."""
    n_total = runner.n_layers * runner.n_heads
    kept = frozenset(range(n_total)) - frozenset(int(h) for h in ablated)
    return float(runner.metric([Circuit(kept, runner.n_layers, runner.n_heads)])[0])
