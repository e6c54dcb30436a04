"""circuit_gym.baselines.planted_baselines: the summary of the committed measurements."""

import json
from pathlib import Path

import pytest

from circuit_gym.baselines.planted_baselines import recall_at, run, summarise

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_summary_is_what_its_measurements_give():
    committed = json.loads((ROOT / "benchmarks/results/planted.json").read_text())
    select = [r for r in committed["measurements"] if r["seed"] in committed["select_seeds"]]
    report = [r for r in committed["measurements"] if r["seed"] in committed["report_seeds"]]
    summary = summarise(select, report)
    assert summary.keys() == committed["summary"].keys()
    for kind, groups in committed["summary"].items():
        for group, values in groups.items():
            got = summary[kind][group]
            assert got.keys() == values.keys(), (kind, group)
            for key, value in values.items():
                # means of the same committed numbers: only float summation order could differ
                expected = value if isinstance(value, str) else pytest.approx(value, rel=1e-12)
                assert got[key] == expected, (kind, group, key)


def test_recall_at_the_circuit_size_reads_the_rankings_head():
    import numpy as np

    assert recall_at(np.array([3, 1, 2, 0]), {1, 3}) == 1.0
    assert recall_at(np.array([0, 3, 1, 2]), {1, 3}) == 0.5


def test_selection_and_report_seeds_must_be_disjoint(tmp_path):
    with pytest.raises(ValueError, match="disjoint"):
        run(tmp_path / "x.json", [0, 1], [1, 2])
