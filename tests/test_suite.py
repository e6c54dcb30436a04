"""The inclusion gate and the oracle structure, on hand-made inputs with known answers."""

from collections import Counter

import numpy as np
import pytest

from circuit_gym.suite import gate, structure


def test_gate_accepts_a_strong_concentrated_behaviour():
    rewards = np.full(20, 2.0) + np.linspace(-0.1, 0.1, 20)
    decision = gate(0.95, rewards, [7] * 12 + [3] * 8)
    assert (
        decision["included"] and decision["modal_head"] == 7 and decision["modal_share"] == pytest.approx(0.6)
    )


@pytest.mark.parametrize(
    ("accuracy", "rewards", "heads", "failing"),
    [
        (0.85, [1.0] * 10, [1] * 10, "accuracy"),  # behaviour not there
        (0.95, [1.0] * 8 + [-1.0] * 2, [1] * 10, "oracle_positive_share"),  # too weak in 20% of episodes
        (0.95, [0.01, -0.02, 0.015, 0.0, 0.02, -0.01] * 3 + [0.5, 0.5], [1] * 20, "oracle_positive_share"),
        (0.95, [1.0] * 10, list(range(10)), "modal_share"),  # too diffuse: every episode another head
    ],
)
def test_gate_names_the_failing_check(accuracy, rewards, heads, failing):
    decision = gate(accuracy, rewards, heads)
    assert not decision["included"] and not decision["checks"][failing]


def test_gate_interval_check_uses_the_t_interval():
    # mean 0.1 over 3 episodes with large spread: the 95% t-interval (t=4.30) reaches below zero
    decision = gate(0.95, [1.0, 0.2, -0.9 + 0.0], [1, 1, 1])
    assert not decision["checks"]["oracle_mean_ci_above_zero"]
    r = np.array([1.0, 0.2, -0.9])
    half = 4.302652729911275 * r.std(ddof=1) / np.sqrt(3)  # t(0.975, 2) from a printed table
    assert decision["oracle_reward_ci95"][0] == pytest.approx(r.mean() - half)


def test_structure_finds_modal_heads_outside_the_other_tasks_top():
    hist = {
        "a": Counter({1: 10, 2: 5}),
        "b": Counter({1: 8, 3: 1}),
        "c": Counter({9: 6, 1: 1}),
    }
    s = structure(hist)
    assert s["distinct_modal_heads"] == 2  # a and b share head 1
    assert s["tasks_with_modal_head_outside_others_top"] == ["c"]
    assert s["per_task"]["a"]["others_top"][0] == 1  # b's 8 + c's 1
