"""The one PPO trainer (circuit_gym/baselines/ppo_trainer.py): the same training numbers and the same policy
outputs as the two trainers it replaced, recorded with their code (tests/fixtures/trainer_reference)."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from circuit_gym.baselines import circuit_ppo, ppo
from circuit_gym.baselines.ppo_trainer import PolicyAdapter

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "trainer_reference"


def recorded_runs():
    spec = importlib.util.spec_from_file_location("trainer_reference", FIXTURE / "record.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_same_parameters(a: Path, b: Path) -> None:
    x, y = torch.load(a, weights_only=True), torch.load(b, weights_only=True)
    assert x.keys() == y.keys()
    for k in x:
        assert torch.equal(x[k], y[k]), k


def test_single_head_training_reproduces_the_old_trainer_bit_for_bit(tmp_path):
    run = recorded_runs()
    config = ppo.PPOConfig(**run.SINGLE_HEAD)
    summary = ppo.train(config, tmp_path, progress=False)
    for name in ("policy.pt", "policy_last.pt"):
        assert_same_parameters(tmp_path / name, FIXTURE / "single_head" / name)
    old = json.loads((FIXTURE / "single_head" / "curve.json").read_text())
    new = json.loads((tmp_path / "curve.json").read_text())
    # every score equal; env_steps now counts the epoch's last collection too (the old loop
    # read it before that collection: 32 and 96 for 64 and 128 steps)
    assert [{k: v for k, v in p.items() if k != "env_steps"} for p in new] == [
        {k: v for k, v in p.items() if k != "env_steps"} for p in old
    ]
    assert [p["env_steps"] for p in new] == [0, 64, 128] and [p["env_steps"] for p in old] == [0, 32, 96]
    assert summary["best_selection_recovery"] == max(p["selection_recovery"] for p in old)
    assert len(list((tmp_path / "tensorboard").iterdir())) == 1


def test_circuit_training_reproduces_the_old_trainer_bit_for_bit(tmp_path):
    run = recorded_runs()
    config = circuit_ppo.CircuitPPOConfig(**run.CIRCUIT)
    circuit_ppo.train(config, tmp_path / "run", progress=False)
    for name in ("policy.pt", "policy_last.pt"):
        assert_same_parameters(tmp_path / "run" / name, FIXTURE / "circuit" / name)
    assert json.loads((tmp_path / "run" / "curve.json").read_text()) == json.loads(
        (FIXTURE / "circuit" / "curve.json").read_text()
    )


def test_single_head_runs_resume_and_refuse_another_configuration(tmp_path):
    """The single-head PPO gains the circuit PPO's resume: a 1-epoch run extended to 2 epochs."""
    run = recorded_runs()
    config = replace(ppo.PPOConfig(**run.SINGLE_HEAD), epochs=1)
    ppo.train(config, tmp_path, progress=False)
    with pytest.raises(ValueError, match="lr"):
        ppo.train(replace(config, lr=0.5, epochs=2), tmp_path, progress=False)
    summary = ppo.train(replace(config, epochs=2), tmp_path, progress=False)
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert [p["env_steps"] for p in curve] == [0, 64, 128] and summary["resumed_after_epochs"] == 1
    assert ppo.train(replace(config, epochs=2), tmp_path, progress=False) == summary  # finished: left as is


# ------------------------------------------------------------ the committed checkpoints
@pytest.fixture(scope="module")
def recorded_outputs():
    return dict(np.load(FIXTURE / "adapter_outputs.npz"))


def test_committed_single_head_checkpoint_ranks_bit_identically(recorded_outputs):
    policy = ppo.load_policy(str(ROOT / "docs/results/ppo"))
    for obs, expected in zip(
        recorded_outputs["single_obs"], recorded_outputs["single_rank_heads"], strict=True
    ):
        np.testing.assert_array_equal(policy.rank_heads(obs), expected)


def test_committed_circuit_checkpoint_acts_and_ranks_bit_identically(recorded_outputs):
    policy = circuit_ppo.load_policy(str(ROOT / "docs/results/circuit/ppo"))
    solver = circuit_ppo.CircuitPPOSolver.load(ROOT / "docs/results/circuit/ppo")
    r = recorded_outputs
    env = SimpleNamespace(n_total=r["circuit_obs"].shape[1])
    for i, obs in enumerate(r["circuit_obs"]):
        assert policy.act(obs, r["circuit_mask"][i]) == r["circuit_act"][i]
        np.testing.assert_array_equal(policy.rank_heads(obs), r["circuit_rank_heads"][i])
        np.testing.assert_array_equal(
            solver.scores(env, obs, {"action_mask": r["circuit_mask"][i]}), r["circuit_scores"][i]
        )
        assert solver.act(env, obs, {"action_mask": r["circuit_mask"][i]}) == r["circuit_act"][i]
    assert len(set(r["circuit_act"].tolist())) > 3  # the episodes exercise more than one action


def test_adapter_ranks_taken_heads_last_and_keeps_the_network_mode():
    torch.manual_seed(0)
    net = ppo.HeadScorer(hidden=16).train()
    obs = torch.rand(16, 12).numpy()
    obs[:, 10] = 0
    obs[[2, 7], 10] = 1
    scores = PolicyAdapter(net, taken_column=10).rank_heads(obs)
    assert np.isfinite(scores).all() and set(np.argsort(scores)[:2]) == {2, 7}
    assert scores[[2, 7]].max() < np.delete(scores, [2, 7]).min()
    assert net.training  # scored in evaluation mode, then restored
