"""Scoring a policy that reads the causal observation (issue 34): the transfer scorer gives it the
observation it asks for, charges the passes that observation costs to the policy, records the
choice so rescoring repeats it, and the reference manifest carries it."""

from __future__ import annotations

import json

import pytest

from circuit_gym import benchmark as B
from circuit_gym.envs.causal_features import single_head_passes
from circuit_gym.leaderboard import references as R
from circuit_gym.leaderboard import transfer_scorer
from circuit_gym.leaderboard.transfer_scorer import score_transfer

READER = "policies_for_tests:eap_ig_reader"  # fails unless given the 15-column causal observation


def test_the_causal_observation_is_given_and_its_passes_are_the_policys():
    causal = score_transfer(
        "reader", policy_spec=READER, sample=1, features="causal", require_isolation=False
    )
    assert causal["status"] == "sample", causal.get("failure")
    (row,) = causal["scores"]["episodes"]
    # The policy runs no pass of its own: what its row is charged is what its observation cost.
    assert row["lm_passes"] == single_head_passes(B.TRANSFER_ABLATION)
    assert sum(row["lm_passes"].values()) > 0
    assert causal["provenance"]["features"] == "causal"

    plain = score_transfer("reader", policy_spec=READER, sample=1, require_isolation=False)
    assert plain["status"] == "failed" and "15 columns" in plain["failure"]["reason"]
    assert "features" not in plain["provenance"]  # the default is left unsaid, as in earlier results


def test_an_unknown_observation_is_refused_before_any_environment_is_built(monkeypatch):
    def no_env(*args, **kwargs):
        raise AssertionError("an environment was built before the request was checked")

    monkeypatch.setattr(transfer_scorer, "board_env", no_env)  # the one builder of every track's env
    with pytest.raises(ValueError, match="features must be one of"):
        score_transfer("x", policy_spec=READER, features="oracle", require_isolation=False)
    with pytest.raises(ValueError, match="features must be one of"):  # a single-head-only observation
        score_transfer(
            "x", track="circuit", policy_spec=READER, features="prediction", require_isolation=False
        )


def _entry(features: str | None) -> dict:
    entry = {"policy": "circuit_gym.baselines.ppo:load_policy", "checkpoint": None, "checkpoint_digest": None,
             "result": "leaderboard/results/v8/x.json", "scores_digest": "0" * 64}  # fmt: skip
    return entry if features is None else {**entry, "features": features}


def test_the_manifest_carries_a_references_observation_and_refuses_other_fields(tmp_path):
    path = tmp_path / "references.json"
    path.write_text(json.dumps({"v8-single-head": {"a": _entry("causal"), "b": _entry(None)}}))
    refs = R.load_manifest(path)["v8-single-head"]
    assert refs["a"].features == "causal" and refs["b"].features == R.DEFAULT_FEATURES
    # written back as read: the default stays unsaid, so earlier manifests are unchanged
    R.write_manifest(R.as_entries(R.load_manifest(path)), tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text())["v8-single-head"] == {
        "a": _entry("causal"), "b": _entry(None)}  # fmt: skip
    # a result scored with the causal observation makes an entry that says so
    result = {"status": "scored", "scores": {}, "provenance": {"features": "causal"}}
    assert R.manifest_entry(result, "p:f", None, "r.json")["features"] == "causal"
    assert "features" not in R.manifest_entry({**result, "provenance": {}}, "p:f", None, "r.json")

    path.write_text(json.dumps({"v8-single-head": {"a": {**_entry(None), "observation": "causal"}}}))
    with pytest.raises(ValueError, match="exactly the fields"):
        R.load_manifest(path)
    path.write_text(json.dumps({"v8-single-head": {"a": _entry(None) | {"features": 3}}}))
    with pytest.raises(ValueError, match="features must be a string"):
        R.load_manifest(path)
