"""Greedy search with its candidates on Ray actors (issue 22 item 2): the same episodes as the
one-process GreedySearch, on the 4 x 4 model."""

import sys

import gymnasium as gym
import numpy as np
import pytest
from test_circuit_envs import IOI, TINY

from circuit_gym.baselines import circuit_ray
from circuit_gym.baselines.circuit_ray import RayGreedySearch, lowest_ablated_layer, split_for_workers
from circuit_gym.baselines.circuit_solvers import GreedySearch, play_episode
from circuit_gym.envs.pool import clear_caches


def test_ray_missing_is_a_clear_value_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ValueError, match=r"pip install 'circuit-gym\[ray\]'"):
        RayGreedySearch(2)
    with pytest.raises(ValueError, match=r"pip install 'circuit-gym\[ray\]'"):
        circuit_ray.ray_greedy_solver(2)


def test_split_keeps_each_share_on_its_serial_chunks_first_layer():
    # 2 layers x 2 heads; {0, 1, 2} ablates only layer 1, the others layer 0
    sets = [
        frozenset({0, 1, 2}),
        frozenset({0, 2}),
        frozenset({1, 2}),
        frozenset({0, 1, 3}),
        frozenset(range(4)),
    ]
    assert [lowest_ablated_layer(s, 2, 2) for s in sets] == [1, 0, 0, 1, 2]
    groups = split_for_workers(sets, 2, per_pass=10, n_layers=2, n_heads=2)
    got = sorted((idx, run) for g in groups for idx, run in g)
    assert got == sorted([
        ([4], [sets[4]]),  # every head: no pass
        ([0, 1], [sets[0], sets[1]]),
        ([2, 3], [sets[2], sets[3]]),
    ])  # fmt: skip
    # one chunk per serial pass; a share starting above its chunk's layer carries an anchor
    groups = split_for_workers(sets[:4], 2, per_pass=2, n_layers=2, n_heads=2)
    shares = sorted((idx, run) for g in groups for idx, run in g)
    assert shares == [
        ([0], [sets[0], sets[1]]),
        ([1], [sets[1]]),
        ([2], [sets[2]]),
        ([3], [sets[3], sets[2]]),
    ]


def _greedy_steps(env, solver, task: str, index: int) -> tuple[dict, list[np.ndarray]]:
    """One episode, with the gain table of every step."""
    steps: list[np.ndarray] = []
    act = solver.act

    def recording(base, obs, info):
        action = act(base, obs, info)
        steps.append(solver._last.copy())
        return action

    solver.act = recording
    clear_caches()  # nothing memoised from an earlier episode: every table is computed
    return play_episode(env, solver, task, index), steps


@pytest.mark.slow
def test_ray_greedy_plays_the_same_episodes_as_greedy_search():
    pytest.importorskip("ray")
    settings = dict(**TINY, budget=6, alpha=0.0, oracle_info=False)
    solver = RayGreedySearch(2)
    try:
        for index in (1, 2):  # the actors reset to each batch: a wrong one would give other numbers
            ray_row, ray_steps = _greedy_steps(gym.make(IOI, **settings), solver, "ioi", index)
            row, steps = _greedy_steps(gym.make(IOI, **settings), GreedySearch(), "ioi", index)
            assert ray_row["order"] == row["order"] and len(row["order"]) == 6
            assert ray_row["forward_passes"] == row["forward_passes"]
            assert ray_row["faithfulness"] == row["faithfulness"]
            assert len(ray_steps) == len(steps)
            for a, b in zip(ray_steps, steps, strict=True):
                np.testing.assert_array_equal(a, b)  # bit for bit, NaN layout included
            if index == 1:
                first = steps[0]
        assert not np.allclose(first, steps[0], equal_nan=True)  # batches 1 and 2 differ
        assert solver.pool is not None and solver.pool.started_here
    finally:
        solver.close()
    import ray

    assert not ray.is_initialized()  # started here, so shut down here
