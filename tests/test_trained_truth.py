"""Trained truth (issue 55 item 4): a backup-objective model's recorded pairs as the planted track's
truth interface, so its measures (precision, recall, AUC, backup recall) apply to trained models."""

from __future__ import annotations

import json

import pytest

from circuit_gym.circuits.knockout_scores import truth_scores
from circuit_gym.models.trained_truth import trained_truth


def _model_dir(tmp_path, pairs):
    (tmp_path / "training_log.json").write_text(json.dumps({"backup_pairs": pairs, "log": []}))
    return tmp_path


def test_the_recorded_pairs_are_the_truth(tmp_path):
    truth = trained_truth(_model_dir(tmp_path, [{"task": "ioi", "primary": 15, "backup": 25, "fail": 0.1},
                                                {"task": "pronoun", "primary": 29, "backup": 88, "fail": 0.0}]))  # fmt: skip
    assert truth.tasks == ("ioi", "pronoun")
    assert (
        truth.circuit("ioi") == {15, 25} and truth.backups("ioi") == {25} and truth.primaries("ioi") == {15}
    )
    # the planted measures, unchanged: an order that ablates the primary, then the backup, finds both
    found = truth_scores([15, 25], truth.circuit("ioi"), truth.backups("ioi"), 144)
    assert found["recall"] == 1.0 and found["backup_recall"] == 1.0 and found["precision"] == 1.0
    static = truth_scores([15, 3, 4], truth.circuit("ioi"), truth.backups("ioi"), 144)  # the backup missed
    assert static["recall"] == 0.5 and static["backup_recall"] == 0.0
    with pytest.raises(ValueError, match="no backup pair for 'docstring'"):
        truth.circuit("docstring")


@pytest.mark.parametrize(
    "pairs",
    [[], [{"task": "ioi", "primary": 3, "backup": 3}],
     [{"task": "ioi", "primary": 3, "backup": 4}, {"task": "ioi", "primary": 5, "backup": 6}]],
)  # fmt: skip
def test_a_log_without_valid_pairs_is_refused(tmp_path, pairs):
    with pytest.raises(ValueError):
        trained_truth(_model_dir(tmp_path, pairs))
