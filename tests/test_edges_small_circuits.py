"""The log-axis CPR / CMD (circuit_gym/edges/small_circuits.py) against curves computed by hand,
and the axis they read (issue 57: the metric weighs small circuits and reads only ranked edges)."""

from __future__ import annotations

import math

import pytest

from circuit_gym.circuits.area import cpr
from circuit_gym.circuits.curve import MIB_FRACTIONS, FaithfulnessCurve
from circuit_gym.edges.small_circuits import budgeted, cmd_log, cpr_log, log_axis_fractions, log_mean


def _curve(fractions, f, absolute=False, n=29_089):
    sizes = tuple(int(k * n) for k in fractions)
    return FaithfulnessCurve("hand", absolute, tuple(fractions), sizes, tuple(f), tuple(f), 0.0, 1.0)


def test_the_zoo_axis_is_the_four_budgeted_sizes():
    # 29,089 edges, 512 ranked: int(k * 29,089) for k = 0.001 .. 0.01 is 29, 58, 145, 290; 0.02 is 581 > 512
    axis = log_axis_fractions(29_089, 512)
    assert axis == (0.001, 0.002, 0.005, 0.01)
    assert [int(k * 29_089) for k in axis] == [29, 58, 145, 290]
    # every edge ranked: the axis stops at 5% (1,454 edges), never the linear axis' 100%
    assert log_axis_fractions(29_089, 29_089) == (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)
    # a small planted graph: sizes below one edge are left out (int(0.005 * 300) = 1 is the first)
    assert log_axis_fractions(300, 300) == (0.005, 0.01, 0.02, 0.05)
    with pytest.raises(ValueError):
        log_axis_fractions(29_089, 40)  # only 29 edges fit: no area


def test_log_mean_by_hand():
    # x = log10(0.001, 0.01, 0.1) = -3, -2, -1; f = 0, 1, 1: trapezoids 0.5 + 1.0 over a width of 2
    assert log_mean((0.001, 0.01, 0.1), (0.0, 1.0, 1.0)) == pytest.approx(0.75, abs=1e-12)


def test_cpr_and_cmd_on_the_log_axis_by_hand():
    # f at 29, 58, 145, 290 edges: 0.2, 0.5, 0.8, 1.1. log10 gaps: log 2, log 2.5, log 2 (width log 10 = 1)
    f = [0.2, 0.5, 0.8, 1.1] + [1.0] * 6
    signed, absolute = _curve(MIB_FRACTIONS, f), _curve(MIB_FRACTIONS, f, absolute=True)
    axis = (0.001, 0.002, 0.005, 0.01)
    l2, l25 = math.log10(2), math.log10(2.5)
    hand_cpr = l2 * (0.2 + 0.5) / 2 + l25 * (0.5 + 0.8) / 2 + l2 * (0.8 + 1.1) / 2
    hand_cmd = l2 * (0.8 + 0.5) / 2 + l25 * (0.5 + 0.2) / 2 + l2 * (0.2 + 0.1) / 2
    assert cpr_log(signed, axis) == pytest.approx(hand_cpr, abs=1e-12)
    assert cmd_log(absolute, axis) == pytest.approx(hand_cmd, abs=1e-12)
    assert budgeted(signed, axis) == {"f_29": 0.2, "f_58": 0.5, "f_145": 0.8, "f_290": 1.1}
    with pytest.raises(ValueError):
        cpr_log(absolute, axis)  # CPR needs the signed ranking's curve
    with pytest.raises(ValueError):
        cmd_log(signed, axis)


def test_the_log_axis_weighs_the_small_circuits_the_linear_one_ignores():
    """Two curves that differ only at 29 and 58 edges (0.1% and 0.2%): MIB's linear CPR moves by
    0.0015 (the two points' trapezoids), the log-axis CPR by 0.26."""
    good = [1.0] * 10
    bad = [0.0, 0.0] + [1.0] * 8
    axis = log_axis_fractions(29_089, 512)
    linear = cpr(_curve(MIB_FRACTIONS, good)) - cpr(_curve(MIB_FRACTIONS, bad))
    log = cpr_log(_curve(MIB_FRACTIONS, good), axis) - cpr_log(_curve(MIB_FRACTIONS, bad), axis)
    assert linear == pytest.approx(0.001 * 1.0 + 0.003 * 0.5, abs=1e-12)
    assert log == pytest.approx(math.log10(2) + math.log10(2.5) / 2, abs=1e-12)
