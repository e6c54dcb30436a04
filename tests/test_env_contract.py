"""Both environment types keep Gymnasium's contract (issue 33): no step after the end of an
episode or before the first reset, type errors for actions of the wrong type, one argument
validation for both (issue 30), ``max_episode_steps`` in every spec, and ``action_masks()``
(sb3-contrib's ``MaskablePPO`` convention)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym.envs import ResetNeededError
from circuit_gym.envs.circuit_building import CircuitBuildingEnv
from circuit_gym.envs.circuit_env import CircuitDiscoveryEnv

SMALL = dict(model="tiny", pool_size=2, batch_size=2)  # the 4 x 4 model: 16 heads
SINGLE_IOI = "CircuitDiscovery-Toy-IOI-v4"
CIRCUIT_IOI = "CircuitDiscovery-Toy-IOI-Circuit-v0"


def single(**kwargs) -> gym.Env:
    return gym.make(SINGLE_IOI, **{**SMALL, **kwargs})


def circuit(**kwargs) -> gym.Env:
    return gym.make(CIRCUIT_IOI, **{**SMALL, **kwargs})


# ------------------------------------------------------------------ the end of an episode
@pytest.mark.parametrize("make", [lambda: single(episode_length=2, oracle_info=False),
                                  lambda: circuit(budget=2, oracle_info=False)])  # fmt: skip
def test_step_after_termination_is_an_error_until_reset(make):
    env = make()
    env.reset(seed=0)
    terminated = False
    for action in (1, 2):
        _, _, terminated, _, _ = env.step(action)
    assert terminated
    base = env.unwrapped
    before = (base.action_mask().copy(), base.render() if base.render_mode else None)
    for action in (3, 0):  # through gym.make's wrappers (checker, order enforcing, time limit)
        with pytest.raises(ResetNeeded, match=r"after the episode ended .*reset\(\)"):
            env.step(action)
    with pytest.raises(RuntimeError, match="episode ended"):  # also a RuntimeError, as before
        base.step(3)
    assert np.array_equal(base.action_mask(), before[0])  # the refused steps changed nothing
    env.reset(seed=1)
    _, _, terminated, _, _ = env.step(3)  # a reset starts the next episode
    assert not terminated


def test_circuit_env_refuses_steps_after_stop():
    """Issue 33's report: stepped after STOP, the circuit env returned terminated=False and kept building."""
    env = circuit(budget=5, oracle_info=False)
    env.reset(seed=0)
    env.step(4)
    _, _, terminated, _, info = env.step(16)  # STOP
    assert terminated and info["circuit_size"] == 1
    with pytest.raises(ResetNeededError):
        env.step(7)
    assert env.unwrapped.circuit.heads == frozenset({4})


@pytest.mark.parametrize("cls", [CircuitDiscoveryEnv, CircuitBuildingEnv])
def test_step_before_reset_is_gymnasiums_reset_needed(cls):
    env = cls(**SMALL)
    with pytest.raises(ResetNeeded, match=r"before calling env.reset\(\)"):
        env.step(0)
    with pytest.raises(RuntimeError):
        env.step(0)


# ------------------------------------------------------------------ actions
BAD_TYPES = ["3", 3.7, 2.0, [3, 4], (3,), None, True, np.float32(2.0), np.array([1, 2]), np.array([[1]]),
             np.array(1.0)]  # fmt: skip


@pytest.mark.parametrize("cls", [CircuitDiscoveryEnv, CircuitBuildingEnv])
def test_actions_of_the_wrong_type_get_a_type_message_and_are_not_steps(cls):
    length = {"episode_length": 3} if cls is CircuitDiscoveryEnv else {"budget": 3}
    env = cls(**SMALL, **length, oracle_info=False)
    env.reset(seed=0)
    for action in BAD_TYPES:
        with pytest.raises(TypeError, match=r"action must be one integer") as err:
            env.step(action)
        assert "in [0," in str(err.value)  # and it names the range
    with pytest.raises(TypeError, match=r"numpy array of shape \(2,\)"):
        env.step(np.array([1, 2]))
    for action in (-1, env.action_space.n):
        with pytest.raises(ValueError, match=r"action must be .*in \[0, "):
            env.step(action)
    _, _, _, _, info = env.step(np.array(3))  # a 0-d integer array is one integer
    assert info["action_mask"][3] == 0
    _, _, _, _, info = env.step(np.int64(5))
    # the refused actions were no steps
    assert info["action_mask"][5] == 0 and info["action_mask"][:16].sum() == 14


# ------------------------------------------------------------------ one validation for both
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [(dict(batch_size=True), "batch_size must be an integer >= 1, got True"),
     (dict(pool_size=0), "pool_size must be an integer >= 1, got 0"),
     (dict(pool_size=2.0), "pool_size must be an integer >= 1, got 2.0"),
     (dict(cache="yes"), "cache must be True or False"), (dict(oracle_info=1), "oracle_info must be True or False"),
     (dict(split="dev"), "split must be one of"), (dict(ablation="noise"), "ablation must be one of"),
     (dict(tasks=[]), "tasks must name at least one"), (dict(tasks=["ioi", "nope"]), "tasks must be one of"),
     (dict(render_mode="svg"), "render_mode must be one of")],
)  # fmt: skip
def test_both_envs_refuse_a_bad_shared_argument_with_the_same_message(kwargs, message):
    messages = []
    for cls in (CircuitDiscoveryEnv, CircuitBuildingEnv):
        with pytest.raises(ValueError, match=message) as err:
            cls(**{**SMALL, **kwargs})
        messages.append(str(err.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize(
    ("cls", "kwargs", "name"),
    [(CircuitDiscoveryEnv, dict(episode_length=True), "episode_length"),  # accepted until issue 30
     (CircuitDiscoveryEnv, dict(lam=True), "lam"), (CircuitDiscoveryEnv, dict(lam=float("inf")), "lam"),
     (CircuitBuildingEnv, dict(budget=True), "budget"), (CircuitBuildingEnv, dict(alpha=True), "alpha")],
)  # fmt: skip
def test_a_bool_is_not_a_count_or_a_weight(cls, kwargs, name):
    with pytest.raises(ValueError, match=f"{name} must be"):
        cls(**SMALL, **kwargs)


# ------------------------------------------------------------------ spec and masks
def test_every_spec_has_max_episode_steps_equal_to_the_number_of_heads_of_its_model():
    """One step per head (per edge of the model's graph for the edge-building IDs): the longest
    episode there is, so TimeLimit never cuts one short."""
    from circuit_gym.edges import EdgeGraph
    from circuit_gym.embedded import MODEL_SETS
    from circuit_gym.models import load_model

    heads = {}
    for env_id, spec in gym.registry.items():
        if not env_id.startswith("CircuitDiscovery-"):
            continue
        model = spec.kwargs["model"]
        if model not in heads and model == "planted":  # generated per reset: seed 0's model, every version's
            from circuit_gym.models.planted.generator import make_planted_model
            from circuit_gym.models.planted.versions import VERSIONS

            sizes = {make_planted_model(0, version=v).model.circuit_gym_info.n_heads_total for v in VERSIONS}
            assert len(sizes) == 1, sizes  # one grid: the IDs of every version share one bound
            heads[model] = sizes.pop()
        elif model not in heads:  # loaded (a model set: its first member); GPT-2 small has 12 x 12
            name = MODEL_SETS.get(model, (model,))[0]
            heads[model] = 144 if model == "gpt2" else load_model(name).circuit_gym_info.n_heads_total
        if env_id.rsplit("-", 2)[-2] == "Edges":  # steps bounded by the edges of the model's graph
            side = int(heads[model] ** 0.5)  # every edge ID's model is square (12 x 12)
            assert side * side == heads[model], env_id
            assert spec.max_episode_steps == EdgeGraph(side, side).n_edges, env_id
            continue
        assert spec.max_episode_steps == heads[model], env_id
    assert {m: heads[m] for m in ("tiny", "toy_d", "toy", "gpt2")} == {"tiny": 16, "toy_d": 144, "toy": 144,
                                                                     "gpt2": 144}  # fmt: skip


def test_the_longest_episode_is_not_cut_short_by_the_time_limit():
    env = gym.make(
        "CircuitDiscovery-Toy-IOI-v1", pool_size=2, batch_size=2, episode_length=16, oracle_info=False
    )
    assert env.spec.max_episode_steps == 16
    env.reset(seed=0)
    flags = [env.step(h)[2:4] for h in range(16)]
    assert flags[:15] == [(False, False)] * 15 and flags[15][0] is True  # terminated on the 16th step


@pytest.mark.parametrize("make", [lambda: single(episode_length=3), lambda: circuit(budget=3)])
def test_action_masks_is_the_info_mask_as_booleans(make):
    env = make()
    action_masks = env.get_wrapper_attr("action_masks")  # how sb3-contrib reaches it through wrappers
    _, info = env.reset(seed=0)
    for action in (5, 5, 9):
        mask = action_masks()
        assert mask.dtype == np.bool_ and mask.shape == (env.action_space.n,)
        assert np.array_equal(mask, info["action_mask"].astype(bool))
        _, _, terminated, _, info = env.step(action)
    assert terminated and not action_masks()[5] and not action_masks()[9]
    assert np.array_equal(action_masks(), info["action_mask"].astype(bool))
