import itertools
import math

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test
from scipy import stats

from circuit_gym.ablation import ContrastiveScorer
from circuit_gym.multiagent import env, parallel_env
from circuit_gym.tasks import get_task


def test_parallel_api():
    parallel_api_test(parallel_env(pool_size=3, batch_size=4, episode_length=2), num_cycles=20)


def test_aec_api():
    api_test(env(model="tiny", pool_size=3, batch_size=4, episode_length=2), num_cycles=20)


def test_seeding_is_reproducible():
    parallel_seed_test(lambda: parallel_env(model="tiny", pool_size=4, batch_size=4, episode_length=2))


def _scorer(par):
    """A ContrastiveScorer built here, from the episode's prompts, not the environment's."""
    pool, batch = par.pool, par._episode.batch
    return ContrastiveScorer(par.model, get_task(par.task), batch, pool.reference, pool.ablation, par.lam)


def test_joint_ablation_reward_and_redundancy_info_against_a_separate_scorer():
    par = parallel_env(model="tiny", task="docstring", pool_size=2, batch_size=4, head_cost=0.01)
    obs, infos = par.reset(seed=0)
    assert set(obs) == {f"layer_{i}" for i in range(4)}
    assert obs["layer_0"].shape == par.observation_space("layer_0").shape
    actions = {"layer_0": 4, "layer_1": 1, "layer_2": 4, "layer_3": 2}  # 4 = none
    _, rewards, terms, _, infos = par.step(actions)
    heads = [1 * 4 + 1, 3 * 4 + 2]
    info = infos["layer_0"]
    assert info["ablated"] == heads and all(terms.values()) and par.agents == []
    # both heads ablated together by the engine, and each alone, outside the environment
    scorer = _scorer(par)
    joint, singles = scorer.reward(heads), [scorer.reward([h]) for h in heads]
    assert info["joint_reward"] == pytest.approx(joint, abs=1e-5)
    assert info["sum_of_single_rewards"] == pytest.approx(sum(singles), abs=1e-5)
    assert info["redundancy"] == pytest.approx(joint - sum(singles), abs=1e-5)
    assert len(set(rewards.values())) == 1
    assert rewards["layer_0"] == pytest.approx(joint - 2 * 0.01, abs=1e-5)
    # a single ablation's joint reward is that head's reward, and no redundancy
    par.reset(seed=0)
    _, rewards, _, _, infos = par.step({"layer_0": 4, "layer_1": 1, "layer_2": 4, "layer_3": 4})
    assert infos["layer_1"]["joint_reward"] == pytest.approx(scorer.reward([5]), abs=1e-5)
    assert infos["layer_1"]["redundancy"] == pytest.approx(0.0, abs=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="task"):
        parallel_env(model="tiny", task="summarise")
    with pytest.raises(ValueError, match="head_cost"):
        parallel_env(model="tiny", head_cost=-1)
    par = parallel_env(model="tiny", pool_size=2, batch_size=2)
    par.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        par.step({"layer_0": 99})
    assert np.isfinite(par.reset(seed=1)[0]["layer_3"]).all()


def _head_id(name: str, n_heads: int = 4) -> int:
    layer, head = name.split(".")
    return int(layer) * n_heads + int(head)


def test_redundancy_report_against_separate_joint_ablations():
    from circuit_gym.baselines.multiagent import report

    r = report("ioi", episodes=2, model="tiny")
    pr = r["pair_redundancy"]
    assert pr["pairs"] == 120 == len(pr["per_pair"]) and len(pr["top"]) == 5 and pr["episodes"] == 2
    tops = [row["redundancy_mean"] for row in pr["top"]]
    assert tops == sorted(tops, reverse=True)
    lows = [row["redundancy_mean"] for row in pr["most_negative"]]
    assert lows == sorted(lows) and lows[0] == min(row["redundancy_mean"] for row in pr["per_pair"])
    assert np.isfinite(r["greedy_joint"]["redundancy"][0])
    assert pr["correction"]["method"] == "bh" and pr["correction"]["alpha"] == 0.05
    # redundancy of a few pairs (the largest, the smallest, one in between) measured with
    # separately built scorers: engine(a and b together) - engine(a) - engine(b), per episode
    par = parallel_env(model="tiny", task="ioi", split="eval", pool_size=2)
    rows = {tuple(row["pair"]): row for row in pr["per_pair"]}
    checked = [tuple(pr["top"][0]["pair"]), tuple(pr["most_negative"][0]["pair"]), ("1.2", "3.0")]
    values = {pair: [] for pair in checked}
    for e in range(2):
        par.reset(options={"batch_index": e})
        scorer = _scorer(par)
        for pair in checked:
            a, b = (_head_id(x) for x in pair)
            values[pair].append(scorer.reward([a, b]) - scorer.reward([a]) - scorer.reward([b]))
    for pair in checked:
        row, (v0, v1) = rows[pair], values[pair]
        assert row["redundancy_mean"] == pytest.approx((v0 + v1) / 2, abs=1e-4)
        # two episodes: t has 1 degree of freedom (Cauchy), two-sided p = 1 - 2 atan(|t|) / pi
        t = abs(v0 + v1) / abs(v0 - v1)
        assert row["p_value"] == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-3, abs=1e-6)
    # counted by the adjusted p-values, which are scipy's Benjamini-Hochberg of the raw ones
    raw = np.array([row["p_value"] for row in pr["per_pair"]])
    adjusted = np.array([row["p_adjusted"] for row in pr["per_pair"]])
    np.testing.assert_allclose(adjusted, stats.false_discovery_control(raw, method="bh"))
    assert pr["significant_adjusted"] == int((adjusted <= 0.05).sum())
    assert pr["significant_raw"] == int((raw <= 0.05).sum())
    positive = {tuple(row["pair"]) for row in pr["significantly_positive"]}
    assert positive == {
        p for p, row in rows.items() if row["p_adjusted"] <= 0.05 and row["redundancy_mean"] > 0
    }


def test_multiple_comparison_correction_on_null_pairs():
    """10,296 pairs (GPT-2's 144 heads) of pure noise over 16 episodes: about 5% pass a raw
    test at 0.05, almost none after the correction; 20 real effects still pass it."""
    from circuit_gym.baselines.multiagent import redundancy_summary

    pairs = list(itertools.combinations(range(144), 2))
    rng = np.random.default_rng(0)
    values = rng.normal(0.0, 1.0, size=(16, len(pairs)))
    null = redundancy_summary(pairs, values, n_heads=12)
    assert 0.04 * len(pairs) < null["significant_raw"] < 0.06 * len(pairs)
    assert null["significant_adjusted"] <= 5 and null["significant_adjusted"] < null["significant_raw"] / 50
    values[:, :20] += 2.5  # 20 pairs with a real effect (2.5 standard deviations)
    mixed = redundancy_summary(pairs, values, n_heads=12)
    found = {tuple(row["pair"]) for row in mixed["significantly_positive"]}
    real = {(f"{a // 12}.{a % 12}", f"{b // 12}.{b % 12}") for a, b in pairs[:20]}
    assert len(found & real) >= 18 and len(found - real) <= 2
    assert mixed["significant_raw"] > 0.04 * len(pairs)
    # the same p-values, adjusted by Benjamini-Yekutieli, pass no more often
    by = redundancy_summary(pairs, values, n_heads=12, method="by")
    assert by["significant_adjusted"] <= mixed["significant_adjusted"]
    with pytest.raises(ValueError, match="method"):
        redundancy_summary(pairs, values, n_heads=12, method="bonferroni")


def test_redundancy_of_candidate_pairs_equals_those_pairs_among_all():
    from circuit_gym.baselines.multiagent import pair_redundancy_values

    par = parallel_env(model="tiny", task="ioi", split="eval", pool_size=2)
    pairs, values = pair_redundancy_values(par, 2)
    chosen, sub = pair_redundancy_values(par, 2, heads=[0, 5, 9])
    assert chosen == [(0, 5), (0, 9), (5, 9)]
    np.testing.assert_allclose(sub, values[:, [pairs.index(p) for p in chosen]], atol=1e-5)
