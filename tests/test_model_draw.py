"""ModelDrawEnv: an environment that draws the model at reset (the zoo's IDs are built on it)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from circuit_gym.envs.circuit_env import CircuitDiscoveryEnv
from circuit_gym.envs.model_draw import ModelDrawEnv
from circuit_gym.models.cards import gated_tasks


def _inner(model: str, tasks: tuple[str, ...]) -> gym.Env:
    return CircuitDiscoveryEnv(model=model, tasks=tasks, split="eval", pool_size=2, batch_size=4)


@pytest.fixture(scope="module")
def env():
    e = ModelDrawEnv(_inner, ["toy", "toy_d"], ["ioi", "induction", "induction_seen"], tasks_of=gated_tasks)
    yield e
    e.close()


def test_every_listed_model_is_drawn_and_named(env):
    seen = {env.reset(seed=s)[1]["model"] for s in range(12)}
    assert seen == {"toy", "toy_d"}


def test_tasks_a_model_fails_its_gate_are_never_served(env):
    # 'induction' fails run D's gate, 'induction_seen' is redundant on toy (its card leaves it out)
    assert env.served["toy"] == ("ioi", "induction") and env.served["toy_d"] == ("ioi", "induction_seen")
    for s in range(16):
        _, info = env.reset(seed=s)
        assert info["task"] in gated_tasks(info["model"])
    with pytest.raises(ValueError, match="not served on model 'toy_d'"):
        env.reset(options={"model": "toy_d", "task": "induction"})


def test_tables_are_per_model(env):
    """The same task and batch on two models: observations and oracle tables must differ (a
    shared table would make them equal)."""
    rows = {}
    for model in ("toy", "toy_d"):
        obs, _ = env.reset(seed=0, options={"model": model, "task": "ioi", "batch_index": 0})
        _, _, _, _, info = env.step(0)
        assert info["model"] == model
        rows[model] = (obs, info["per_head_reward"])
    assert not np.allclose(rows["toy"][0], rows["toy_d"][0])
    assert not np.allclose(rows["toy"][1], rows["toy_d"][1])
    assert env.inner("toy").unwrapped.model is not env.inner("toy_d").unwrapped.model


def test_an_episode_is_a_function_of_the_seed(env):
    def run(seed):
        obs, info = env.reset(seed=seed)
        return info["model"], info["task"], info["batch_index"], obs

    a, b = run(5), run(5)
    assert a[:3] == b[:3] and np.array_equal(a[3], b[3])


def test_bad_models_are_clear_errors():
    with pytest.raises(ValueError, match="at least one model"):
        ModelDrawEnv(_inner, [], ["ioi"])
    with pytest.raises(ValueError, match="distinct"):
        ModelDrawEnv(_inner, ["toy", "toy"], ["ioi"])
    with pytest.raises(ValueError, match="perform none"):
        ModelDrawEnv(_inner, ["toy"], ["induction_seen"], tasks_of=gated_tasks)
    # a model that performs none of the tasks is left out, not drawn
    only = ModelDrawEnv(_inner, ["toy", "toy_d"], ["induction"], tasks_of=gated_tasks)
    assert only.models == ("toy",) and {only.reset(seed=s)[1]["model"] for s in range(4)} == {"toy"}
    mixed = ModelDrawEnv(_inner, ["toy", "tiny"], ["ioi"])
    with pytest.raises(ValueError, match="another head grid"):
        mixed.reset(options={"model": "tiny"})
    with pytest.raises(ValueError, match="model must be one of"):
        mixed.reset(options={"model": "gpt2"})


@pytest.mark.parametrize("inner", ["single-head", "circuit"])
def test_zoo_env_builds_either_family_and_passes_gymnasiums_checker(inner):
    from gymnasium.utils.env_checker import check_env

    from circuit_gym.envs.model_draw import ZooEnv

    env = ZooEnv(model=("toy", "toy_d"), tasks=("ioi",), inner=inner, split="eval", pool_size=2, batch_size=4)
    check_env(env, skip_render_check=True)
    _, info = env.reset(seed=3)
    assert info["model"] in ("toy", "toy_d")
    mask = env.action_masks()
    assert mask.shape == (env.action_space.n,) and mask[:144].all()  # no head chosen yet (circuit: + STOP)
    assert np.array_equal(mask, env.current.unwrapped.action_masks())
    env.close()
    with pytest.raises(ValueError, match="inner must be one of"):
        ZooEnv(model=("toy",), inner="bandit")
