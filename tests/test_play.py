"""``circuit-gym play`` driven through a pseudo-terminal, as a person would use it."""

from __future__ import annotations

import os
import re
import sys

import gymnasium as gym
import numpy as np
import pytest

from circuit_gym.play import grid_text, parse_head

pexpect = pytest.importorskip("pexpect")

ENV_ID = "CircuitDiscovery-Toy-IOI-v1"  # the 4 x 4 embedded model: a fast episode
PROMPT = "head to ablate> "


@pytest.mark.parametrize(("text", "head"), [("0.0", 0), ("1.2", 6), (" 3.3 ", 15), ("5", 5), ("15", 15)])
def test_heads_are_read_as_layer_dot_head_or_flat_ids(text, head):
    assert parse_head(text, 4, 4) == head


@pytest.mark.parametrize(("text", "message"), [("4.0", "no head 4.0"), ("0.4", "no head 0.4"), ("16", "no head 16"),
                                               ("-1", "no head -1"), ("x", "not a head"), ("1.x", "not a head")])  # fmt: skip
def test_bad_heads_say_what_is_allowed(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_head(text, 4, 4)


def test_grid_marks_ablated_chosen_and_oracle_heads():
    assert grid_text(2, 3, {4}).splitlines()[1:] == ["         0  .  .  .", "         1  .  X  ."]
    values = np.array([0.5, -1.0, 2.0, np.nan, 0.0, 0.25])
    rows = grid_text(2, 3, {3}, values, chosen=0, oracle=2).splitlines()
    assert rows[1].split() == ["0", "+0.50*", "-1.00", "+2.00!"] and rows[2].split() == [
        "1",
        "X",
        "+0.00",
        "+0.25",
    ]


def test_a_person_plays_an_episode_in_a_terminal(tmp_path, monkeypatch):
    env = {**os.environ, "CIRCUIT_GYM_CACHE": str(tmp_path / "cache"), "CIRCUIT_GYM_THREADS": "1",
           "CIRCUIT_GYM_PROGRESS": "0", "PYTHONWARNINGS": "ignore"}  # fmt: skip
    args = ["-m", "circuit_gym.cli", "play", "--env", ENV_ID, "--seed", "0", "--steps", "2"]
    child = pexpect.spawn(sys.executable, args, env=env, encoding="utf-8", timeout=240, dimensions=(50, 160))
    child.expect(PROMPT)
    opening = child.before
    assert "task ioi" in opening and "first prompt of the batch:" in opening
    assert "layer\\head  0  1  2  3" in opening and opening.count("  .") == 16  # the empty 4 x 4 grid
    for bad, message in (("9.9", "no head 9.9"), ("abc", "not a head")):
        child.sendline(bad)
        child.expect(PROMPT)
        assert message in child.before  # said, and asked again
    child.sendline("1.2")
    child.expect(PROMPT)
    shown = child.before
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    reward = float(re.search(r"you ablated 1\.2 \(flat id 6\): reward ([-+]\d+\.\d+)", shown).group(1))
    oracle_name, oracle_reward, recovery = re.search(
        r"oracle this step: (\d+\.\d+) with reward ([-+]\d+\.\d+); your recovery ([-+]?\d+\.\d+)", shown
    ).groups()  # fmt: skip
    grid = shown.split("(* your choice, ! the oracle):")[1]
    assert "*" in grid.splitlines()[3] and "X" in grid  # the chosen head marked, then crossed in the new grid

    # the same episode stepped directly: the terminal showed what the environment returned
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    direct = gym.make(ENV_ID, episode_length=2)
    direct.reset(seed=0)
    _, r, _, _, info = direct.step(6)
    assert reward == pytest.approx(r, abs=5e-4)
    assert oracle_name == f"{info['oracle_head'] // 4}.{info['oracle_head'] % 4}"
    assert float(oracle_reward) == pytest.approx(info["oracle_reward"], abs=5e-4)
    assert float(recovery) == pytest.approx(r / info["oracle_reward"], abs=5e-3)
