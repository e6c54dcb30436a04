"""The edge PPO (issue 43 item 1): a permutation-equivariant network with masking, a short
training run on the tiny model that writes its files and resumes, selection scored with the edge
curve against an independent CPR, and environments built on training models and tasks only."""

from __future__ import annotations

import json
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
import torch

from circuit_gym.baselines import edge_ppo
from circuit_gym.baselines.edge_ppo import EdgePPOConfig, EdgePPOPolicy, EdgeScorer
from circuit_gym.benchmark import TRANSFER_HELD_OUT_TASKS, TRANSFER_TRAIN_TASKS
from circuit_gym.edges.curve import edge_batch_scores
from circuit_gym.embedded import ZOO_HELD_OUT, ZOO_TRAIN
from circuit_gym.envs.edge_building import EDGE_COLUMNS

TINY = dict(env_id="CircuitDiscovery-Toy-IOI-Edges-v0", model="tiny", candidates=12, budget=3, pool_size=2,
            selection_episodes=1, batch_size_prompts=4, n_envs=1, epochs=1, steps_per_epoch=8,
            steps_per_collect=8, minibatch=8, repeat=1, hidden=16)  # fmt: skip


def test_candidate_logits_follow_a_permutation_of_the_rows_and_stop_and_value_do_not():
    torch.manual_seed(0)
    net = EdgeScorer(hidden=16)
    obs = torch.randn(3, 20, len(EDGE_COLUMNS))
    perm = torch.randperm(20)
    logits, permuted = net.logits(obs), net.logits(obs[:, perm])
    torch.testing.assert_close(permuted[:, :20], logits[:, :20][:, perm], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(permuted[:, 20], logits[:, 20], atol=1e-6, rtol=1e-5)  # STOP
    torch.testing.assert_close(net.state_value(obs[:, perm]), net.state_value(obs), atol=1e-6, rtol=1e-5)
    # a row's logit depends on the other rows (through the pooled summary), not on its own alone
    changed = obs.clone()
    changed[:, 1:] += 1.0
    assert not torch.allclose(net.logits(changed)[:, 0], logits[:, 0])


def test_masked_actions_get_minus_1e9_and_are_never_chosen():
    net = EdgeScorer(hidden=8)
    obs = torch.randn(2, 6, len(EDGE_COLUMNS))
    mask = torch.tensor([[1, 0, 1, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0, 1]])
    out = net.logits(obs, mask)
    assert torch.all(out[mask == 0] == -1e9)
    torch.testing.assert_close(out[mask == 1], net.logits(obs)[mask == 1])
    policy = EdgePPOPolicy(net)
    assert policy.act(obs[1].numpy(), mask[1].numpy()) == 6  # only STOP is legal


def test_config_refuses_held_out_models_and_other_splits():
    assert EdgePPOConfig().models() == ZOO_TRAIN
    for model in (*ZOO_HELD_OUT, "zoo", "zoo-held-out"):
        with pytest.raises(ValueError, match="trains on"):
            EdgePPOConfig(model=model)
    for split in ("eval", "test"):
        with pytest.raises(ValueError, match="train split"):
            EdgePPOConfig(split=split)


def test_default_environments_are_the_training_models_on_the_training_tasks(monkeypatch):
    """What the default recipe asks gym.make for (intercepted: building the zoo takes a minute):
    the zoo's training members, train split, and an ID whose tasks are the training tasks."""
    calls = []

    def fake_make(env_id, **kwargs):
        calls.append((env_id, kwargs))
        raise LookupError("intercepted")

    monkeypatch.setattr(gym, "make", fake_make)
    config = EdgePPOConfig()
    for build in (lambda: edge_ppo.make_training_env(config, 0), lambda: edge_ppo.selection(config, None, None),
                  lambda: edge_ppo.warm_up(config, False)):  # fmt: skip
        with pytest.raises(LookupError):
            build()
    monkeypatch.undo()
    assert len(calls) == 3
    for env_id, kwargs in calls:
        assert tuple(kwargs["model"]) == ZOO_TRAIN and kwargs["split"] == "train"
        tasks = gym.spec(env_id).kwargs["tasks"]
        assert set(tasks) == set(TRANSFER_TRAIN_TASKS) and not set(tasks) & set(TRANSFER_HELD_OUT_TASKS)


def test_an_id_with_a_held_out_task_is_refused():
    config = EdgePPOConfig(**{**TINY, "env_id": "CircuitDiscovery-Toy-Multi-Edges-v0"})
    edge_ppo.make_env(config).close()  # the training tasks: accepted
    with pytest.raises(ValueError, match="outside the training tasks"):
        edge_ppo.make_env(replace(config, env_id="CircuitDiscovery-Toy-Brackets-Edges-v0"))


def test_training_batches_are_the_first_of_the_pool():
    env = edge_ppo.make_training_env(EdgePPOConfig(**{**TINY, "pool_size": 2, "selection_episodes": 3}), 0)
    seen = {env.reset(seed=s)[1]["batch_index"] for s in range(12)}
    assert seen == {0, 1}
    env.close()


def test_training_runs_writes_its_files_resumes_and_scores_with_the_edge_curve(tmp_path):
    config = EdgePPOConfig(**TINY)
    summary = edge_ppo.train(config, tmp_path, progress=False)
    for name in ("policy.pt", "policy_last.pt", "curve.json", "config.json", "checkpoint.pt"):
        assert (tmp_path / name).exists()
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert [p["env_steps"] for p in curve] == [0, 8]
    assert summary["selection_batch_indices"] == [2]

    # the selection score is the mean edge CPR of the chosen policy's episode on the held-back batch,
    # EAP-IG's the CPR of its own ranking there: recomputed with the curve module's scores
    policy = edge_ppo.load_policy(str(tmp_path))
    env = edge_ppo.make_env(config, config.selection_pool)
    ranking = policy.ranking(env, {"task": "ioi", "batch_index": 2})
    base = edge_ppo.edge_env(env)
    added = len(base.order)
    assert list(ranking.order()[:added]) == base.order
    tail = ranking.order()[added:]  # every other edge by signed EAP-IG
    assert np.all(np.diff(np.asarray(base.state.eap_ig.scores)[tail]) <= 0)
    best = max(curve, key=lambda p: p["selection_score"])
    assert best["selection_score"] == pytest.approx(
        edge_batch_scores(base.state.patcher, ranking)["cpr"], abs=1e-9
    )
    eap_ig = edge_batch_scores(base.state.patcher, base.state.eap_ig)["cpr"]
    assert all(p["eap_ig_cpr"] == pytest.approx(eap_ig, abs=1e-9) for p in curve)
    env.close()

    extended = edge_ppo.train(replace(config, epochs=2), tmp_path, progress=False)
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert [p["env_steps"] for p in curve] == [0, 8, 16] and extended["resumed_after_epochs"] == 1
    assert np.isfinite([p["selection_score"] for p in curve]).all()


def test_an_untrained_network_adds_an_edge_before_it_stops():
    """STOP starts below every candidate, so an untrained deterministic policy builds a circuit."""
    for seed in range(5):
        torch.manual_seed(seed)
        policy = EdgePPOPolicy(EdgeScorer(hidden=16))
        obs = np.random.default_rng(seed).uniform(-1, 1, (32, len(EDGE_COLUMNS))).astype(np.float32)
        assert policy.act(obs, np.ones(33, dtype=np.int8)) < 32
