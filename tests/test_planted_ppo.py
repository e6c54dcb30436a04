"""The Planted PPO (circuit_gym/baselines/planted_ppo.py): its seeds, environments and selection
score, and the shipped run it trained."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from circuit_gym.baselines import circuit_ppo, planted_ppo
from circuit_gym.baselines.ppo_trainer import training_env
from circuit_gym.envs.planted import TRUTH_KEY
from circuit_gym.leaderboard import planted_scorer
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.tasks.planted import KINDS_V3

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "docs" / "results" / "v8" / "ppo_planted"  # the Planted track in force's PPO


PUBLIC_SEEDS = planted_scorer.planted_benchmark().public_seeds  # the Planted track in force's


def test_training_and_selection_seeds_never_meet_the_boards_seeds():
    assert not set(planted_ppo.TRAIN_SEEDS) & set(PUBLIC_SEEDS)
    assert not set(planted_ppo.SELECTION_SEEDS) & set(PUBLIC_SEEDS)
    assert not set(planted_ppo.TRAIN_SEEDS) & set(planted_ppo.SELECTION_SEEDS)
    shipped = json.loads((RUN / "planted_run.json").read_text())
    assert (shipped["train_seeds"], shipped["selection_seeds"]) == (
        list(planted_ppo.TRAIN_SEEDS),
        list(planted_ppo.SELECTION_SEEDS),
    )


def test_the_training_environments_play_the_kinds_in_turn_on_training_seeds_and_carry_no_truth():
    config = planted_ppo.PlantedPPOConfig(batch_size_prompts=4)  # the default: the track in force's kinds
    assert config.n_envs == len(KINDS_V3)
    for seed in range(len(KINDS_V3)):
        env = training_env(planted_ppo.RECIPE, config, seed)  # as the trainer makes it
        base = env.unwrapped
        assert base.kind == KINDS_V3[seed % len(KINDS_V3)] and base.seeds == planted_ppo.TRAIN_SEEDS
        obs, info = env.reset(seed=seed)
        assert int(info["model"].rsplit("-", 1)[1]) in planted_ppo.TRAIN_SEEDS
        obs, reward, terminated, _, info = env.step(base.stop_action)
        assert terminated and TRUTH_KEY not in info and set(obs) == {"obs", "mask"}
        env.close()


def test_f1():
    assert planted_ppo.f1(1.0, 1.0) == 1.0 and planted_ppo.f1(0.0, 0.0) == 0.0
    assert planted_ppo.f1(0.5, 1.0) == pytest.approx(2 / 3)


def test_it_plays_the_tracks_ids_and_scores_episodes_as_the_track_does():
    """Baselines do not import the leaderboard, so the Planted PPO names the track's IDs and scores
    its selection episodes itself: both as the track's scorer does."""
    generator = planted_scorer.planted_benchmark().generator  # the track in force's: ID version 1
    assert [planted_ppo.kind_env_id(k, 1) for k in KINDS_V3] == [planted_scorer.env_id(k) for k in KINDS_V3]
    ranking = np.random.default_rng(0).permutation(144)  # every head of a planted model
    for kind in KINDS_V3:
        truth = sorted(truth_of(1000, generator).circuit(kind))
        order = [truth[0], next(int(h) for h in ranking if h not in truth)]  # precision 1/2, recall 1/n
        played = {"order": order, "ranking": _Ranking(ranking), "circuit_size": 2, "faithfulness": 0.5,
                  "forward_passes": 7}  # fmt: skip
        ours, track = (
            planted_ppo.truth_scores(kind, 1000, played, generator),
            planted_scorer.episode_scores(kind, 1000, played),
        )
        assert ours == {k: track[k] for k in ours} and ours["precision"] == 0.5


class _Ranking:
    def __init__(self, order: np.ndarray) -> None:
        self._order = order

    def order(self) -> np.ndarray:
        return self._order


def test_the_shipped_policy_loads_and_its_choice_is_the_best_selection_score():
    curve = json.loads((RUN / "curve.json").read_text())
    summary = json.loads((RUN / "train_summary.json").read_text())
    assert summary["best_selection_score"] == max(e["selection_score"] for e in curve)
    policy = circuit_ppo.load_policy(str(RUN))
    obs = np.zeros((144, len(circuit_ppo.CIRCUIT_FEATURE_SETS["attention"])), np.float32)
    mask = np.ones(145, np.int8)
    assert 0 <= policy.act(obs, mask) <= 144
