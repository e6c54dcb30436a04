"""The transfer scorer (the benchmark in force): the private model's checks come before any scoring, a result
scored on one private model never verifies against another's weights, forged or partial files
are refused, and the quadrant summaries agree with a recomputation from the episode rows."""

from __future__ import annotations

import dataclasses
import json
import shutil

import gymnasium as gym
import numpy as np
import pytest
from leaderboard_helpers import shrink_transfer

from circuit_gym import benchmark as B
from circuit_gym.leaderboard import verification as V
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.scoring import write_result
from circuit_gym.leaderboard.transfer_scorer import score_transfer
from circuit_gym.models.loading import embedded_dir

RANDOM = "circuit_gym.baselines.random_policy:make_policy"
BENCH = B.transfer_benchmark(B.IN_FORCE)
TRAIN_MODEL, HELD_OUT, OTHER_HELD_OUT = (
    BENCH.train_models[0],
    BENCH.held_out_models[0],
    BENCH.held_out_models[1],
)


@pytest.fixture(autouse=True)
def one_private_model(monkeypatch):
    """The checks here are each private model's, with one given (a row of two runs them on each:
    tests/test_two_private_models.py): the row in force with one private model."""
    row = dataclasses.replace(B.transfer_benchmark(B.IN_FORCE), private_models=1)
    monkeypatch.setitem(B.TRANSFER_BENCHMARKS, B.IN_FORCE, row)


@pytest.fixture
def one_seed(monkeypatch):
    """One batch per (model, task) and one private seed: the whole plan, small."""
    shrink_transfer(monkeypatch, seeds=(0,), private_seeds=1)


@pytest.fixture
def seed_file(tmp_path):
    path = tmp_path / "private_seeds.json"
    path.write_text(json.dumps([5, 11, 2, 7, 19, 23, 4, 30]))  # as many as the track uses
    return path


def _stand_in(tmp_path, member: str, name: str):
    """A private-model directory: a copy of a public member (what matters here is whose weights)."""
    out = tmp_path / name
    shutil.copytree(embedded_dir(member), out)
    return out


def _no_env(*args, **kwargs):
    raise AssertionError("an environment was built before the request was checked")


def test_missing_private_model_or_seeds_is_an_error_before_any_scoring(tmp_path, seed_file, monkeypatch):
    monkeypatch.setattr(gym, "make", _no_env)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        score_transfer("x", policy_spec=RANDOM, private_model=tmp_path / "nope", private_seeds=seed_file)
    with pytest.raises(ValueError, match="both private_model and private_seeds"):
        score_transfer("x", policy_spec=RANDOM, private_model=_stand_in(tmp_path, HELD_OUT, "p"))
    short = tmp_path / "short.json"
    short.write_text("[3]")
    with pytest.raises(ValueError, match="holds 1 seeds; the single-head transfer track uses"):
        score_transfer("x", policy_spec=RANDOM, private_model=embedded_dir(HELD_OUT), private_seeds=short)
    with pytest.raises(ValueError, match="track must be one of"):
        score_transfer("x", track="multi", policy_spec=RANDOM)


def test_private_model_of_another_shape_is_an_error_before_any_scoring(tmp_path, seed_file, monkeypatch):
    monkeypatch.setattr(gym, "make", _no_env)
    # the 4 x 4 embedded model's real weights and config, with a tokenizer beside them
    tiny = tmp_path / "tiny"
    shutil.copytree(embedded_dir("tiny"), tiny)
    with pytest.raises(ValueError, match="another shape than the zoo's"):
        score_transfer("x", policy_spec=RANDOM, private_model=tiny, private_seeds=seed_file)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="lacks config.json"):
        score_transfer("x", policy_spec=RANDOM, private_model=empty, private_seeds=seed_file)


def _gate_out(directory, tasks) -> None:
    """Edit a stand-in's card so that its inclusion gate leaves ``tasks`` out."""
    card = json.loads((directory / "card_metrics.json").read_text())
    card["suite"]["included"] = [t for t in card["suite"]["included"] if t not in tasks]
    (directory / "card_metrics.json").write_text(json.dumps(card))


def test_private_model_that_performs_too_few_held_out_tasks_or_whose_card_is_of_other_weights(
    tmp_path, seed_file, monkeypatch
):
    gated_out = _stand_in(tmp_path, HELD_OUT, "gated_out")
    _gate_out(gated_out, BENCH.held_out_tasks[1:])
    with monkeypatch.context() as mp:
        mp.setattr(gym, "make", _no_env)
        with pytest.raises(
            ValueError, match=rf"held-out tasks \['{BENCH.held_out_tasks[0]}'\] only \(at least 2 needed\)"
        ):
            score_transfer("x", policy_spec=RANDOM, private_model=gated_out, private_seeds=seed_file)
    # one held-out member's weights with the other's card: refused once the weights are loaded, before any episode
    mixed = _stand_in(tmp_path, HELD_OUT, "mixed")
    shutil.copy(embedded_dir(OTHER_HELD_OUT) / "card_metrics.json", mixed / "card_metrics.json")
    with pytest.raises(ValueError, match="measured on other weights"):
        score_transfer(
            "x", policy_spec=RANDOM, private_model=mixed, private_seeds=seed_file, require_isolation=False
        )


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """One scoring run shared by the tests below (scoring costs a minute or two)."""
    tmp_path = tmp_path_factory.mktemp("transfer")
    seeds = tmp_path / "private_seeds.json"
    seeds.write_text(json.dumps([5, 11]))
    private = _stand_in(tmp_path, HELD_OUT, "private_a")
    _gate_out(private, ("capital",))  # a held-out task it does not perform is never served on it
    with pytest.MonkeyPatch.context() as mp:
        shrink_transfer(mp, seeds=(0,), private_seeds=1, private_models=1)  # one stand-in private model
        result = score_transfer("random", policy_spec=RANDOM, private_model=private, private_seeds=seeds,
                                require_isolation=False)  # fmt: skip
    path = write_result(result, tmp_path / "random.json")
    return result, path, seeds


@pytest.mark.slow
def test_quadrants_agree_with_a_recomputation_from_the_rows(scored):
    result, _, _ = scored
    assert result["status"] == "scored"
    rows = result["scores"]["episodes"]
    # every public (model, task) cell once per seed; the private model's episodes are not kept
    # (each task its card's gate admits: a zoo v2 member may not serve every task)
    assert {(r["model"], r["task"]) for r in rows} == {
        (m, t) for m in BENCH.public_models() for t in BENCH.tasks_of(m)
    }
    assert "private" not in {r["model"] for r in rows}
    for q, summary in result["scores"]["quadrants"].items():
        seen_task, seen_model = q.startswith("seen_task"), q.endswith("_seen_model")
        group = [r for r in rows if (r["task"] in BENCH.train_tasks) == seen_task
                 and (r["model"] in BENCH.train_models) == seen_model]  # fmt: skip
        positive = [r for r in group if r["oracle_reward"] > 0]
        expected = sum(r["reward_k1"] for r in positive) / sum(r["oracle_reward"] for r in positive)
        assert summary["k1"]["episodes"] == len(group)
        assert summary["k1"]["recovery"] == pytest.approx(expected, abs=1e-8)
    private = result["private"]
    served = [t for t in BENCH.tasks_of(HELD_OUT, BENCH.held_out_tasks) if t != "capital"]
    assert private["tasks"] == served and sorted(private["scores"]["per_task"]) == sorted(served)
    assert private["n_seeds"] == 1 and private["scores"]["overall"]["k1"]["episodes"] == len(served)
    assert set(private) == {
        "weights_hash",
        "seed_file_sha256",
        "n_seeds",
        "tasks",
        "scores",
    }  # never the seeds
    assert np.isfinite(private["scores"]["overall"]["k5"]["recovery"])


@pytest.mark.slow
def test_a_result_scored_on_one_private_model_does_not_verify_against_another(scored, tmp_path, one_seed):
    result, path, seed_file = scored
    other = _stand_in(tmp_path, OTHER_HELD_OUT, "private_b")
    with pytest.raises(V.RefusedResultError, match="another private model"):
        V.rescore_matches(path, result, seed_file, require_isolation=False, private_model=other)
    # the same weights (another copy, the same card) re-score to the same numbers, private ones included
    same = _stand_in(tmp_path, HELD_OUT, "private_c")
    _gate_out(same, ("capital",))
    assert (
        V.rescore_matches(path, result, seed_file, require_isolation=False, private_model=same) == "verified"
    )


@pytest.mark.slow
def test_forged_or_partial_transfer_results_are_refused(scored, tmp_path, one_seed, monkeypatch):
    result, path, _ = scored
    assert V.verify(path)["name"] == "random"
    # an attacker recomputes the content hash after claiming other public weights
    forged = json.loads(path.read_text())
    forged["provenance"]["weights_hashes"][HELD_OUT] = "0" * 16
    forged["content_hash"] = content_hash(forged)
    bad = write_result(forged, tmp_path / "forged.json")
    with pytest.raises(V.RefusedResultError, match="other weights of the public zoo"):
        V.verify(bad)
    partial = score_transfer("part", policy_spec=RANDOM, models=(TRAIN_MODEL,), require_isolation=False)
    assert {r["model"] for r in partial["scores"]["episodes"]} == {TRAIN_MODEL}
    with pytest.raises(V.RefusedResultError, match="some public models only"):
        V.verify(write_result(partial, tmp_path / "part.json"))
    # scored under another benchmark definition (a seed added): stale
    shrink_transfer(monkeypatch, seeds=(0, 1))
    with pytest.raises(V.RefusedResultError, match="different benchmark"):
        V.verify(path)
