"""Stable-Baselines3 users: docs/sb3.md's MaskablePPO example runs as written on both kinds of
environment (only the ID and the number of steps changed, to stay fast), the flat-observation
path keeps each head's features together, and MaskablePPO never picks a masked action."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import circuit_gym  # noqa: F401  (registers the IDs)

sb3_contrib = pytest.importorskip("sb3_contrib")  # the `sb3` extra (also in `dev`)
from stable_baselines3.common.env_checker import check_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY_IDS = {
    "single head": "CircuitDiscovery-Toy-IOI-v1",
    "circuit building": "CircuitDiscovery-Toy-IOI-Circuit-v0",
}


def _doc_example() -> str:
    text = (ROOT / "docs" / "sb3.md").read_text()
    (code,) = re.findall(r"## MaskablePPO\n\n```python\n(.*?)```", text, re.S)
    return code


def _with(code: str, **constants: object) -> str:
    for name, value in constants.items():
        code, n = re.subn(rf"^{name} = .*$", f"{name} = {value!r}", code, count=1, flags=re.M)
        assert n == 1, f"docs/sb3.md's example has no {name} line"
    return code


@pytest.mark.parametrize(
    "kind",
    ["single head", pytest.param("circuit building", marks=pytest.mark.slow)],  # ~1 min: 16-head circuits
)
def test_the_docs_maskable_ppo_example_runs(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    code = _with(_doc_example(), ENV_ID=TINY_IDS[kind], STEPS=256)
    if kind == "circuit building":  # the 4 x 4 model is not the circuit ID's default; the rest unchanged
        code = code.replace("gym.make(ENV_ID, ", 'gym.make(ENV_ID, model="tiny", ')
    scope: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/sb3.md", "exec"), scope)
    model, env = scope["model"], scope["env"]
    assert model.num_timesteps >= 256  # it trained
    assert re.fullmatch(r"ablated head \d+: reward -?\d+\.\d{3}, oracle head \d+\n", out.getvalue())
    assert env.unwrapped.action_masks().dtype == bool


@pytest.mark.parametrize("kind", TINY_IDS)
def test_environments_pass_sb3s_checker_unwrapped(kind):
    kwargs = {"pool_size": 1, "batch_size": 4} | ({"model": "tiny"} if kind == "circuit building" else {})
    check_env(gym.make(TINY_IDS[kind], **kwargs).unwrapped, warn=False)


def test_flat_observation_keeps_each_heads_features_together():
    env = gym.make(TINY_IDS["single head"], pool_size=1, batch_size=4)
    flat_env = gym.wrappers.FlattenObservation(gym.make(TINY_IDS["single head"], pool_size=1, batch_size=4))
    obs, _ = env.reset(seed=3)
    flat, _ = flat_env.reset(seed=3)
    heads, features = obs.shape
    assert flat.shape == (heads * features,)
    np.testing.assert_array_equal(flat[5 * features : 6 * features], obs[5])  # head 5's row


def test_maskable_ppo_never_picks_an_ablated_head():
    """After head 7 is ablated the env masks it, and an untrained MaskablePPO (near-uniform over
    16 heads: 7 would come up about 3 times in 50 draws unmasked) never picks it again."""
    env = gym.make(TINY_IDS["single head"], pool_size=1, batch_size=4, episode_length=2)
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0)
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(7)
    mask = env.unwrapped.action_masks()
    assert mask.dtype == bool and not mask[7] and mask.sum() == mask.size - 1
    actions = [int(model.predict(obs, action_masks=mask)[0]) for _ in range(50)]
    assert 7 not in actions
    unmasked = [int(model.predict(obs)[0]) for _ in range(200)]
    assert 7 in unmasked  # the draws above could have picked it
