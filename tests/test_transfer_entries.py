"""circuit_gym.baselines.transfer_entries: the committed entries report and its table."""

import json
from pathlib import Path

from circuit_gym.baselines.transfer_entries import CEILING_REPORT, TRANSFER, entries, markdown

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_table_is_the_committed_reports_and_names_every_entry():
    report = json.loads((TRANSFER / "entries.json").read_text())
    assert TRANSFER == ROOT / "docs/results/transfer"  # the package finds the repository's results
    assert markdown(report) == (TRANSFER / "entries.md").read_text()
    assert sorted(entries(TRANSFER, CEILING_REPORT)) == sorted(report["entries"])
