"""Circuit scores of the single-head solvers (the main job's and the board's CPR / CMD)."""

import gymnasium as gym
import numpy as np
import pytest

import circuit_gym  # noqa: F401
from circuit_gym.baselines.circuit_scoring import ranking_circuit_scores
from circuit_gym.circuits.preferences import preference_ranking


def test_a_preference_ranking_keeps_the_order_under_both_of_mibs_rules():
    scores = np.array([-5.0, 3.0, -0.5, 0.2, 9.0, -7.0])
    ranking = preference_ranking(scores, "p", 2, 3)
    expected = list(np.argsort(-scores, kind="stable"))
    # MIB ranks CPR by signed and CMD by absolute score; a logit of -7 must not lead the CMD circuit
    assert list(ranking.order()) == expected and list(ranking.order(absolute=True)) == expected
    with pytest.raises(ValueError, match="finite"):
        preference_ranking(np.array([1.0, np.nan, 0, 0, 0, 0]), "p", 2, 3)
    with pytest.raises(ValueError, match="expected 6"):
        preference_ranking(np.zeros(5), "p", 2, 3)


def test_putting_the_heads_that_matter_first_scores_a_higher_cpr_than_putting_them_last():
    """On the 4 x 4 model: a ranking by each head's single-ablation task damage against its
    reverse; the areas must separate them (a swapped CPR/CMD or an ignored ranking would not)."""
    env = gym.make("CircuitDiscovery-Toy-IOI-v1", split="test", pool_size=2)

    def damage(obs, env):
        return env.unwrapped.episode.table.task_damage

    solvers = {"first": damage, "last": lambda obs, env: -damage(obs, env)}
    track = ranking_circuit_scores(env, solvers, ["ioi"], [0, 1], white_box=(), n_random=4)
    ioi = track["tasks"]["ioi"]
    assert ioi["first"]["cpr"] > ioi["last"]["cpr"] + 0.2
    assert ioi["first"]["cmd"] < ioi["last"]["cmd"]
    assert ioi["first"]["batches"] == 2 and len(ioi["first"]["per_batch"]) == 2


def test_white_box_solvers_run_on_the_same_episodes_and_count_their_passes():
    env = gym.make("CircuitDiscovery-Toy-IOI-v1", split="test", pool_size=1)
    track = ranking_circuit_scores(env, {}, ["ioi"], [0], n_random=2)
    assert set(track["tasks"]["ioi"]) == {"acdc", "eap_ig"}
    assert track["white_box_passes_per_episode"]["acdc"] >= 16  # every head tried at least once
    assert all(np.isfinite(r["cpr"]) for r in track["tasks"]["ioi"].values())


def test_episode_areas_separate_a_good_ranking_from_its_reverse_and_summaries_skip_nan():
    from circuit_gym.circuits.preferences import areas_summary, episode_areas

    env = gym.make("CircuitDiscovery-Toy-IOI-v1", split="test", pool_size=1)
    env.reset(options={"batch_index": 0})
    damage = env.unwrapped.episode.table.task_damage
    good, bad = episode_areas(env, damage), episode_areas(env, -damage)
    assert good["cpr"] > bad["cpr"] + 0.2 and good["cmd"] < bad["cmd"]
    summary = areas_summary([good, bad, {"cpr": float("nan"), "cmd": None}])
    assert summary["cpr_episodes"] == 2 and summary["cmd_episodes"] == 2
    assert summary["cpr"] == pytest.approx((good["cpr"] + bad["cpr"]) / 2)
