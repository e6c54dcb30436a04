"""Precomputing pools: the serial path and the Ray path write the same cache the envs read."""

import json

import numpy as np
import pytest

from circuit_gym.ablation.cache import SweepCache
from circuit_gym.precompute import plan, precompute


def _files(directory) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted(directory.glob("sweep-*.json"))}


def test_serial_precompute_fills_what_the_env_reads(tmp_path, monkeypatch):
    """An environment built on the precomputed cache sweeps nothing and writes no file: every
    table it serves is one precompute stored, number for number (a precompute that wrote
    under keys the environment never reads would make it sweep here, and fail)."""
    from circuit_gym.ablation.engine import AblationEngine
    from circuit_gym.envs import CircuitDiscoveryEnv
    from circuit_gym.envs.pool import clear_caches

    tasks, pool_size = ("ioi", "docstring"), 2
    cache = SweepCache(tmp_path)
    summary = precompute("tiny", list(tasks), ["train"], pool_size, cache=cache, threads=1, progress=False)
    assert summary["computed"] == 4 and summary["cached_before"] == 0
    written, every_file = _files(tmp_path), sorted(p.name for p in tmp_path.iterdir())
    assert len(written) == len(tasks) * pool_size
    again = precompute("tiny", list(tasks), ["train"], pool_size, cache=cache, threads=1, progress=False)
    assert again["computed"] == 0 and again["cached_before"] == 4

    def no_sweep(*args, **kwargs):
        raise AssertionError("the environment swept a table that precompute should have written")

    for method in ("sweep", "sweep_rows"):
        monkeypatch.setattr(AblationEngine, method, no_sweep)
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path))
    clear_caches()  # no model, pool or general-damage sweep from an earlier test
    try:
        env = CircuitDiscoveryEnv(model="tiny", tasks=tasks, pool_size=pool_size)
        served = {}
        for task in tasks:
            for index in range(pool_size):
                env.reset(options={"task": task, "batch_index": index})
                *_, info = env.step(0)
                served[task, index] = info["per_head_reward"]
    finally:
        clear_caches()  # the pools hold this test's cache directory
    assert sorted(p.name for p in tmp_path.iterdir()) == every_file, "the environment wrote a file"
    assert _files(tmp_path) == written
    # the rewards served are task damage - lam * general damage of the stored payloads
    by_episode = {(f["key"]["task"], f["key"]["seed"]): f["payload"] for f in written.values()}
    assert set(by_episode) == set(served)
    for episode, payload in by_episode.items():
        expected = np.subtract(payload["task_damage"], payload["general_damage"])  # lam = 1
        np.testing.assert_allclose(served[episode], expected, rtol=0, atol=1e-12)


def test_precompute_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown task"):
        plan(["no_such_task"], ["train"], 2)
    with pytest.raises(ValueError, match="split"):
        plan(["ioi"], ["validation"], 2)
    with pytest.raises(ValueError, match="pool size"):
        plan(["ioi"], ["train"], 0)


@pytest.mark.slow
def test_ray_precompute_writes_the_same_tables_as_the_serial_path(tmp_path):
    pytest.importorskip("ray")
    serial, distributed = SweepCache(tmp_path / "serial"), SweepCache(tmp_path / "ray")
    args = (["ioi", "induction"], ["eval"], 3)
    precompute("tiny", *args, cache=serial, threads=1, progress=False)
    summary = precompute(
        "tiny", *args, cache=distributed, threads=1, use_ray=True, ray_workers=2, progress=False
    )
    assert summary["computed"] == 6
    a, b = _files(tmp_path / "serial"), _files(tmp_path / "ray")
    assert a.keys() == b.keys() and len(a) == 6
    assert a == b  # identical keys, checksums and numbers


def test_process_pool_precompute_writes_the_same_tables_as_the_serial_path(tmp_path):
    serial, pooled = SweepCache(tmp_path / "serial"), SweepCache(tmp_path / "pool")
    args = (["ioi", "docstring"], ["eval"], 2)
    precompute("tiny", *args, cache=serial, threads=1, progress=False)
    summary = precompute("tiny", *args, cache=pooled, threads=1, workers=2, progress=False)
    assert summary["computed"] == 4
    a, b = _files(tmp_path / "serial"), _files(tmp_path / "pool")
    assert a.keys() == b.keys() and len(a) == 4
    assert a == b  # identical keys, checksums and numbers
    with pytest.raises(ValueError, match="workers"):
        precompute("tiny", *args, cache=pooled, workers=0, progress=False)
