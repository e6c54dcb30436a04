"""Issue 44's attacks on the tracks with secret material besides private seeds: the Planted
track (secret planted models) and the transfer tracks of the benchmark in force (the private
model, single-head and circuit). Per track: a namespace package named like the cache folder is refused; a policy
failing in the first private episode with what it saw there (in its message, its output, or a
value a check quotes) leaves a fixed failure record; the policy's own CPU time is recorded.
The single-head and circuit tracks' versions are in tests/test_attacks.py.

Small settings: one kind and two seeds (Planted); one public model, one seed and one private
seed on a stand-in private model (transfer), so each scoring is one small run."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import shrink_transfer
from sealed_records import assert_sealed, public_episodes_checkpoint

from circuit_gym import benchmark as B
from circuit_gym.leaderboard import planted_scorer as PS
from circuit_gym.leaderboard import sandbox
from circuit_gym.leaderboard.isolation import probe
from circuit_gym.leaderboard.probing import LEDGER_NAME
from circuit_gym.leaderboard.transfer_scorer import score_transfer
from circuit_gym.models.loading import embedded_dir

TESTS_DIR = Path(__file__).resolve().parent

if not probe().complete:
    if os.environ.get("CI"):
        raise RuntimeError(f"the sandbox's isolation is not available in CI: {probe().missing}")
    pytest.skip(f"isolation not available here: {probe().missing}", allow_module_level=True)


def _namespace_cheat(tmp_path: Path, monkeypatch) -> str:
    """``cache.nscheat`` without ``__init__.py``, beside a working directory holding ``cache/``."""
    work, submission = tmp_path / "work", tmp_path / "submission"
    (work / "cache").mkdir(parents=True)
    (work / "cache" / "table.json").write_text("{}")
    (submission / "cache").mkdir(parents=True)
    shutil.copy(TESTS_DIR / "hostile_policies.py", submission / "cache" / "nscheat.py")
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(submission))
    monkeypatch.syspath_prepend(str(work))
    return "cache.nscheat:package_snoop"


# ------------------------------------------------------------------ the Planted track
@pytest.fixture
def small_track(monkeypatch, tmp_path):
    """Two public seeds, two secret models, the multi-hop kind; a seed file outside the repository."""
    small = dataclasses.replace(
        PS.planted_benchmark(), public_seeds=(0, 1), private_models=2, kinds=("multihop",)
    )
    monkeypatch.setitem(PS.PLANTED_BENCHMARKS, PS.TRACK, small)
    monkeypatch.setattr(sandbox, "PRELOAD", ())
    seeds = tmp_path / "private" / "private_seeds.json"
    seeds.parent.mkdir()
    seeds.write_text(json.dumps([987654, 5]))
    return seeds


def test_planted_a_namespace_package_policy_is_refused(small_track, tmp_path, monkeypatch):
    spec = _namespace_cheat(tmp_path, monkeypatch)
    with pytest.raises(sandbox.NamespacePackageError, match="__init__.py"):
        result = PS.score_planted("nscheat", policy_spec=spec)
        pytest.fail(f"scored, status {result['status']}: {result.get('failure')}")  # what it saw, if it saw


@pytest.mark.parametrize("attack, check", [("leaks_in_message", "raised"), ("leaks_in_action", "action")])
def test_planted_a_failure_on_a_secret_model_carries_no_policy_text(small_track, tmp_path, attack, check):
    public = PS.planted_benchmark().episodes(private=False)
    result = PS.score_planted(attack, policy_spec=f"hostile_policies:{attack}", private_seeds=small_track,
                              checkpoint=public_episodes_checkpoint(tmp_path, public))  # fmt: skip
    assert_sealed(result, public, check)
    assert result["diagnostics"]["policy_cpu"]["calls"] > 0  # the public part's CPU record
    ledger = small_track.parent / LEDGER_NAME  # the scoring counted, beside the seed file
    assert [json.loads(line)["submitter"] for line in ledger.read_text().splitlines()] == [attack]
    assert result["probing"]["submitter_scorings"] == 1


# ------------------------------------------------------------------ the transfer tracks (in force)
BENCH = B.transfer_benchmark(B.IN_FORCE)


@pytest.fixture
def small_transfer(monkeypatch, tmp_path):
    """One seed per cell, one private seed, a circuit budget of 3; a stand-in private model (a copy
    of a public member: what matters here is that it is scored as the private model)."""
    shrink_transfer(
        monkeypatch,
        seeds=(0,),
        private_seeds=1,
        circuit_seeds=(0,),
        circuit_private_seeds=1,
        private_models=1,
    )  # one stand-in (two: tests/test_two_private_models.py)
    monkeypatch.setattr(B, "CIRCUIT_BUDGET", 3)
    monkeypatch.setattr(B, "CIRCUIT_N_RANDOM", 2)
    monkeypatch.setattr(sandbox, "PRELOAD", ())
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    private = tmp_path / "private"
    shutil.copytree(embedded_dir(BENCH.train_models[0]), private / "model")
    seeds = private / "private_seeds.json"
    seeds.write_text(json.dumps([5, 11]))
    return private / "model", seeds


def test_transfer_a_namespace_package_policy_is_refused(small_transfer, tmp_path, monkeypatch):
    model, seeds = small_transfer
    spec = _namespace_cheat(tmp_path, monkeypatch)
    with pytest.raises(sandbox.NamespacePackageError, match="__init__.py"):
        result = score_transfer("nscheat", policy_spec=spec, private_model=model, private_seeds=seeds)
        pytest.fail(f"scored, status {result['status']}: {result.get('failure')}")  # what it saw, if it saw


@pytest.mark.slow
@pytest.mark.parametrize(
    "track, attack, check",
    [("single-head", "leaks_in_message", "raised"), ("single-head", "leaks_in_scores_shape", "scores"),
     ("circuit", "leaks_in_action", "action")],
)  # fmt: skip
def test_transfer_a_failure_on_the_private_model_carries_no_policy_text(
    small_transfer, tmp_path, track, attack, check
):
    model, seeds = small_transfer
    public = len(BENCH.tasks_of(BENCH.train_models[0]))  # one public model, one seed per task it serves
    result = score_transfer(attack, track, policy_spec=f"hostile_policies:{attack}", private_model=model,
                            private_seeds=seeds, models=(BENCH.train_models[0],),
                            checkpoint=public_episodes_checkpoint(tmp_path, public))  # fmt: skip
    assert_sealed(result, public, check)
    assert str(model) not in json.dumps(result)
    assert result["probing"]["submitter_scorings"] == 1
