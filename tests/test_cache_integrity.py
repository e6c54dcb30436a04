"""The sweep cache serves no stale or forged table: metrics keyed by what they compute,
entries authenticated with a secret kept outside the cache (issue 23, items 3 and 5)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import circuit_gym.ablation.tables as tables
from circuit_gym.ablation.cache import SweepCache, key_path
from circuit_gym.ablation.fingerprint import fingerprint
from circuit_gym.ablation.tables import sweep_key, sweep_table
from circuit_gym.tasks import get_task, logit_diff
from circuit_gym.tasks.reference import reference_batch


@pytest.fixture(scope="module")
def ioi(tiny_model):
    task = get_task("ioi")
    return task, task.batch(tiny_model, "train", 4, seed=0), reference_batch(tiny_model)


def _key(tiny_model, ioi, metric) -> dict:
    task, batch, ref = ioi
    return sweep_key(tiny_model, dataclasses.replace(task, metric=metric), batch, ref, "zero")


def test_two_lambdas_with_one_name_get_two_keys_and_two_tables(tiny_model, ioi, tmp_path):
    """The notebook case of issue 23: re-registering a task with the negated metric (another
    lambda) must not be served the first lambda's table."""
    task, batch, ref = ioi
    cache = SweepCache(tmp_path)
    first = dataclasses.replace(task, metric=lambda logits, b: logit_diff(logits, b))
    negated = dataclasses.replace(task, metric=lambda logits, b: -logit_diff(logits, b))
    assert first.metric.__qualname__ == negated.metric.__qualname__
    a = sweep_table(tiny_model, first, batch, ref, cache=cache)
    b = sweep_table(tiny_model, negated, batch, ref, cache=cache)
    live = sweep_table(tiny_model, negated, batch, ref, cache=None)
    assert len(list(tmp_path.glob("sweep-*.json"))) == 2
    np.testing.assert_allclose(b.task_damage, live.task_damage, atol=1e-6)
    np.testing.assert_allclose(b.task_damage, -a.task_damage, atol=1e-5)
    assert np.abs(a.task_damage).max() > 1e-3  # a sign flip is visible


def test_closures_are_keyed_by_their_cell_values(tiny_model, ioi):
    def scaled(scale):
        return lambda logits, b: scale * logit_diff(logits, b)

    assert _key(tiny_model, ioi, scaled(1.0)) == _key(tiny_model, ioi, scaled(1.0))
    assert _key(tiny_model, ioi, scaled(1.0)) != _key(tiny_model, ioi, scaled(2.0))


def _define(source: str):
    """A function ``metric`` defined from ``source``, as a notebook cell re-run would."""
    namespace = {"logit_diff": logit_diff}
    exec(compile(source, "<cell>", "exec"), namespace)
    return namespace["metric"]


def test_an_edited_function_or_helper_gets_a_new_key(tiny_model, ioi):
    v1 = _define("def metric(logits, b):\n    return logit_diff(logits, b)\n")
    v1_again = _define("def metric(logits, b):\n    return logit_diff(logits, b)\n")
    v2 = _define("def metric(logits, b):\n    return logit_diff(logits, b) * 0.5\n")
    default = _define("def metric(logits, b, k=1.0):\n    return k * logit_diff(logits, b)\n")
    other_default = _define("def metric(logits, b, k=3.0):\n    return k * logit_diff(logits, b)\n")
    assert v1.__qualname__ == v2.__qualname__ == "metric"
    assert _key(tiny_model, ioi, v1) == _key(tiny_model, ioi, v1_again)
    assert _key(tiny_model, ioi, v1) != _key(tiny_model, ioi, v2)
    assert _key(tiny_model, ioi, default) != _key(tiny_model, ioi, other_default)
    # the metric's code is unchanged, the helper it calls is edited
    helper_cell = "def helper(logits, b):\n    return logit_diff(logits, b){}\n"
    metric_cell = "def metric(logits, b):\n    return helper(logits, b)\n"
    keys = []
    for edit in ("", " + 1.0"):
        namespace = {"logit_diff": logit_diff}
        exec(compile(helper_cell.format(edit) + metric_cell, "<cell>", "exec"), namespace)
        keys.append(_key(tiny_model, ioi, namespace["metric"]))
    assert keys[0] != keys[1]


class ScaledDiff:
    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __call__(self, logits, b):
        return self.scale * logit_diff(logits, b)


class ShiftedDiff(ScaledDiff):
    def __call__(self, logits, b):
        return self.scale * logit_diff(logits, b) + 1.0


def test_callable_objects_are_keyed_by_class_code_and_state(tiny_model, ioi):
    assert _key(tiny_model, ioi, ScaledDiff(1.0)) == _key(tiny_model, ioi, ScaledDiff(1.0))
    assert _key(tiny_model, ioi, ScaledDiff(1.0)) != _key(tiny_model, ioi, ScaledDiff(2.0))
    assert _key(tiny_model, ioi, ScaledDiff(1.0)) != _key(tiny_model, ioi, ShiftedDiff(1.0))


def test_the_builtin_metrics_fingerprint_the_same_in_another_process():
    """Keys must not depend on the process (hash randomisation, ids): or no cache is ever reused."""
    code = "from circuit_gym.tasks import get_task; from circuit_gym.ablation.fingerprint import fingerprint; " \
           "print(fingerprint(get_task('ioi').metric), fingerprint(get_task('greater_than').metric))"  # fmt: skip
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.split()  # fmt: skip
        for seed in ("1", "2")
    ]
    here = [fingerprint(get_task("ioi").metric), fingerprint(get_task("greater_than").metric)]
    assert runs[0] == runs[1] == here and None not in here and here[0] != here[1]


def test_an_unfingerprintable_metric_is_not_cached_and_warns_once(tiny_model, ioi, tmp_path, monkeypatch):
    task, batch, ref = ioi
    monkeypatch.setattr(tables, "_WARNED_UNCACHEABLE", set())
    lock = open(os.devnull)  # noqa: SIM115 - an object no hash can stand for
    try:
        metric = lambda logits, b: logit_diff(logits, b) + 0 * len(lock.name)
        assert fingerprint(metric) is None
        odd = dataclasses.replace(task, name="odd_metric", metric=metric)
        cache = SweepCache(tmp_path)
        with pytest.warns(UserWarning, match="cannot be fingerprinted"):
            got = sweep_table(tiny_model, odd, batch, ref, cache=cache)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no second warning for the same task
            sweep_table(tiny_model, odd, batch, ref, cache=cache)
    finally:
        lock.close()
    assert not list(tmp_path.glob("sweep-*.json"))
    key = sweep_key(tiny_model, odd, batch, ref, "zero")  # what precompute would store under
    assert key["batch"] is None and cache.store(key, {"x": 1}) is None and cache.load(key) is None
    assert not list(tmp_path.glob("sweep-*.json"))
    live = sweep_table(tiny_model, task, batch, ref, cache=None)
    np.testing.assert_allclose(got.task_damage, live.task_damage, atol=1e-6)


def test_a_forged_entry_with_a_recomputed_checksum_is_detected_and_rebuilt(tiny_model, ioi, tmp_path):
    """The forgery of issue 23: new numbers, and the plain SHA-256 of the payload recomputed."""
    task, batch, ref = ioi
    cache = SweepCache(tmp_path / "cache")
    honest = sweep_table(tiny_model, task, batch, ref, cache=cache)
    (path,) = (tmp_path / "cache").glob("sweep-*.json")
    entry = json.loads(path.read_text())
    target = int(np.argmin(honest.task_damage))
    entry["payload"]["task_damage"] = [10.0 if h == target else -10.0 for h in range(len(honest.task_damage))]
    canonical = json.dumps(entry["payload"], sort_keys=True, separators=(",", ":"))
    entry["checksum"] = entry["mac"] = hashlib.sha256(canonical.encode()).hexdigest()
    path.write_text(json.dumps(entry))
    with pytest.warns(UserWarning, match="rebuilding .* checksum"):
        rebuilt = sweep_table(tiny_model, task, batch, ref, cache=cache)
    np.testing.assert_array_equal(rebuilt.task_damage, honest.task_damage)
    assert json.loads(path.read_text())["payload"] != entry["payload"]  # rewritten with the true numbers


def test_entries_of_another_secret_are_rebuilt_and_the_secret_lives_outside_the_cache(
    tiny_model, ioi, tmp_path, monkeypatch
):
    task, batch, ref = ioi
    cache = SweepCache(tmp_path / "cache")
    sweep_table(tiny_model, task, batch, ref, cache=cache)
    secret = key_path()
    assert not secret.resolve().is_relative_to((tmp_path / "cache").resolve())
    assert secret.stat().st_mode & 0o077 == 0  # readable by its owner only
    monkeypatch.setenv("CIRCUIT_GYM_CACHE_KEY", str(tmp_path / "another_users.key"))
    with pytest.warns(UserWarning, match="checksum"):
        sweep_table(tiny_model, task, batch, ref, cache=cache)
    assert (tmp_path / "another_users.key").stat().st_size == 32
