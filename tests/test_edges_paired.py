"""Paired differences between adjacent entries (circuit_gym/edges/paired.py) against a hand count."""

from __future__ import annotations

import math

import pytest

from circuit_gym.edges.paired import adjacent_differences, paired_difference

T_975_3 = 3.182446305284263  # Student t, 3 degrees of freedom, 97.5% (a table's value)


def test_the_paired_difference_by_hand():
    a = {("m", "t", 0): 1.0, ("m", "t", 1): 2.0, ("m", "t", 2): 4.0, ("m", "t", 3): 5.0, ("m", "u", 0): 9.0}
    b = {("m", "t", 0): 0.5, ("m", "t", 1): 1.0, ("m", "t", 2): 3.0, ("m", "t", 3): 2.5}
    # differences 0.5, 1, 1, 2.5 (the unpaired episode left out): mean 1.25, sd sqrt(0.75)
    d = paired_difference(a, b)
    half = T_975_3 * math.sqrt(0.75) / 2
    assert d["n"] == 4
    assert d["mean"] == pytest.approx(1.25, abs=1e-12)
    assert d["ci95"] == pytest.approx([1.25 - half, 1.25 + half], abs=1e-9)


def test_pairing_separates_what_the_entries_own_intervals_do_not():
    """Episodes of very different difficulty, one entry always 0.1 better: each entry's own
    interval is wide, the paired one excludes 0."""
    hard = [0.1, 0.9, 0.3, 1.5, 0.2, 1.1]
    upper = {i: v + 0.1 + 0.01 * (i % 2) for i, v in enumerate(hard)}
    lower = dict(enumerate(hard))
    [row] = adjacent_differences({"up": upper, "low": lower}, ["up", "low"])
    assert row["above"] == "up" and row["below"] == "low" and row["separated"]
    assert 0.1 < row["mean"] < 0.11
    same = adjacent_differences({"a": lower, "b": dict(lower)}, ["a", "b"])[0]
    assert same["mean"] == 0.0 and not same["separated"]
