"""``reset(options=...)`` takes a dict (or None); anything else is a TypeError that names the
type expected, in every family (a string once read as "unknown reset options ['x']")."""

from __future__ import annotations

import gymnasium as gym
import pytest

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym.envs.arguments import reset_options

# One ID per reset path: the single-model envs, the zoo's model draw and the planted generator.
IDS = ["CircuitDiscovery-Toy-IOI-v4", "CircuitDiscovery-Toy-IOI-Circuit-v0", "CircuitDiscovery-Zoo-Multi-v0",
       "CircuitDiscovery-Planted-Induction-v0"]  # fmt: skip


@pytest.mark.parametrize("options", ["x", ["task", "ioi"], ("task", "ioi"), 3])
def test_reset_options_must_be_a_dict(options):
    with pytest.raises(TypeError, match=rf"options must be a dict \(or None\).*got {type(options).__name__}"):
        reset_options(options)


def test_reset_options_are_copied_not_changed():
    given = {"task": "ioi"}
    out = reset_options(given)
    out.pop("task")
    assert given == {"task": "ioi"} and reset_options(None) == {}


@pytest.mark.parametrize("env_id", IDS)
def test_every_family_says_options_must_be_a_dict(env_id):
    env = gym.make(env_id)
    with pytest.raises(TypeError, match=r"options must be a dict \(or None\).*got str 'x'"):
        env.reset(options="x")
    env.close()
