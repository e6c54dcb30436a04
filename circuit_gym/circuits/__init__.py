"""Circuits, not only bottleneck heads: faithfulness curves, CPR and CMD (MIB's circuit track).

One idea per module:

- :mod:`~circuit_gym.circuits.ranking` — :class:`Ranking`, signed scores per head from a solver;
- :mod:`~circuit_gym.circuits.circuit` — :class:`Circuit`, a frozen head mask;
- :mod:`~circuit_gym.circuits.runner` — :class:`CircuitRunner`, the only code that patches heads;
- :mod:`~circuit_gym.circuits.faithfulness` — ``f(C)``, MIB's formula;
- :mod:`~circuit_gym.circuits.curve` — circuits of MIB's sizes from a ranking, in one pass;
- :mod:`~circuit_gym.circuits.area` — CPR, CMD, normalised area (pure functions);
- :mod:`~circuit_gym.circuits.random_baseline` — random rankings;
- :mod:`~circuit_gym.circuits.scores` — :func:`circuit_scores` over a task's batches;
- :mod:`~circuit_gym.circuits.preferences` — a policy's preferences as a ranking, CPR / CMD per episode;
- :mod:`~circuit_gym.circuits.mib` — MIB's circuit JSON, out and in;
- :mod:`~circuit_gym.circuits.plot` — the faithfulness-curve figure.

See docs/circuits.md.
"""

from circuit_gym.circuits.area import cmd, cpr, normalised_area, trapezoid_area
from circuit_gym.circuits.circuit import Circuit
from circuit_gym.circuits.curve import (
    MIB_FRACTIONS,
    FaithfulnessCurve,
    circuit_sizes,
    faithfulness_curve,
    faithfulness_curves,
)
from circuit_gym.circuits.faithfulness import faithfulness
from circuit_gym.circuits.random_baseline import random_ranking, random_rankings
from circuit_gym.circuits.ranking import Ranking
from circuit_gym.circuits.runner import CircuitRunner
from circuit_gym.circuits.scores import RankingFn, batch_scores, circuit_scores

__all__ = [
    "MIB_FRACTIONS", "Circuit", "CircuitRunner", "FaithfulnessCurve", "Ranking", "RankingFn", "batch_scores",
    "circuit_scores", "circuit_sizes", "cmd", "cpr", "faithfulness", "faithfulness_curve",
    "faithfulness_curves", "normalised_area", "random_ranking", "random_rankings", "trapezoid_area",
]  # fmt: skip
