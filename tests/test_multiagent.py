import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

from circuit_gym.multiagent import env, parallel_env


def test_parallel_api():
    parallel_api_test(parallel_env(pool_size=3, batch_size=4, episode_length=2), num_cycles=20)


def test_aec_api():
    api_test(env(pool_size=3, batch_size=4, episode_length=2), num_cycles=20)


def test_seeding_is_reproducible():
    parallel_seed_test(lambda: parallel_env(pool_size=4, batch_size=4, episode_length=2))


def test_joint_ablation_reward_and_redundancy_info():
    par = parallel_env(task="docstring", pool_size=2, batch_size=4, head_cost=0.01)
    obs, infos = par.reset(seed=0)
    assert set(obs) == {f"layer_{i}" for i in range(4)}
    assert obs["layer_0"].shape == par.observation_space("layer_0").shape
    actions = {"layer_0": 4, "layer_1": 1, "layer_2": 4, "layer_3": 2}  # 4 = none
    _, rewards, terms, _, infos = par.step(actions)
    table = par._episode.table
    heads = [1 * 4 + 1, 3 * 4 + 2]
    info = infos["layer_0"]
    assert info["ablated"] == heads and all(terms.values()) and par.agents == []
    assert info["sum_of_single_rewards"] == pytest.approx(table.reward[heads].sum())
    assert info["redundancy"] == pytest.approx(info["joint_reward"] - info["sum_of_single_rewards"])
    assert len(set(rewards.values())) == 1
    assert rewards["layer_0"] == pytest.approx(info["joint_reward"] - 0.02)
    # a single ablation's joint reward is the single-head table entry
    par.reset(seed=0)
    _, rewards, _, _, infos = par.step({"layer_0": 4, "layer_1": 1, "layer_2": 4, "layer_3": 4})
    assert infos["layer_1"]["joint_reward"] == pytest.approx(table.reward[5], abs=1e-5)
    assert infos["layer_1"]["redundancy"] == pytest.approx(0.0, abs=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="task"):
        parallel_env(task="summarise")
    with pytest.raises(ValueError, match="head_cost"):
        parallel_env(head_cost=-1)
    par = parallel_env(pool_size=2, batch_size=2)
    par.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        par.step({"layer_0": 99})
    assert np.isfinite(par.reset(seed=1)[0]["layer_3"]).all()


def test_redundancy_report_small():
    from baselines.multiagent import report

    r = report("ioi", episodes=2)
    assert r["pair_redundancy"]["pairs"] == 120 and len(r["pair_redundancy"]["top"]) == 5
    tops = [row["redundancy_mean"] for row in r["pair_redundancy"]["top"]]
    assert tops == sorted(tops, reverse=True)
    assert np.isfinite(r["greedy_joint"]["redundancy"][0])
