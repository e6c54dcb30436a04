"""The edge-building environment (issue 43): Gymnasium's contract, faithfulness checked against
plain TransformerLens hooks (the edge patching test's independent implementation), rewards that
add up to the objective, candidates in |EAP-IG| order, and the registry's edge IDs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from test_edges_patching import hook_patched_metric

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym.edges import EdgeGraph
from circuit_gym.envs.edge_building import EDGE_COLUMNS, EdgeBuildingEnv, setup_passes
from circuit_gym.envs.registration import EDGE_EPISODE_STEPS, env_ids
from circuit_gym.tasks import get_task

K = 24


@pytest.fixture(scope="module")
def env():
    e = EdgeBuildingEnv(model="tiny", tasks=("ioi",), candidates=K, budget=10, pool_size=4, batch_size=4)
    yield e
    e.close()


def test_gymnasiums_checker_passes():
    e = EdgeBuildingEnv(model="tiny", tasks=("ioi",), candidates=8, budget=4, pool_size=2, batch_size=4)
    check_env(e, skip_render_check=True)


def test_faithfulness_is_the_plain_hook_patched_metric_and_rewards_add_up(env):
    obs, info = env.reset(seed=3)
    state = env.state
    rng = np.random.default_rng(0)
    total = 0.0
    for action in rng.choice(K, size=6, replace=False):
        obs, reward, terminated, _, info = env.step(int(action))
        total += reward
    kept = {env.graph.names[e] for e in env.circuit.edges}
    assert len(kept) == info["circuit_size"] == 6
    episode = env._pools.get("ioi").episode(info["batch_index"])
    task, batch = get_task("ioi"), episode.batch
    m_c = hook_patched_metric(env.model, task, batch, env.ablation, kept)
    m_empty = hook_patched_metric(env.model, task, batch, env.ablation, set())
    m_full = hook_patched_metric(env.model, task, batch, env.ablation, set(env.graph.names))
    expected = (m_c - m_empty) / (m_full - m_empty)
    assert info["faithfulness"] == pytest.approx(expected, abs=1e-4)
    assert total == pytest.approx(info["faithfulness"] - env.alpha * 6, abs=1e-9)  # J(final) - J(empty)
    assert state.full_metric == pytest.approx(m_full, abs=1e-4)
    assert obs[0, EDGE_COLUMNS.index("faithfulness")] == pytest.approx(info["faithfulness"], abs=1e-6)


def test_candidates_are_the_largest_eap_ig_edges_in_order(env):
    _, info = env.reset(seed=1)
    scores = np.abs(env.state.eap_ig.scores)
    chosen = env.state.candidates
    assert list(chosen) == [env.graph.index[n] for n in info["candidate_edges"]]
    assert np.all(np.diff(scores[chosen]) <= 0)
    assert scores[chosen].min() >= np.delete(scores, chosen).max()  # no edge outside beats one inside
    obs = env._obs()
    np.testing.assert_allclose(
        np.abs(obs[:, EDGE_COLUMNS.index("eap_ig")]), scores[chosen] / scores[chosen[0]], rtol=1e-5
    )


def test_static_columns_describe_the_edge(env):
    env.reset(seed=2)
    obs = env._obs()
    for row, edge in enumerate(env.state.candidates):
        name = env.graph.names[int(edge)]
        sender, receiver = name.split("->")
        port = receiver[-2] if receiver.endswith(">") else "logits"
        ports = obs[row, 2:6]
        assert ports[{"q": 0, "k": 1, "v": 2, "logits": 3}[port]] == 1 and ports.sum() == 1
        assert obs[row, EDGE_COLUMNS.index("from_input")] == (sender == "input")
        if sender != "input":
            assert obs[row, 0] == pytest.approx(
                (int(sender[1 : sender.index(".")]) + 1) / (env.graph.n_layers + 1)
            )


def test_masked_actions_are_noops_and_stop_ends(env):
    env.reset(seed=0)
    _, r1, _, _, info = env.step(0)
    _, r2, _, _, info2 = env.step(0)  # already in the circuit
    assert r2 == 0.0 and info2["circuit_size"] == info["circuit_size"] == 1
    assert not info2["action_mask"][0] and info2["action_mask"][K]
    _, r, terminated, _, _ = env.step(K)
    assert terminated and r == 0.0
    with pytest.raises(gym.error.ResetNeeded):
        env.step(1)


def test_cutting_from_every_edge_starts_at_one_and_passes_are_counted():
    e = EdgeBuildingEnv(model="tiny", tasks=("ioi",), candidates=EdgeGraph(4, 4).n_edges, start="candidates",
                        budget=3, pool_size=2, batch_size=4)  # fmt: skip
    _, info = e.reset(seed=0)
    assert info["faithfulness"] == pytest.approx(1.0, abs=1e-6)  # every edge kept: the clean model
    assert info["forward_passes"] == setup_passes(e.ablation) + 1
    _, _, _, _, info = e.step(0)
    assert info["circuit_size"] == e.k - 1 and info["forward_passes"] == setup_passes(e.ablation) + 2


def test_the_episode_is_a_ranking_with_its_insertion_order_first(env):
    env.reset(seed=4)
    for action in (5, 2, 9):
        env.step(action)
    order = env.ranking().order()
    assert list(order[:3]) == env.order
    rest = [e for e in env.state.eap_ig.order() if e not in set(env.order)]  # then EAP-IG's signed order
    assert list(order[3:]) == rest


def test_bad_arguments_are_refused():
    for kwargs in ({"candidates": 0}, {"start": "full"}, {"alpha": -1.0}, {"budget": True}):
        with pytest.raises(ValueError):
            EdgeBuildingEnv(model="tiny", tasks=("ioi",), **kwargs)


def test_registry_has_edge_ids_of_every_family_and_the_stated_episode_bound():
    assert EdgeGraph(12, 12).n_edges == EDGE_EPISODE_STEPS
    ids = env_ids()
    for family in ("edges", "zoo-edges", "planted-edges"):
        assert env_ids(family=family), family
    assert "CircuitDiscovery-Toy-IOI-Edges-v0" in ids and "CircuitDiscovery-Zoo-IOI-Edges-v0" in ids


@pytest.mark.slow
@pytest.mark.parametrize(
    "env_id", ["CircuitDiscovery-Zoo-IOI-Edges-v0", "CircuitDiscovery-Planted-Induction-Edges-v0"]
)
def test_model_drawing_edge_ids_play_an_episode(env_id):
    e = gym.make(env_id, candidates=32, budget=4, pool_size=2)
    obs, info = e.reset(seed=0)
    assert obs.shape == (32, len(EDGE_COLUMNS)) and "model" in info
    obs, reward, terminated, truncated, info = e.step(0)
    assert np.isfinite(reward) and info["circuit_size"] == 1
    e.close()
