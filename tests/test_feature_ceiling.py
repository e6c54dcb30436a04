"""circuit_gym.baselines.feature_ceiling: the committed reports' tables are written from the reports."""

import json
from pathlib import Path

import pytest

from circuit_gym.baselines.feature_ceiling import run, v5_markdown, v6_markdown

RESULTS = Path(__file__).resolve().parents[1] / "docs/results/feature_ceiling"


@pytest.mark.parametrize("stem, markdown", [("feature_ceiling_toy", v5_markdown), ("v6", v6_markdown)])
def test_the_committed_table_is_its_reports(stem, markdown):
    report = json.loads((RESULTS / f"{stem}.json").read_text())
    assert report["fair_rule"] in markdown(report) and report["ceiling_rule"] in markdown(report)
    assert markdown(report) == (RESULTS / f"{stem}.md").read_text()


def test_an_unknown_benchmark_is_refused():
    with pytest.raises(ValueError, match="benchmark must be one of"):
        run("v4")
