"""The fast paths give the plain paths' numbers bit for bit (issue 32).

``CircuitRunner``'s masked replay (shared prefixes, only kept heads computed:
``circuit_gym.ablation.masked_replay``) against its plain stacked pass, on the 4 x 4 model for
every ablation kind and on the 144-head embedded model; greedy circuit search's episodes (its
insertion order, faithfulness, CPR / CMD and passes) under both replays, each in a fresh
process so that no memo is shared.

Both paths run here, on one machine, so bit for bit is asked of their kernels only, never of
numbers recorded elsewhere; the two tests that compare them carry the ``numerics`` marker and
run again under portable kernels and one thread (`make test`, issue 47)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import circuit_gym.circuits.runner as runner_module
from circuit_gym.circuits import Circuit, CircuitRunner, random_rankings
from circuit_gym.circuits.curve import circuit_sizes
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task


def _both(runner: CircuitRunner, circuits: list[Circuit]) -> tuple[np.ndarray, np.ndarray]:
    masked = CircuitRunner(runner.engine, "masked").metric_rows(circuits)
    plain = CircuitRunner(runner.engine, "plain").metric_rows(circuits)
    return masked, plain


def _mixed_circuits(n_layers: int, n_heads: int, seed: int) -> list[Circuit]:
    """Greedy candidates of a small circuit, curve circuits of random rankings, random masks of
    every density, a circuit that leaves the first layers whole, duplicates."""
    rng = np.random.default_rng(seed)
    n = n_layers * n_heads
    base = [int(h) for h in rng.choice(n, 3, replace=False)]
    out = [Circuit.of([*base, h], n_layers, n_heads) for h in range(n) if h not in base]
    for ranking in random_rankings(n_layers, n_heads, 2, seed):
        out += [ranking.top(k, absolute) for k in circuit_sizes(n) for absolute in (False, True)]
    out += [Circuit.of(np.flatnonzero(rng.random(n) < p), n_layers, n_heads) for p in (0.1, 0.5, 0.9)]
    out.append(Circuit.of(range(2 * n_heads, n), n_layers, n_heads).without(n - 1))  # starts late
    out += [Circuit.empty(n_layers, n_heads), out[0]]
    return out


@pytest.mark.numerics
@pytest.mark.parametrize("kind", ["resample", "mean", "zero"])
def test_masked_replay_equals_the_plain_pass_bit_for_bit(tiny_model, kind):
    task = get_task("ioi")
    runner = CircuitRunner.for_task(tiny_model, task, task.batch(tiny_model, "test", 5, seed=1), kind)
    assert runner.engine._fast is not None  # the replay the masked path needs
    masked, plain = _both(runner, _mixed_circuits(4, 4, seed=3))
    assert np.array_equal(masked, plain)


@pytest.mark.numerics
def test_masked_replay_on_the_144_head_model_is_bit_identical():
    model = load_model("toy")
    task = get_task("docstring")
    runner = CircuitRunner.for_task(model, task, task.batch(model, "test", 4, seed=0))
    masked, plain = _both(runner, _mixed_circuits(12, 12, seed=0))
    assert np.array_equal(masked, plain)


def test_the_replay_switch_is_checked_and_read_at_each_call(tiny_model, monkeypatch):
    task = get_task("ioi")
    runner = CircuitRunner.for_task(tiny_model, task, task.batch(tiny_model, "test", 3, seed=0))
    with pytest.raises(ValueError, match="replay must be one of"):
        CircuitRunner(runner.engine, "fast")
    calls = []
    real = runner_module.replay_masks
    monkeypatch.setattr(runner_module, "replay_masks", lambda *a: calls.append(1) or real(*a))
    circuits = [Circuit.of([1, 5], 4, 4)]
    monkeypatch.setenv(runner_module.REPLAY_ENV_VAR, "plain")
    runner.metric(circuits)
    assert calls == []
    monkeypatch.setenv(runner_module.REPLAY_ENV_VAR, "masked")
    runner.metric(circuits)
    assert calls == [1]
    monkeypatch.setenv(runner_module.REPLAY_ENV_VAR, "typo")
    with pytest.raises(ValueError, match="replay must be one of"):
        runner.metric(circuits)


def _greedy_episodes(replay: str) -> list[dict]:
    """Greedy search's per-episode rows on the 4 x 4 model, in this (fresh) process."""
    import os

    os.environ[runner_module.REPLAY_ENV_VAR] = replay
    from circuit_gym.baselines.circuit_solvers import GreedySearch, circuit_track

    result = circuit_track("tiny", ["ioi"], "test", range(2), {"greedy_search": GreedySearch},
                           budget=5, alpha=0.0, batch_size=4, n_random=2)  # fmt: skip
    return result["episodes"]


def test_greedy_search_episodes_are_identical_under_both_replays():
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        masked = pool.submit(_greedy_episodes, "masked").result()
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        plain = pool.submit(_greedy_episodes, "plain").result()
    assert [len(r["order"]) for r in masked] == [5, 5]  # alpha 0: every step adds a head
    assert masked == plain  # insertion order, faithfulness, CPR / CMD, curves and passes, exactly
