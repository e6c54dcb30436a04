"""circuit_gym.baselines.ppo_seeds: the summary and table of the committed seed runs."""

import json
from pathlib import Path

import pytest

from circuit_gym.baselines.ppo_seeds import check_episodes, markdown, summarise

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "docs/results/seeds"


def test_the_committed_summary_and_table_are_what_the_per_seed_rows_give():
    committed = json.loads((SEEDS / "seeds.json").read_text())
    summary = summarise({int(s): rows for s, rows in committed["per_seed"].items()})
    assert summary["targets"] == committed["targets"]
    for key in ("ppo_held_out_k1", "ppo_held_out_k5", "ppo_train_k1"):
        # means over the same five committed numbers: only float summation order could differ
        for field, value in committed[key].items():
            assert summary[key][field] == pytest.approx(value, rel=1e-12), (key, field)
    assert markdown(committed) + "\n" == (SEEDS / "seeds.md").read_text()


def test_results_of_other_tasks_are_refused():
    with pytest.raises(ValueError, match="other tasks"):
        check_episodes(Path("results.json"), [{"task": "not-a-task", "split": "test"}])
