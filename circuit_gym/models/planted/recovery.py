"""How well a proposed circuit and a ranking recover a planted model's true circuit, at head or
edge level: the items are flat head ids (``GroundTruth.circuit``) or edge names
(``GroundTruth.edges``, MIB's ``a3.h2->a5.h1<k>``); one formula for both.

- **precision** = share of the proposed items that are in the truth (0 when nothing is
  proposed: an empty proposal finds nothing), **recall** = share of the truth proposed;
- **AUC** of a ranking (every candidate item, most important first): the probability that a true
  item drawn at random is ranked above another item drawn at random (Mann-Whitney's U / (P * N)):
  1 = every true item first, 0.5 = chance, 0 = every true item last.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from typing import SupportsIndex, cast


def precision_recall(proposed: Collection[Hashable], truth: Collection[Hashable]) -> tuple[float, float]:
    """(precision, recall) of the items ``proposed`` (heads or edges) against the ``truth`` circuit."""
    proposed, truth = set(proposed), set(truth)
    if not truth:
        raise ValueError("the true circuit is empty")
    found = len(proposed & truth)
    return (found / len(proposed) if proposed else 0.0), found / len(truth)


def ranking_auc(ranking: Sequence[Hashable], truth: Collection[Hashable]) -> float:
    """AUC of ``ranking`` (every candidate head or edge once, most important first) against ``truth``."""
    ranking, truth = [_item(x) for x in ranking], {_item(x) for x in truth}
    if len(set(ranking)) != len(ranking):
        raise ValueError("an item appears twice in the ranking")
    if not truth <= set(ranking):
        raise ValueError(
            f"the ranking leaves out items of the circuit: {sorted(map(str, truth - set(ranking)))}"
        )
    n_pos = len(truth)
    n_neg = len(ranking) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("the AUC needs items of the circuit and other items")
    # The k-th true item (0-based) at position i has (len - 1 - i) items below it, of which
    # (n_pos - 1 - k) are true: the rest are the other items it beats.
    positions = [i for i, x in enumerate(ranking) if x in truth]
    beaten = sum((len(ranking) - 1 - i) - (n_pos - 1 - k) for k, i in enumerate(positions))
    return beaten / (n_pos * n_neg)


def _item(x: Hashable) -> Hashable:
    """Head ids as ints (numpy integers included), edge names as they are."""
    return x if isinstance(x, str) else int(cast(SupportsIndex, x))
