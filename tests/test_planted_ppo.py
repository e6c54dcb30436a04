"""The Planted PPO's training script (scripts/train_planted_ppo.py): its seeds, environments and
selection score, and the shipped run it trained."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from circuit_gym.baselines import circuit_ppo
from circuit_gym.envs.planted import TRUTH_KEY
from circuit_gym.leaderboard.planted_scorer import PUBLIC_SEEDS
from circuit_gym.tasks.planted import KINDS

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "docs" / "results" / "planted" / "ppo_planted"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location(
        "train_planted_ppo", ROOT / "scripts" / "train_planted_ppo.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_training_and_selection_seeds_never_meet_the_boards_seeds(script):
    assert not set(script.TRAIN_SEEDS) & set(PUBLIC_SEEDS)
    assert not set(script.SELECTION_SEEDS) & set(PUBLIC_SEEDS)
    assert not set(script.TRAIN_SEEDS) & set(script.SELECTION_SEEDS)
    shipped = json.loads((RUN / "planted_run.json").read_text())
    assert (shipped["train_seeds"], shipped["selection_seeds"]) == (
        list(script.TRAIN_SEEDS),
        list(script.SELECTION_SEEDS),
    )


def test_the_training_environments_play_the_kinds_in_turn_on_training_seeds_and_carry_no_truth(script):
    config = script.PlantedPPOConfig(batch_size_prompts=4)
    for seed in range(len(KINDS)):
        env = script.make_training_env(config, seed)
        base = env.unwrapped
        assert base.kind == KINDS[seed % len(KINDS)] and base.seeds == script.TRAIN_SEEDS
        obs, info = env.reset(seed=seed)
        assert int(info["model"].rsplit("-", 1)[1]) in script.TRAIN_SEEDS
        obs, reward, terminated, _, info = env.step(base.stop_action)
        assert terminated and TRUTH_KEY not in info and set(obs) == {"obs", "mask"}
        env.close()


def test_f1(script):
    assert script.f1(1.0, 1.0) == 1.0 and script.f1(0.0, 0.0) == 0.0
    assert script.f1(0.5, 1.0) == pytest.approx(2 / 3)


def test_the_shipped_policy_loads_and_its_choice_is_the_best_selection_score():
    curve = json.loads((RUN / "curve.json").read_text())
    summary = json.loads((RUN / "train_summary.json").read_text())
    assert summary["best_selection_score"] == max(e["selection_score"] for e in curve)
    policy = circuit_ppo.load_policy(str(RUN))
    obs = np.zeros((144, len(circuit_ppo.CIRCUIT_FEATURE_SETS["attention"])), np.float32)
    mask = np.ones(145, np.int8)
    assert 0 <= policy.act(obs, mask) <= 144
