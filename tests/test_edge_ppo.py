"""The edge PPO (issue 43 item 1): a permutation-equivariant network with masking, a short
training run on the tiny model that writes its files, resumes and forks, the selection rule
(small-circuit area) recomputed from plain patched metrics and, on a planted model, scoring the
true circuit's builder above a random one; environments built on training models and tasks only."""

from __future__ import annotations

import json
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
import torch

from circuit_gym.baselines import edge_ppo
from circuit_gym.baselines.edge_ppo import EdgePPOConfig, EdgePPOPolicy, EdgeScorer, small_circuit_area
from circuit_gym.benchmark import TRANSFER_HELD_OUT_TASKS, TRANSFER_TRAIN_TASKS
from circuit_gym.edges import EdgeCircuit
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking, random_edge_ranking
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


def _plain_f(patcher: EdgePatcher, edges) -> float:
    """f of the circuit keeping ``edges``, from the patcher's metric with no memo: (m(C) - m(empty))
    / (m(full) - m(empty)) written out here."""
    graph = patcher.graph
    m, empty = patcher.metric(
        [EdgeCircuit(frozenset(int(e) for e in edges), graph), EdgeCircuit.empty(graph)]
    )
    return float((m - empty) / (patcher.full_metric - empty))


def _plain_area(patcher: EdgePatcher, ranking: EdgeRanking, size: int) -> float:
    order = ranking.order()[:size]
    return sum(_plain_f(patcher, order[:k]) for k in range(1, size + 1)) / size


def test_training_runs_writes_its_files_resumes_forks_and_scores_the_small_circuit_area(tmp_path):
    config = EdgePPOConfig(**TINY)
    summary = edge_ppo.train(config, tmp_path, progress=False)
    for name in ("policy.pt", "policy_last.pt", "curve.json", "config.json", "checkpoint.pt"):
        assert (tmp_path / name).exists()
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert [p["env_steps"] for p in curve] == [0, 8]
    assert summary["selection_batch_indices"] == [2]
    # the epoch-0 network is the untrained one the reference scored apart (same seed, same shape)
    assert curve[0]["selection_score"] == pytest.approx(curve[0]["untrained_area"], abs=1e-9)

    # the selection score is the mean f of the first 1 .. budget edges of the chosen policy's
    # episode on the held-back batch; EAP-IG's of its own ranking: recomputed from plain metrics
    policy = edge_ppo.load_policy(str(tmp_path))
    env = edge_ppo.make_env(config, config.selection_pool)
    ranking = policy.ranking(env, {"task": "ioi", "batch_index": 2})
    base = edge_ppo.edge_env(env)
    added = len(base.order)
    assert list(ranking.order()[:added]) == base.order
    tail = ranking.order()[added:]  # every other edge by signed EAP-IG
    assert np.all(np.diff(np.asarray(base.state.eap_ig.scores)[tail]) <= 0)
    patcher = base.state.patcher
    best = max(curve, key=lambda p: p["selection_score"])
    assert best["selection_score"] == pytest.approx(_plain_area(patcher, ranking, config.budget), abs=1e-6)
    eap_ig = _plain_area(patcher, base.state.eap_ig, config.budget)
    assert all(p["eap_ig_area"] == pytest.approx(eap_ig, abs=1e-6) for p in curve)
    env.close()

    extended = edge_ppo.train(replace(config, epochs=2), tmp_path, progress=False)
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert [p["env_steps"] for p in curve] == [0, 8, 16] and extended["resumed_after_epochs"] == 1
    assert np.isfinite([p["selection_score"] for p in curve]).all()

    # a fork goes on from the last epoch's training state with its selection afresh
    fork = tmp_path / "fork"
    edge_ppo.fork_run(tmp_path, fork)
    with pytest.raises(FileExistsError):
        edge_ppo.fork_run(tmp_path, fork)
    forked = edge_ppo.train(replace(config, epochs=3), fork, progress=False)
    curve = json.loads((fork / "curve.json").read_text())
    assert [p["env_steps"] for p in curve] == [16, 24] and forked["resumed_after_epochs"] == 2
    # its first row scores the source's last network (same rule, same batches, deterministic policy)
    source = json.loads((tmp_path / "curve.json").read_text())
    assert curve[0]["selection_score"] == pytest.approx(source[-1]["selection_score"], abs=1e-9)


def test_small_circuit_area_is_the_mean_f_of_the_orders_prefixes():
    truth = frozenset({3, 5})

    def recall(edges: frozenset[int]) -> float:  # f: the share of the truth kept
        return len(edges & truth) / len(truth)

    assert small_circuit_area(recall, [3, 5, 9, 1]) == pytest.approx((0.5 + 1 + 1 + 1) / 4)
    assert small_circuit_area(recall, [9, 1, 3, 5]) == pytest.approx((0 + 0 + 0.5 + 1) / 4)
    with pytest.raises(ValueError):
        small_circuit_area(recall, [])


def test_selection_scores_the_planted_truth_builder_above_random_edges():
    """On a planted model whose induction circuit is known edge by edge, a ranking that builds the
    truth first scores a small-circuit area near its f, random edges near 0."""
    from circuit_gym.models.planted import PLANTED_TASKS, make_planted_model

    planted = make_planted_model(0, version=3)
    task = PLANTED_TASKS["induction"]
    patcher = EdgePatcher.for_task(
        planted.model, task, task.batch(planted.model, "train", 8, seed=0), "resample"
    )
    graph = patcher.graph
    truth = [graph.names.index(e) for e in sorted(planted.truth.edges("induction"))]
    size = 2 * len(truth)
    f_truth = _plain_f(patcher, truth)
    assert f_truth > 0.9  # the planted truth carries the task (the generator's own tests check more)

    rng = np.random.default_rng(0)
    scores = rng.uniform(0, 1, graph.n_edges)
    scores[truth] += 2.0  # the truth's edges first, in any order, then random ones
    builder = EdgeRanking.from_array(scores, "truth_first", graph)

    def f(edges: frozenset[int]) -> float:
        return _plain_f(patcher, edges)

    truth_area = edge_ppo.ranking_area(f, builder, size)
    random_areas = [edge_ppo.ranking_area(f, random_edge_ranking(graph, seed), size) for seed in range(2)]
    # from the 4th edge on the truth circuit is complete: at least half of the 8 sizes score f_truth
    assert truth_area >= 0.5 * f_truth - 0.05
    assert max(abs(a) for a in random_areas) < 0.1
    assert truth_area > max(random_areas) + 0.3


def test_an_untrained_network_adds_an_edge_before_it_stops():
    """STOP starts below every candidate, so an untrained deterministic policy builds a circuit."""
    for seed in range(5):
        torch.manual_seed(seed)
        policy = EdgePPOPolicy(EdgeScorer(hidden=16))
        obs = np.random.default_rng(seed).uniform(-1, 1, (32, len(EDGE_COLUMNS))).astype(np.float32)
        assert policy.act(obs, np.ones(33, dtype=np.int8)) < 32
