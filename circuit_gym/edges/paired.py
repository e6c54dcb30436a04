"""Paired differences between entries that played the same episodes (issue 57, item 4).

Two entries on the edge track play the same batches of the same models, so the per-episode
difference of their scores cancels what the episode itself contributes (a hard task, a model whose
behaviour no small circuit carries): its mean and 95% Student-t interval separate two entries that
the intervals of their own means would not (issue 57's audit of the zoo v2 edge track: EAP-IG's and EAP's public CPR
intervals overlap, their paired difference is +0.205, p = 0.03). Episodes are matched by a key (model or kind, task, seed);
only episodes both entries have count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from circuit_gym.stats import mean_ci95


def paired_difference(a: Mapping[Any, float], b: Mapping[Any, float]) -> dict:
    """``a - b`` over the episode keys both hold: ``{"mean", "ci95", "n"}`` (interval NaN below two
    pairs; ``n`` 0 and mean NaN when they share none)."""
    keys = [k for k in a if k in b]
    mean, ci = mean_ci95([float(a[k]) - float(b[k]) for k in keys])
    return {"mean": mean, "ci95": ci, "n": len(keys)}


def adjacent_differences(scores: Mapping[str, Mapping[Any, float]], order: Sequence[str]) -> list[dict]:
    """For each pair of neighbours in ``order`` (the board's ranking, best first): the paired
    difference of the upper entry minus the lower, with ``above`` / ``below`` names and
    ``separated`` (the interval excludes 0)."""
    out = []
    for upper, lower in zip(order, order[1:], strict=False):
        d = paired_difference(scores[upper], scores[lower])
        low, high = d["ci95"]
        out.append({"above": upper, "below": lower, **d, "separated": bool(low > 0 or high < 0)})
    return out
