"""The knock-out environment (issue 60) against plain TransformerLens hooks, and Gymnasium's and
SB3's checkers on every knock-out ID.

The hook computation below is written here (each ablated head's ``hook_z`` replaced by its value on
the counterfactual prompts: resample ablation, as the planted IDs ablate), on a model generated
independently of the environment, with the batch drawn from the public task API; never the
package's ablation engine, circuit runner or replay.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym.envs.registration import env_ids
from circuit_gym.models.planted import make_planted_model
from circuit_gym.tasks import get_task

SEED = 3  # a public planted seed (the board's public seeds are 0-19)
SELF_REPAIR_ID = "CircuitDiscovery-Planted-SelfRepair-KnockOut-v0"
KNOCKOUT_IDS = [i for i in env_ids() if "-KnockOut-" in i]


def _hook_metric(model, task, batch, heads: list[int], n_heads: int) -> float:
    """The task metric with ``heads`` resample-ablated, by plain hooks on ``hook_z``."""
    names = {f"blocks.{h // n_heads}.attn.hook_z" for h in heads}
    with torch.no_grad():
        _, cache = model.run_with_cache(batch.counterfactual, names_filter=lambda n: n in names)
        hooks = []
        for name in names:
            layer = int(name.split(".")[1])
            idx = [h % n_heads for h in heads if h // n_heads == layer]

            def replace(z, hook, idx=idx, name=name):
                z = z.clone()
                z[:, :, idx] = cache[name][:, :, idx]
                return z

            hooks.append((name, replace))
        logits = model.run_with_hooks(batch.tokens, fwd_hooks=hooks)
        return float(task.metric(logits[:, batch.positions], batch).mean())


@pytest.fixture(scope="module")
def self_repair_env():
    env = gym.make(SELF_REPAIR_ID, seeds=[SEED], split="test", pool_size=2)
    yield env
    env.close()


def test_primary_alone_costs_little_primary_then_backup_most(self_repair_env):
    from circuit_gym.models.planted.generator import truth_of

    truth = truth_of(SEED, 3)
    (primary,) = truth.heads_of("self_repair", "primary")
    (backup,) = truth.heads_of("self_repair", "backup")
    _, info = self_repair_env.reset(seed=0, options={"model_seed": SEED, "batch_index": 1})
    _, r1, _, _, after_primary = self_repair_env.step(primary)
    _, r2, _, _, after_both = self_repair_env.step(backup)

    planted = make_planted_model(SEED, version=3)
    task = get_task("planted_self_repair")
    batch = task.batch(planted.model, "test", 16, seed=1)  # the pool's batch 1 of the test split
    n_heads = int(planted.model.cfg.n_heads)
    clean = _hook_metric(planted.model, task, batch, [], n_heads)
    one = _hook_metric(planted.model, task, batch, [primary], n_heads)
    two = _hook_metric(planted.model, task, batch, [primary, backup], n_heads)

    tol = 1e-3 * abs(clean)
    assert info["clean_metric"] == pytest.approx(clean, abs=tol)
    assert after_primary["metric"] == pytest.approx(one, abs=tol)
    assert after_both["metric"] == pytest.approx(two, abs=tol)
    assert r1 == pytest.approx(clean - one, abs=2 * tol) and r2 == pytest.approx(one - two, abs=2 * tol)
    # the backup repairs: the primary alone costs little, primary then backup most of the metric
    assert one / clean > 0.6
    assert two / clean < 0.2
    assert after_both["metric_fraction"] == pytest.approx(two / clean, abs=1e-3)


def test_observation_is_recomputed_on_the_ablated_model(self_repair_env):
    """The backup's attribution is about zero on the clean model and the largest once the
    primary is ablated: what a static ranking cannot see."""
    from circuit_gym.envs.knockout import ABLATED_COLUMN, ATTRIBUTION_COLUMN
    from circuit_gym.models.planted.generator import truth_of

    truth = truth_of(SEED, 3)
    (primary,) = truth.heads_of("self_repair", "primary")
    (backup,) = truth.heads_of("self_repair", "backup")
    obs, info = self_repair_env.reset(seed=0, options={"model_seed": SEED, "batch_index": 0})
    assert abs(obs[backup, ATTRIBUTION_COLUMN]) < 0.05
    obs, _, _, _, info = self_repair_env.step(primary)
    assert obs[primary, ABLATED_COLUMN] == 1 and obs[primary, ATTRIBUTION_COLUMN] == 0
    assert int(np.argmax(obs[:, ATTRIBUTION_COLUMN])) == backup
    # one partial pass for the metric, two forward and two backward passes for the observation
    assert info["passes"] == {"forward": 2 + 2 + 2, "partial": 1 + 1, "backward": 2 + 2}


def test_an_ablated_head_is_masked_and_a_no_op_that_uses_a_step(self_repair_env):
    env = self_repair_env
    env.reset(seed=0, options={"model_seed": SEED, "batch_index": 0})
    obs, r, term, _, info = env.step(5)
    assert not info["action_mask"][5] and info["action_mask"][144]
    again, r2, term2, _, info2 = env.step(5)
    assert r2 == 0.0 and info2["ablated"] == [5] and np.array_equal(again[:, :5], obs[:, :5])
    assert info2["passes"] == info["passes"]
    assert again[0, 5] == pytest.approx(2 / 8)
    _, r3, term3, _, _ = env.step(144)
    assert term3 and r3 == 0.0


def test_episode_ends_after_k_steps_and_return_is_the_damage():
    env = gym.make(SELF_REPAIR_ID, seeds=[SEED], split="test", pool_size=2, steps=3)
    try:
        _, info = env.reset(seed=1, options={"model_seed": SEED})
        total, term, clean = 0.0, False, info["clean_metric"]
        for head in (10, 20, 30):
            assert not term
            _, r, term, _, info = env.step(head)
            total += r
        assert term
        assert total == pytest.approx(clean - info["metric"], abs=1e-6)
        with pytest.raises(gym.error.ResetNeeded):
            env.step(40)
    finally:
        env.close()


def test_knockout_ids_are_registered_per_planted_kind_and_zoo_task():
    planted = {f"CircuitDiscovery-Planted-{k}-KnockOut-v0"
               for k in ("Induction", "MultiHop", "Redundant", "Suppression", "SelfRepair", "And")}  # fmt: skip
    tasks = ("Agreement", "Brackets", "Capital", "Docstring", "GreaterThan", "IOI", "Minimum", "Pronoun", "Successor",
             "Multi")  # fmt: skip
    zoo = {f"CircuitDiscovery-{g}-{t}-KnockOut-v0" for g in ("ZooV2", "ZooV3") for t in tasks}
    assert sorted(KNOCKOUT_IDS) == sorted(planted | zoo)


def test_a_zoo_knockout_episode_draws_a_member_and_ablates_cumulatively():
    env = gym.make("CircuitDiscovery-ZooV2-IOI-KnockOut-v0", model=["zoo7"], pool_size=1, steps=2)
    try:
        obs, info = env.reset(seed=0)
        assert info["model"] == "zoo7" and obs.shape == (144, 6)
        first = int(np.argmax(obs[:, 0]))
        obs, reward, _, _, info = env.step(first)
        assert info["ablated"] == [first] and obs[first, 2] == 1.0
        assert reward == pytest.approx(info["clean_metric"] - info["metric"], abs=1e-5)
    finally:
        env.close()


def _strict_warnings() -> None:
    """A checker's complaint fails the test, except SB3's advice to flatten a 2-D observation (a
    recommendation for its default policies: every head environment's observation is one row per
    head; docs/sb3.md flattens it)."""
    warnings.simplefilter("error", UserWarning)
    warnings.filterwarnings("ignore", message=".*unconventional shape", category=UserWarning)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", KNOCKOUT_IDS)
def test_gymnasium_and_sb3_checkers_pass(env_id):
    from gymnasium.utils.env_checker import check_env

    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    # one planted seed, or one zoo member (each drawn member loads its model: one is the same class)
    member = {"ZooV2": "zoo7", "ZooV3": "zoo9"}  # a training member of the ID's own generation
    only = {"seeds": [SEED]} if "-Planted-" in env_id else {"model": [member[env_id.split("-")[1]]]}
    env = gym.make(env_id, pool_size=2, **only)
    try:
        with warnings.catch_warnings():
            _strict_warnings()
            check_env(env.unwrapped)
            sb3_checker.check_env(env.unwrapped, warn=True)
    finally:
        env.close()


def test_gymnasium_and_sb3_checkers_pass_on_self_repair(self_repair_env):
    """The fast member of the checker test (every ID: the slow test above)."""
    from gymnasium.utils.env_checker import check_env

    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        _strict_warnings()
        check_env(self_repair_env.unwrapped)
        sb3_checker.check_env(self_repair_env.unwrapped, warn=True)


def test_attribution_only_observation_costs_half_and_matches_the_full_one():
    """``scores="attribution"``: the same attribution column as the default observation (which also
    measures EAP-IG), no EAP-IG, and one forward and one backward pass per observation, not two."""
    from circuit_gym.envs.knockout import ATTRIBUTION_COLUMN, EAP_IG_COLUMN

    full = gym.make(SELF_REPAIR_ID, seeds=[SEED], split="test", pool_size=1, cache=False)
    half = gym.make(
        SELF_REPAIR_ID, seeds=[SEED], split="test", pool_size=1, cache=False, scores="attribution"
    )
    try:
        (a, ia), (b, ib) = (e.reset(seed=0, options={"model_seed": SEED}) for e in (full, half))
        assert np.allclose(a[:, ATTRIBUTION_COLUMN], b[:, ATTRIBUTION_COLUMN], atol=1e-5)
        assert np.abs(a[:, EAP_IG_COLUMN]).max() > 0 and not b[:, EAP_IG_COLUMN].any()
        assert (ia["decision_passes"], ib["decision_passes"]) == (4, 2)
        head = int(np.argmax(a[:, ATTRIBUTION_COLUMN]))
        (a, *_, ia), (b, *_, ib) = (e.step(head) for e in (full, half))
        assert np.allclose(a[:, ATTRIBUTION_COLUMN], b[:, ATTRIBUTION_COLUMN], atol=1e-5)
        assert (ia["decision_passes"], ib["decision_passes"]) == (8, 4)
        assert ia["metric"] == pytest.approx(ib["metric"], abs=1e-6)
    finally:
        full.close()
        half.close()
    with pytest.raises(ValueError, match="scores must be one of"):
        gym.make(SELF_REPAIR_ID, seeds=[SEED], scores="eap_ig")


def test_an_agent_reading_attribution_alone_spends_conditional_attributions_passes():
    """With ``scores="attribution"`` and the last observation not measured, an agent that ablates the
    head of largest attribution each step is conditional attribution: the same first ablations and
    exactly its passes (``solvers.knockout``'s own count, 2 a step), none for the unread last
    observation, whose measured columns are 0 while the others are current."""
    from circuit_gym.envs.knockout import ABLATED_COLUMN, ATTRIBUTION_COLUMN, MARGIN_COLUMN, STEPS_COLUMN
    from circuit_gym.solvers.knockout import REFERENCES

    k = 4
    env = gym.make(SELF_REPAIR_ID, seeds=[SEED], split="test", pool_size=1, steps=k, scores="attribution",
                   observe_last=False)  # fmt: skip
    try:
        obs, info = env.reset(seed=0, options={"model_seed": SEED, "batch_index": 0})
        inner = env.unwrapped.inner_for(SEED)
        reference = REFERENCES["conditional_attribution"](inner.state, k)
        order, done = [], False
        while not done:
            scores = np.where(info["action_mask"][:-1] == 1, obs[:, ATTRIBUTION_COLUMN], -np.inf)
            order.append(int(np.argmax(scores)))
            obs, _, done, _, info = env.step(order[-1])
        assert info["decision_passes"] == reference.passes == 2 * k
        assert order[:2] == list(reference.order[:2])
        assert not obs[:, [ATTRIBUTION_COLUMN, 1, MARGIN_COLUMN]].any()
        assert obs[order, ABLATED_COLUMN].all() and obs[0, STEPS_COLUMN] == pytest.approx(1.0)
    finally:
        env.close()
