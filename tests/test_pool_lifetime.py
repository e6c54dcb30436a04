"""Episode pools and what is built for their episodes can neither go stale nor grow without
bound (issue 30): a re-registered task is served from its new definition, and a pool lives
exactly as long as an environment that uses it."""

from __future__ import annotations

import dataclasses
import gc
import weakref

import numpy as np
import pytest

from circuit_gym.envs.circuit_building import CircuitBuildingEnv, CircuitEpisode
from circuit_gym.envs.circuit_env import CircuitDiscoveryEnv
from circuit_gym.envs.pool import EpisodePool
from circuit_gym.tasks import get_task, register_task

SMALL = dict(model="tiny", pool_size=2, batch_size=2)


@pytest.fixture
def task_name():
    """A copy of IOI under a name of this test's own."""
    from circuit_gym.tasks import base

    name = "pool_lifetime_ioi"
    register_task(dataclasses.replace(get_task("ioi"), name=name), overwrite=True)
    yield name
    base._REGISTRY.pop(name)  # other tests list every registered task


def _negated(task):
    metric = task.metric

    def negated(logits, batch):
        return -metric(logits, batch)

    return dataclasses.replace(task, metric=negated)


def _task_damage(env, task: str, head: int) -> float:
    env.reset(options={"task": task, "batch_index": 0})
    return env.step(head)[4]["task_damage"]


@pytest.mark.parametrize("same_env", [True, False])
def test_re_registering_a_task_serves_the_new_definition(task_name, same_env):
    kwargs = dict(**SMALL, tasks=task_name, oracle_info=False)
    env = CircuitDiscoveryEnv(**kwargs)
    before = _task_damage(env, task_name, 5)
    assert before != 0.0
    register_task(_negated(get_task(task_name)), overwrite=True)
    after = _task_damage(env if same_env else CircuitDiscoveryEnv(**kwargs), task_name, 5)
    assert after == pytest.approx(-before, rel=1e-6)  # the negated metric's damage, not the old table's


def test_re_registering_reaches_the_circuit_env_too(task_name):
    env = CircuitBuildingEnv(**SMALL, tasks=task_name, oracle_info=False)
    env.reset(options={"batch_index": 0})
    old_full = env.unwrapped.state.full_metric
    register_task(_negated(get_task(task_name)), overwrite=True)
    env.reset(options={"batch_index": 0})
    assert env.state.episode.pool.task is get_task(task_name)
    assert env.state.full_metric == pytest.approx(-old_full, rel=1e-6)


def _live(cls) -> int:
    gc.collect()
    return sum(isinstance(o, cls) for o in gc.get_objects())


@pytest.mark.parametrize("cls", [CircuitDiscoveryEnv, CircuitBuildingEnv])
def test_pools_and_episode_state_are_freed_with_the_last_env_that_uses_them(cls):
    baseline = (_live(EpisodePool), _live(CircuitEpisode))
    refs = []
    for pool_size in range(3, 11):  # eight pools of different settings, each used then dropped
        env = cls(**{**SMALL, "pool_size": pool_size}, oracle_info=False)
        env.reset(seed=pool_size)
        env.step(1)
        episode = env.episode if cls is CircuitDiscoveryEnv else env.state.episode
        refs += [weakref.ref(episode.pool), weakref.ref(episode)]
        if cls is CircuitBuildingEnv:
            refs.append(weakref.ref(env.state))
        del env, episode
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)  # nothing built for a dropped env survives
    assert (_live(EpisodePool), _live(CircuitEpisode)) == baseline


def test_envs_of_the_same_settings_share_a_pool_while_one_lives():
    a = CircuitDiscoveryEnv(**SMALL, tasks=("ioi", "induction"))
    b = CircuitDiscoveryEnv(**SMALL, tasks=("ioi", "induction"))
    assert a.pool("ioi") is b.pool("ioi")
    circuit = CircuitBuildingEnv(**SMALL)  # lam=1, the model's reference: the same pool as a's
    assert circuit.pool("ioi") is a.pool("ioi")
    first = weakref.ref(a.pool("induction"))
    assert b.pool("induction") is first()
    a.reset(options={"task": "ioi", "batch_index": 0})  # a Multi env keeps every pool it used
    assert a.pool("induction") is first()
    del a
    gc.collect()
    assert first() is not None  # b still uses it
    del b, circuit
    gc.collect()
    assert first() is None


def test_observations_are_unchanged_by_a_fresh_pool():
    env = CircuitDiscoveryEnv(**SMALL, oracle_info=False)
    obs, _ = env.reset(options={"batch_index": 1})
    _, reward, *_ = env.step(6)
    del env
    gc.collect()
    again = CircuitDiscoveryEnv(**SMALL, oracle_info=False)
    obs2, _ = again.reset(options={"batch_index": 1})
    np.testing.assert_array_equal(obs, obs2)
    assert again.step(6)[1] == reward
