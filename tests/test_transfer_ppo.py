"""PPO trained across the training models of zoo v1 (issue 35 item 7): a tiny run of each
track on the Zoo-Multi IDs over ``zoo-train`` serves, and chooses its checkpoint on, training
tasks of training models on the train split only, and its selection visits every such cell."""

from __future__ import annotations

import json

import pytest

from circuit_gym.baselines import circuit_ppo, ppo
from circuit_gym.benchmark import TRAIN_MODELS, TRANSFER_TRAIN_TASKS
from circuit_gym.envs.circuit_building import CircuitBuildingEnv
from circuit_gym.envs.circuit_env import CircuitDiscoveryEnv
from circuit_gym.models.cards import gated_tasks

TINY = dict(model="zoo-train", pool_size=2, selection_episodes=1, batch_size_prompts=4, n_envs=2, epochs=1,
            steps_per_collect=8, minibatch=4, repeat=1, hidden=8)  # fmt: skip


@pytest.fixture
def served(monkeypatch):
    """Every episode any single-model environment serves: (model, task, split, batch index)."""
    log: list[tuple[str, str, str, int]] = []
    for cls in (CircuitDiscoveryEnv, CircuitBuildingEnv):

        def reset(self, *, seed=None, options=None, _reset=cls.reset):
            obs, info = _reset(self, seed=seed, options=options)
            log.append((self.model.circuit_gym_info.name, info["task"], self.split, int(info["batch_index"])))
            return obs, info

        monkeypatch.setattr(cls, "reset", reset)
    return log


def cells() -> set[tuple[str, str]]:
    return {(m, t) for m in TRAIN_MODELS for t in TRANSFER_TRAIN_TASKS if t in gated_tasks(m)}


def check_served(log, config, curve_cells: set[str]) -> None:
    assert log, "no episode was served"
    assert {m for m, *_ in log} == set(TRAIN_MODELS)  # both training models, no held-out one
    assert {t for _, t, *_ in log} <= set(TRANSFER_TRAIN_TASKS)
    assert {s for _, _, s, _ in log} == {"train"}
    assert max(i for *_, i in log) == config.pool_size + config.selection_episodes - 1
    held_back = {(m, t) for m, t, _, i in log if i >= config.pool_size}
    assert held_back == cells()  # selection (and warm-up) visits every training cell
    assert curve_cells == {f"{m}/{t}" for m, t in cells()}


def test_single_head_ppo_trains_and_selects_on_training_models_and_tasks(tmp_path, served):
    config = ppo.PPOConfig(env_id="CircuitDiscovery-Zoo-Multi-v0", steps_per_epoch=16, **TINY)
    summary = ppo.train(config, tmp_path, progress=False)
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert len(curve) == 2 and summary["best_selection_recovery"] == max(
        p["selection_recovery"] for p in curve
    )
    check_served(served, config, set(curve[-1]["selection_recovery_per_cell"]))
    # the score is the mean over the cells, each model counted once
    for point in curve:
        per_cell = point["selection_recovery_per_cell"]
        assert point["selection_recovery"] == pytest.approx(sum(per_cell.values()) / len(per_cell))


def test_circuit_ppo_trains_and_selects_on_training_models_and_tasks(tmp_path, served):
    config = circuit_ppo.CircuitPPOConfig(env_id="CircuitDiscovery-Zoo-Multi-Circuit-v0", budget=2,
                                          steps_per_epoch=8, **TINY)  # fmt: skip
    circuit_ppo.train(config, tmp_path / "run", progress=False)
    curve = json.loads((tmp_path / "run" / "curve.json").read_text())
    check_served(served, config, set(curve[-1]["cpr_vs_greedy_per_task"]))
    reference = json.loads((tmp_path / circuit_ppo.REFERENCE_CACHE).read_text())[0]["reference"]
    assert set(reference) == set(curve[-1]["cpr_vs_greedy_per_task"])


def test_the_area_reward_works_over_the_zoo_models():
    """``AreaReward`` reads the STOP action and alpha from ``env.unwrapped``: over several models
    that is the model-drawing environment, which must expose them (it did not, and every
    ``reward="area"`` run on the Zoo IDs failed at its first step)."""
    import gymnasium as gym

    env = circuit_ppo.AreaReward(gym.make("CircuitDiscovery-Zoo-Multi-Circuit-v0", model="zoo-train",
                                          pool_size=1, budget=2, batch_size=4, alpha=0.01))  # fmt: skip
    _, info = env.reset(seed=0)
    head = int(info["action_mask"][:-1].argmax())  # a legal head
    _, reward, _, _, info = env.step(head)
    assert reward == pytest.approx(info["faithfulness"] - 0.01)
    _, reward, terminated, _, _ = env.step(env.unwrapped.stop_action)
    assert reward == 0.0 and terminated
