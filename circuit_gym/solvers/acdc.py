"""ACDC at head level (Conmy et al. 2023), a reference circuit solver.

ACDC walks the model from the output backwards and removes a component when removing it
changes the task behaviour by less than a threshold ``tau``. The original works on edges
and measures the change with a KL divergence or a task metric; its repository has no
merged head-only mode (its issue 73, PR 76), so this is our head-level version:

- the components are attention heads, visited from the last layer to the first (within a
  layer, from the last head to the first);
- the circuit starts full; removing head ``h`` means ablating it with the runner's
  ablation (counterfactual patching by default on the embedded models), on top of the
  heads already removed;
- the change is the drop of the task metric, ``m(current) - m(current - h)`` (the metric
  variant of ACDC; a rise counts as a negative drop, so such heads are always removed);
  ``h`` is removed when the drop is below ``tau``, and ``m(current)`` moves on;
- a **threshold sweep**: ``taus`` in increasing order, each pass starting from the circuit
  the previous one left (a cumulative sweep, this package's own: auto-circuit 1.0.1 restarts
  every threshold from the full graph instead). A head's score is the threshold of the
  pass that removed it; heads kept by every pass score ``+inf``. Higher = more important,
  as for every solver here. ``taus`` default to ``|m(full) - m(empty)|`` times a geometric
  grid from 1e-3 to 0.5, so the thresholds are in the task's unit and scale with the
  behaviour.

Cost (counted the way the scorer's ``PassCounter`` counts, ``circuit_gym/passes.py``): the runner's two
forward passes (clean and counterfactual; one for zero or mean ablation) and the engine's
one partial check pass, one partial pass for the empty circuit, then one partial pass per
head tried, starting at that head's layer or lower (``AcdcResult.tries``).

    result = acdc(CircuitRunner.for_task(model, task, batch))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from circuit_gym.circuits import Circuit, CircuitRunner, Ranking
from circuit_gym.circuits.thresholds import absolute_taus
from circuit_gym.progress import progress_iter


@dataclass(frozen=True)
class AcdcResult:
    ranking: Ranking
    taus: tuple[float, ...]  # the thresholds swept, increasing, in the metric's unit
    kept: tuple[frozenset[int], ...]  # the circuit left after each threshold
    tries: int  # circuits evaluated (one partial pass each)


def acdc(runner: CircuitRunner, taus: Sequence[float] | None = None, progress: bool = False) -> AcdcResult:
    """Run the threshold sweep on ``runner``'s batch (see the module docstring)."""
    n_layers, n_heads = runner.n_layers, runner.n_heads
    current = Circuit.full(n_layers, n_heads)
    m_current = runner.full_metric
    if taus is None:
        m_empty = float(runner.metric([Circuit.empty(n_layers, n_heads)])[0])
        taus = absolute_taus(runner.full_metric, m_empty)
    taus = [float(t) for t in taus]
    if not taus or any(b <= a for a, b in zip(taus, taus[1:], strict=False)) or not np.all(np.isfinite(taus)):
        raise ValueError(f"taus must be finite and strictly increasing, got {taus}")
    scores = np.full(n_layers * n_heads, np.inf)
    visit_order = range(n_layers * n_heads - 1, -1, -1)  # output backwards
    kept, tries = [], 0
    for tau in progress_iter(taus, "ACDC thresholds", unit="threshold", requested=progress):
        for head in visit_order:
            if head not in current.heads:
                continue
            candidate = current.without(head)
            m_candidate = float(runner.metric([candidate])[0])
            tries += 1
            if m_current - m_candidate < tau:
                current, m_current = candidate, m_candidate
                scores[head] = tau
        kept.append(current.heads)
    ranking = Ranking.from_array(scores, "acdc", n_layers, n_heads)
    return AcdcResult(ranking, tuple(taus), tuple(kept), tries)
