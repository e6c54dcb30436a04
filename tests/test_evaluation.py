import gymnasium as gym
import numpy as np
import pytest

from circuit_gym.evaluation import evaluate, mean_ci95, spearman, summarize, wilson_ci95
from circuit_gym.policy import InvalidScoresError, check_scores


def test_statistics_against_known_values():
    mean, (lo, hi) = mean_ci95([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5
    assert hi - mean == pytest.approx(3.182 * np.std([1, 2, 3, 4], ddof=1) / 2, rel=1e-3)
    assert mean_ci95([float("nan"), 2.0])[0] == 2.0
    lo, hi = wilson_ci95(8, 10)
    assert lo == pytest.approx(0.490, abs=1e-3) and hi == pytest.approx(0.943, abs=1e-3)
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9487, abs=1e-4)


def test_check_scores_rejects_bad_outputs():
    assert check_scores([1, 2, 3], 3).dtype == np.float64
    for bad in ([1, 2], [[1, 2, 3]], [1, np.nan, 3], ["a", "b", "c"], None):
        with pytest.raises(InvalidScoresError):
            check_scores(bad, 3)


def test_oracle_ranker_recovers_everything_and_random_does_not():
    env = gym.make("CircuitDiscovery-Toy-Multi-v0", split="eval", pool_size=6, batch_size=4)
    oracle = evaluate(
        env, lambda obs, e: e.unwrapped.episode.table.reward, "oracle", ["ioi", "induction"], range(6)
    )
    worst = evaluate(
        env, lambda obs, e: -e.unwrapped.episode.table.reward, "worst", ["ioi", "induction"], range(6)
    )
    rows = {(r["solver"], r["task"], r["k"]): r for r in summarize(oracle + worst)}
    for task in ("ioi", "induction"):
        assert rows[("oracle", task, 1)]["recovery_mean"] == pytest.approx(1.0)
        assert rows[("oracle", task, 1)]["top1_rate"] == 1.0
        assert rows[("worst", task, 1)]["top1_rate"] == 0.0
        assert rows[("worst", task, 1)]["recovery_mean"] < 1.0
        # best-of-5 can only help
        assert rows[("worst", task, 5)]["recovery_mean"] >= rows[("worst", task, 1)]["recovery_mean"]
    assert {"recovery_ci95", "episodes", "split"} <= set(rows[("oracle", "ioi", 1)])
