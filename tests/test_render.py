import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym.envs import HideOracleInfo
from circuit_gym.envs import render as R

ENV_ID = "CircuitDiscovery-Toy-IOI-v1"
KWARGS = dict(pool_size=2, batch_size=4)


def centre_pixel(frame: np.ndarray, head: int, n_heads: int = 4) -> np.ndarray:
    # Geometry from the module docstring: layer = row of cells from the top, head = column,
    # cells CELL pixels apart after a MARGIN, the last GAP pixels of a cell background.
    layer, col = divmod(head, n_heads)
    y = R.MARGIN + layer * R.CELL + (R.CELL - R.GAP) // 2
    x = R.MARGIN + col * R.CELL + (R.CELL - R.GAP) // 2
    return frame[y, x].astype(int)


def test_make_with_rgb_array_and_render_shape():
    env = gym.make(ENV_ID, render_mode="rgb_array", **KWARGS)
    assert env.metadata["render_fps"] > 0 and "rgb_array" in env.metadata["render_modes"]
    before = env.unwrapped.render()  # before reset (gym.make's wrapper forbids it): an empty grid
    env.reset(seed=0)
    frame = env.render()
    for f in (before, frame):
        assert isinstance(f, np.ndarray) and f.dtype == np.uint8 and f.ndim == 3 and f.shape[2] == 3
    assert frame.shape == (2 * R.MARGIN + 4 * R.CELL, 2 * R.MARGIN + 4 * R.CELL, 3)


def test_ablated_head_is_marked_and_rewards_are_coloured():
    env = gym.make(ENV_ID, render_mode="rgb_array", episode_length=2, **KWARGS)
    env.reset(seed=0)
    table = env.unwrapped.episode.table.reward
    best, worst = int(np.argmax(table)), int(np.argmin(table))
    frame = env.render()  # the first step's table, nothing ablated yet
    r, _, b = centre_pixel(frame, best)
    assert r > b  # positive reward: red end of the scale
    r, _, b = centre_pixel(frame, worst)
    assert b > r  # negative reward: blue end
    before = centre_pixel(frame, best)

    _, _, _, _, info = env.step(best)
    frame = env.render()
    other = next(h for h in range(16) if h != best)
    ablated_px, other_px = centre_pixel(frame, best), centre_pixel(frame, other)
    assert not np.array_equal(ablated_px, other_px) and not np.array_equal(ablated_px, before)
    assert ablated_px.tolist() == R.MARK.tolist()  # the cross goes through the cell's centre
    assert other_px.tolist() != R.MARK.tolist()


def test_hidden_oracle_shows_no_reward_colours():
    env = HideOracleInfo(gym.make(ENV_ID, render_mode="rgb_array", **KWARGS))
    env.reset(seed=0)
    frame = env.render()
    assert all(centre_pixel(frame, h).tolist() == R.UNKNOWN.tolist() for h in range(16))


def test_ansi_still_works():
    env = gym.make(ENV_ID, render_mode="ansi", episode_length=2, **KWARGS)
    assert isinstance(env.unwrapped.render(), str)
    env.reset(seed=0)
    env.step(5)
    text = env.render()
    assert isinstance(text, str) and "ablated 1.1" in text and "step 1/2" in text


def test_rgb_array_list_through_make():
    env = gym.make(ENV_ID, render_mode="rgb_array_list", episode_length=2, **KWARGS)
    env.reset(seed=0)
    env.step(1)
    frames = env.render()
    assert isinstance(frames, list) and len(frames) == 2 and frames[0].shape == frames[1].shape


@pytest.mark.parametrize("mode", [None, "ansi", "rgb_array"])
def test_check_env_with_each_render_mode(mode):
    env = gym.make(ENV_ID, render_mode=mode, **KWARGS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)  # with render checks; mode None tries every declared mode
    problems = [str(w.message) for w in caught if "render" in str(w.message).lower()]
    assert not problems, problems


def test_record_video(tmp_path):
    pytest.importorskip("moviepy")
    env = gym.wrappers.RecordVideo(
        gym.make(ENV_ID, render_mode="rgb_array", **KWARGS), str(tmp_path), episode_trigger=lambda e: e == 0
    )
    env.reset(seed=0)
    env.step(0)
    env.close()
    assert list(tmp_path.glob("*.mp4"))
