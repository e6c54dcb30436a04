"""circuit_gym.baselines.loo_cv: the fold table and the resumable folds (no training here)."""

import json

import pytest

from circuit_gym.baselines.loo_cv import report, run_fold
from circuit_gym.benchmark import TRAIN_TASKS


def test_the_table_means_the_finished_folds_and_marks_a_partial_seed(tmp_path):
    first, second = TRAIN_TASKS[0], TRAIN_TASKS[1]
    table = {"attention": {0: {first: {"k1": 0.2, "k5": 0.6}, second: {"k1": 0.4, "k5": 1.0}}}}
    report(table, tmp_path)
    summary = json.loads((tmp_path / "loo_cv.json").read_text())["attention"]["0"]
    assert summary["mean"] == pytest.approx({"k1": 0.3, "k5": 0.8})
    assert summary["complete"] == (len(TRAIN_TASKS) == 2)
    assert "| attention | 0 | 0.200 / 0.600 | 0.400 / 1.000 |" in (tmp_path / "loo_cv.md").read_text()


def test_a_finished_fold_of_other_training_tasks_is_refused(tmp_path):
    (tmp_path / "ppo").mkdir()
    (tmp_path / "ppo" / "config.json").write_text(json.dumps({"tasks": "some,other,tasks"}))
    (tmp_path / "episodes.json").write_text("[]")
    with pytest.raises(ValueError, match="delete it to rerun the fold"):
        run_fold(tmp_path, "attention", 0, TRAIN_TASKS[0], episodes=1)
    others = ",".join(t for t in TRAIN_TASKS if t != TRAIN_TASKS[0])
    (tmp_path / "ppo" / "config.json").write_text(json.dumps({"tasks": others}))
    assert run_fold(tmp_path, "attention", 0, TRAIN_TASKS[0], episodes=1) == []  # read, not rerun
