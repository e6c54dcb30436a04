"""Edge faithfulness curves at MIB's sizes, and a ranking's edge CPR / CMD on one batch.

The edge twin of :mod:`circuit_gym.circuits.curve`, with the same conventions and the same
formulas, imported, not copied: sizes are ``int(k * N)`` edges for MIB's fractions ``k``
(:func:`~circuit_gym.circuits.curve.circuit_sizes`; for 29,089 edges the first point keeps
29 edges), ``f`` is :func:`~circuit_gym.circuits.faithfulness.faithfulness`, CPR and CMD are
:func:`~circuit_gym.circuits.area.cpr` / :func:`~circuit_gym.circuits.area.cmd` of a
:class:`~circuit_gym.circuits.curve.FaithfulnessCurve` (signed ranking for CPR, absolute
for CMD). ``m(full)`` is the clean pass, ``m(empty)`` the circuit of no edge (the corrupted
run). Every circuit of every requested curve, and the empty one, run in one
:meth:`EdgePatcher.metric` call; identical circuits run once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from circuit_gym.circuits.area import cmd, cpr
from circuit_gym.circuits.curve import MIB_FRACTIONS, FaithfulnessCurve, stacked_curves
from circuit_gym.edges.circuit import EdgeCircuit
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking, random_edge_ranking


def edge_faithfulness_curves(patcher: EdgePatcher, requests: Sequence[tuple[EdgeRanking, bool]],
                             fractions: Sequence[float] = MIB_FRACTIONS) -> list[FaithfulnessCurve]:  # fmt: skip
    """One curve per ``(ranking, absolute)`` request, all circuits in one stacked call."""
    graph = patcher.graph
    return stacked_curves(patcher.metric, patcher.full_metric, EdgeCircuit.empty(graph), graph.n_edges, requests,
                          fractions)  # fmt: skip


def edge_curve(patcher: EdgePatcher, ranking: EdgeRanking, absolute: bool = False,
               fractions: Sequence[float] = MIB_FRACTIONS) -> FaithfulnessCurve:  # fmt: skip
    """The curve of one ranking (signed scores unless ``absolute``)."""
    return edge_faithfulness_curves(patcher, [(ranking, absolute)], fractions)[0]


def edge_batch_scores(patcher: EdgePatcher, ranking: EdgeRanking, n_random: int = 0, seed: int = 0,
                      fractions: Sequence[float] = MIB_FRACTIONS) -> dict:  # fmt: skip
    """Edge CPR, CMD and curves of ``ranking`` on the patcher's batch, in the layout of
    :func:`circuit_gym.circuits.scores.batch_scores` (so :func:`~circuit_gym.circuits.scores.
    summarise_batches` averages it over episodes); ``n_random`` random rankings give the
    random baseline (default none: every random curve costs as much as the method's)."""
    randoms = [random_edge_ranking(patcher.graph, seed + i) for i in range(n_random)]
    requests = [(ranking, False), (ranking, True)] + [(r, a) for r in randoms for a in (False, True)]
    curves = edge_faithfulness_curves(patcher, requests, fractions)
    signed, absolute, rest = curves[0], curves[1], curves[2:]
    nan = float("nan")
    return {
        "cpr": cpr(signed), "cmd": cmd(absolute),
        "cpr_random": float(np.mean([cpr(c) for c in rest[0::2]])) if rest else nan,
        "cmd_random": float(np.mean([cmd(c) for c in rest[1::2]])) if rest else nan,
        "curve": signed.to_dict(), "curve_absolute": absolute.to_dict(),
        "curve_random": np.mean([c.faithfulness for c in rest[0::2]], axis=0).tolist() if rest
        else [nan] * len(signed.fractions),
        "passes": dict(ranking.passes),
    }  # fmt: skip
