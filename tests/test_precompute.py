"""Precomputing pools: the serial path and the Ray path write the same cache the envs read."""

import json

import numpy as np
import pytest

from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.tables import sweep_table
from circuit_gym.precompute import plan, precompute
from circuit_gym.tasks import get_task
from circuit_gym.tasks.reference import reference_batch


def _files(directory) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted(directory.glob("sweep-*.json"))}


def test_serial_precompute_fills_what_the_env_reads(tiny_model, tmp_path):
    cache = SweepCache(tmp_path)
    summary = precompute("tiny", ["ioi", "docstring"], ["train"], 2, cache=cache, threads=1, progress=False)
    assert summary["computed"] == 4 and summary["cached_before"] == 0
    assert len(_files(tmp_path)) == 4
    again = precompute("tiny", ["ioi", "docstring"], ["train"], 2, cache=cache, threads=1, progress=False)
    assert again["computed"] == 0 and again["cached_before"] == 4
    # the cached table is the one a live sweep of the env's batch gives
    task = get_task("ioi")
    batch = task.batch(tiny_model, "train", 8, seed=1)
    ref = reference_batch(tiny_model)
    cached = sweep_table(tiny_model, task, batch, ref, ablation="resample", cache=cache)
    live = sweep_table(tiny_model, task, batch, ref, ablation="resample", cache=None)
    np.testing.assert_allclose(cached.reward, live.reward, atol=1e-6)


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
