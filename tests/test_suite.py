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


def test_held_out_choice_picks_tasks_whose_modal_heads_the_training_tasks_do_not_use():
    from collections import Counter

    from circuit_gym.suite import choose_held_out

    hist = {
        "t1": Counter({0: 5, 1: 4, 2: 3}), "t2": Counter({3: 5, 4: 4, 0: 3}), "t3": Counter({5: 6, 1: 6}),
        "h1": Counter({100: 6, 0: 2}), "h2": Counter({101: 5, 1: 3}), "h3": Counter({102: 7}),
    }  # fmt: skip
    families = {"t1": "f", "t2": "f", "t3": "f", "h1": "a", "h2": "b", "h3": "c"}
    # Worked by hand: with h1-h3 held out the training counts are 1:10, 0:8, 5:6, 3:5, 4:4, 2:3, so the
    # top 5 are {0, 1, 3, 4, 5}; 100, 101, 102 are outside it. {h1, h2, t3} is valid too (three
    # families) but its modal shares sum to 0.75 + 0.625 + 0.5 < 0.75 + 0.625 + 1.
    choice = choose_held_out(hist, families)
    assert choice["held_out"] == ["h1", "h2", "h3"] and choice["train"] == ["t1", "t2", "t3"]
    assert sorted(choice["train_top_heads"]) == [0, 1, 3, 4, 5]
    assert "102" in choice["reasons"]["h3"] and choice["valid_sets"] >= 2
    same = {t: Counter({7: 3}) for t in hist}  # every task's bottleneck is one head: no transfer test
    with pytest.raises(ValueError, match="modal oracle heads"):
        choose_held_out(same, families)


def test_the_benchmark_held_out_tasks_follow_the_rule_on_the_committed_suite_reports():
    """circuit_gym/benchmark.py against docs/suite: the gate (test split) decides which tasks
    count, the train split's oracle histograms which of them are held out."""
    import json
    from pathlib import Path

    from circuit_gym import benchmark as B
    from circuit_gym.suite import held_out_from_reports

    suite = Path(__file__).resolve().parents[1] / "docs" / "suite"
    train = json.loads((suite / "suite_toy_train.json").read_text())
    gate = json.loads((suite / "suite_toy_test.json").read_text())
    assert (
        train["split"] == "train"
        and gate["split"] == "test"
        and train["weights_hash"] == gate["weights_hash"]
    )
    choice = held_out_from_reports(train, gate)
    assert tuple(choice["held_out"]) == B.HELD_OUT_TASKS and tuple(choice["train"]) == B.TRAIN_TASKS
    for task in B.HELD_OUT_TASKS:  # the reason, from the numbers: the modal head is not a training favourite
        modal = Counter(train["tasks"][task]["oracle_histogram"]).most_common(1)[0][0]
        assert modal not in choice["train_top_heads"]


@pytest.mark.slow  # three oracle sweeps of the toy model, three times: about 90 s of CPU
def test_a_model_outside_the_package_is_measured_like_its_siblings_when_told():
    """A private zoo model is loaded from a path under a name the package does not know, whose
    defaults are zero ablation and the prose reference; its card must be measurable with the
    public members' settings. The toy model loaded that way with ``ablation``/``reference`` given
    must reproduce the embedded toy's report (its defaults), and differ without them."""
    from circuit_gym.models import load_model
    from circuit_gym.models.loading import embedded_dir
    from circuit_gym.suite import suite_report

    kw = {"tasks": ["induction"], "split": "test", "episodes": 3, "accuracy_batches": 1, "progress": False}
    embedded = suite_report(load_model("toy"), **kw)["tasks"]["induction"]
    outside = load_model("private", path=embedded_dir("toy"))
    told = suite_report(outside, ablation="resample", reference="stdlib+taskstyle", **kw)["tasks"][
        "induction"
    ]
    untold = suite_report(outside, **kw)["tasks"]["induction"]
    assert told["oracle_histogram"] == embedded["oracle_histogram"]
    assert told["oracle_reward_mean"] == pytest.approx(embedded["oracle_reward_mean"], rel=1e-4, abs=1e-6)
    assert untold["oracle_reward_mean"] != pytest.approx(embedded["oracle_reward_mean"], rel=1e-3, abs=1e-4)
