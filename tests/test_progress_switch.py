"""Every progress bar obeys the one switch (circuit_gym.progress): the main job's evaluation
bars and PPO's warm-up bars stay silent under CIRCUIT_GYM_PROGRESS=0 (`circuit-gym
--no-progress`) and show under CIRCUIT_GYM_PROGRESS=1, even when stderr is not a terminal."""

from __future__ import annotations

import ast
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from circuit_gym import progress
from circuit_gym.baselines import circuit_ppo, ppo
from circuit_gym.evaluation import evaluate

ROOT = Path(__file__).resolve().parents[1]
# Where bars are drawn (leaderboard/: the scorers' bars)
PACKAGES = ("circuit_gym", "baselines", "scripts", "leaderboard")


@pytest.fixture(params=["0", "1"])
def switch(request, monkeypatch) -> str:
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setenv(progress.PROGRESS_ENV_VAR, request.param)
    monkeypatch.setenv(progress.DELAY_ENV_VAR, "0")  # these small runs are faster than the default delay
    return request.param


def _bar_shown(capsys, words: str) -> bool:
    return words in capsys.readouterr().err


def test_evaluation_bar_obeys_the_switch(switch, capsys):
    env = gym.make("CircuitDiscovery-Toy-IOI-v1", pool_size=1, batch_size=4)
    evaluate(env, lambda obs, env: np.arange(obs.shape[0], dtype=float), "mine", ["ioi"], [0], progress=True)
    assert _bar_shown(capsys, "evaluate mine") is (switch == "1")


def test_ppo_warm_up_bar_obeys_the_switch(switch, capsys):
    config = ppo.PPOConfig(env_id="CircuitDiscovery-Toy-IOI-v1", pool_size=1, selection_episodes=1,
                           batch_size_prompts=4)  # fmt: skip
    ppo.warm_up(config)
    assert _bar_shown(capsys, "oracle tables (ioi)") is (switch == "1")


def test_circuit_ppo_warm_up_bar_obeys_the_switch(switch, capsys):
    config = circuit_ppo.CircuitPPOConfig(env_id="CircuitDiscovery-Toy-IOI-Circuit-v0", model="tiny",
                                          pool_size=1, selection_episodes=1, batch_size_prompts=4)  # fmt: skip
    circuit_ppo.warm_up(config)
    assert _bar_shown(capsys, "circuit runners (ioi)") is (switch == "1")


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _calls_progress_enabled(value: ast.expr | None) -> bool:
    """``progress_enabled(...)`` or ``not progress_enabled(...)``: the switch decides."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        value = value.operand
    return isinstance(value, ast.Call) and getattr(value.func, "id", None) == "progress_enabled"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_bar_in_the_code_goes_through_the_switch(package):
    """A bar drawn straight with tqdm (or Tianshou's ``show_progress``) without asking
    ``progress_enabled`` ignores CIRCUIT_GYM_PROGRESS=0: the bug this file was written for."""
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        if path == ROOT / "circuit_gym" / "progress.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name == "tqdm" and not _calls_progress_enabled(_keyword(node, "disable")):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} tqdm(...)")
            shown = _keyword(node, "show_progress")
            if shown is not None and not (_calls_progress_enabled(shown) or
                                          (isinstance(shown, ast.Constant) and shown.value is False)):  # fmt: skip
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} show_progress=...")
    assert not offenders, "bars that bypass circuit_gym.progress:\n" + "\n".join(offenders)


def test_the_check_above_catches_a_bare_bar():
    """The AST check flags what it should (so the test above can fail)."""
    bare = ast.parse("tqdm(jobs, desc='x')\nTrainer(show_progress=progress)").body
    calls = [statement.value for statement in bare]
    assert not _calls_progress_enabled(_keyword(calls[0], "disable"))
    assert not _calls_progress_enabled(_keyword(calls[1], "show_progress"))
    good = ast.parse("tqdm(jobs, disable=not progress_enabled(p))").body[0].value
    assert _calls_progress_enabled(_keyword(good, "disable"))
