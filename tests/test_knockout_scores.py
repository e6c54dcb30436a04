"""The knock-out scores (issue 60) against hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from circuit_gym.circuits.knockout_scores import (
    knockout_area,
    ranking_auc,
    relative_area,
    remaining_curve,
    truth_scores,
)


def test_remaining_curve_pads_a_short_order_with_its_last_value():
    # clean 4: after 1, 2 ablations the metric is 3, 1; stopped there, K = 4
    assert remaining_curve([3.0, 1.0], 4.0, 4).tolist() == [0.75, 0.25, 0.25, 0.25]
    assert remaining_curve([], 4.0, 2).tolist() == [1.0, 1.0]  # nothing ablated: all of it remains
    with pytest.raises(ValueError):
        remaining_curve([1.0], 0.0, 1)  # no behaviour to knock out


def test_area_and_its_ratio_to_greedy_by_hand():
    # removed fractions 0.25, 0.75, 0.75, 0.75: mean 0.625
    assert knockout_area([3.0, 1.0], 4.0, 4) == pytest.approx(0.625)
    # greedy: metric 2, 0, 0, 0 -> removed 0.5, 1, 1, 1: mean 0.875; ratio 0.625 / 0.875 = 5/7
    assert relative_area([3.0, 1.0], [2.0, 0.0, 0.0, 0.0], 4.0, 4) == pytest.approx(5 / 7)
    # a method beating myopic greedy: metric -1 after one ablation (removed 1.25 every step)
    assert relative_area([-1.0], [2.0, 0.0], 4.0, 2) == pytest.approx(1.25 / 0.75)
    assert math.isnan(relative_area([1.0], [4.0, 4.0], 4.0, 2))  # greedy removes nothing


def test_auc_precision_recall_by_hand():
    # 6 heads, truth {0, 1}, backup {0}; order [1, 3]: scores h1 = 2, h3 = 1, the rest 0.
    # pairs (truth, other): h1 beats all 4 others (4); h0 loses to h3, ties h2, h4, h5 (1.5). 5.5 / 8
    assert ranking_auc([1, 3], {0, 1}, 6) == pytest.approx(5.5 / 8)
    s = truth_scores([1, 3], {0, 1}, {0}, 6)
    assert s == pytest.approx({"precision": 0.5, "recall": 0.5, "backup_recall": 0.0, "auc": 5.5 / 8})
    full = truth_scores([0, 1], {0, 1}, {0}, 6)
    assert full["auc"] == 1.0 and full["backup_recall"] == 1.0 and full["precision"] == 1.0
    assert math.isnan(truth_scores([2], {0}, set(), 6)["backup_recall"])
    assert np.isnan(ranking_auc([0], set(), 6))
