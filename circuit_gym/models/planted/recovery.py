"""How well a proposed circuit and a ranking of heads recover a planted model's true circuit.

- **precision** = share of the proposed heads that are circuit heads (0 when nothing is
  proposed: an empty proposal finds nothing), **recall** = share of the circuit proposed;
- **AUC** of a ranking (every head, most important first): the probability that a circuit head
  drawn at random is ranked above a non-circuit head drawn at random (Mann-Whitney's U / (P * N)):
  1 = every circuit head first, 0.5 = chance, 0 = every circuit head last.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def precision_recall(proposed: Collection[int], truth: Collection[int]) -> tuple[float, float]:
    """(precision, recall) of the heads ``proposed`` against the ``truth`` circuit."""
    proposed, truth = set(proposed), set(truth)
    if not truth:
        raise ValueError("the true circuit has no head")
    found = len(proposed & truth)
    return (found / len(proposed) if proposed else 0.0), found / len(truth)


def ranking_auc(ranking: Sequence[int], truth: Collection[int]) -> float:
    """AUC of ``ranking`` (every head id once, most important first) against ``truth``."""
    ranking, truth = [int(h) for h in ranking], set(truth)
    if len(set(ranking)) != len(ranking):
        raise ValueError("a head appears twice in the ranking")
    if not truth <= set(ranking):
        raise ValueError(f"the ranking leaves out circuit heads {sorted(truth - set(ranking))}")
    n_pos = len(truth)
    n_neg = len(ranking) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("the AUC needs circuit heads and other heads")
    # The k-th circuit head (0-based) at position i has (len - 1 - i) heads below it, of which
    # (n_pos - 1 - k) are circuit heads: the rest are the non-circuit heads it beats.
    positions = [i for i, h in enumerate(ranking) if h in truth]
    beaten = sum((len(ranking) - 1 - i) - (n_pos - 1 - k) for k, i in enumerate(positions))
    return beaten / (n_pos * n_neg)
