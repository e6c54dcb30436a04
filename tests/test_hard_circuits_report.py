"""Issue 41's targets (circuit_gym.baselines.hard_circuits_report) on hand-made summaries whose
answers are known, and on the committed board in force recomputed from its result files."""

from __future__ import annotations

import json

import pytest

from circuit_gym import benchmark as B
from circuit_gym.baselines import hard_circuits_report as R
from circuit_gym.reporting.transfer import UNSEEN

BENCH = B.transfer_benchmark(B.IN_FORCE)


def _cpr(value: float, passes: float) -> dict:
    return {"cpr": {UNSEEN: {"value": value}, "private": None}, "passes_per_episode": passes}


def test_circuit_gap_takes_the_best_cheap_and_the_best_costly_reference():
    refs = {BENCH.track(B.CIRCUIT): {
        "attribution": _cpr(0.80, 21), "eap_ig": _cpr(0.90, 30),
        "gim": _cpr(0.99, 60),  # over the cheap budget here: not a cheap reference
        "random": _cpr(0.95, 0),  # never a reference of either side
        "acdc": _cpr(1.05, 450), "greedy_search": _cpr(1.02, 2000),
    }}  # fmt: skip
    gap = R.circuit_gap(refs, BENCH)
    assert set(gap) == {UNSEEN}  # no private summaries: no private target
    g = gap[UNSEEN]
    assert (g["cheap"]["name"], g["any_cost"]["name"]) == ("eap_ig", "acdc")
    assert g["value"] == pytest.approx(0.15) and g["met"] is True
    refs[BENCH.track(B.CIRCUIT)]["eap_ig"] = _cpr(1.0, 30)
    assert R.circuit_gap(refs, BENCH)[UNSEEN]["met"] is False  # a gap of 0.05


def test_cheap_single_head_target_is_an_upper_bound():
    summary = {"k1": {UNSEEN: {"value": 0.84}, "private": {"value": 0.86}}}
    t = R.cheap_single_head({BENCH.track(B.SINGLE_HEAD): {"greedy": summary}}, BENCH)
    assert t[UNSEEN]["met"] is True and t["private"]["met"] is False


def test_the_targets_read_the_committed_board():
    """The benchmark in force's numbers, recomputed from its result files with plain JSON reads."""
    bench = B.transfer_benchmark(B.IN_FORCE)
    folder = R.ROOT / "leaderboard" / "results" / bench.results_folder
    rep = R.report((B.IN_FORCE,))["versions"][B.IN_FORCE]
    greedy = json.loads((folder / "greedy.json").read_text())
    k1 = greedy["scores"]["quadrants"][UNSEEN]["k1"]["recovery"]
    assert rep["targets"]["cheap_single_head"][UNSEEN]["value"] == pytest.approx(k1)
    circuit = {p.stem: json.loads(p.read_text()) for p in (folder / "circuit").glob("*.json")}
    cpr = {n: r["scores"]["quadrants"][UNSEEN]["cpr"] for n, r in circuit.items()}
    passes = {n: r["scores"]["quadrants"][UNSEEN]["forward_passes"] for n, r in circuit.items()}
    cheap = max(cpr[n] for n in R.CHEAP if n in cpr and passes[n] <= R.CHEAP_PASSES)
    gap = max(cpr[n] for n in R.ANY_COST) - cheap
    assert rep["targets"]["circuit_gap"][UNSEEN]["value"] == pytest.approx(gap)
