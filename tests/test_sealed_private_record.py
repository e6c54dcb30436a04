"""Issue 58, item 1: the private record publishes only what the scorer decides.

A policy controls more numbers than its ranking scores: the size of the circuit it proposes (and
with it the circuit's faithfulness and the pass count), how long it takes, and how it fails. The
red team carried a private observation's top head out through the circuit size of the first
private episode of each group, at no cost to the private score, on three tracks of the retired zoo v2 board. Each attack
here is scored by the real scorer on the circuit track in force, made small
(tests/leaderboard_helpers.py), and read back from the written result file.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from leaderboard_helpers import private_tiny, small_in_force
from sealed_records import public_episodes_checkpoint

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.isolation import probe
from circuit_gym.leaderboard.provenance import canonical_json
from circuit_gym.leaderboard.scoring import write_result
from circuit_gym.leaderboard.transfer_scorer import score_transfer

if not probe().complete:
    if os.environ.get("CI"):
        raise RuntimeError(f"the sandbox's isolation is not available in CI: {probe().missing}")
    pytest.skip(f"isolation not available here: {probe().missing}", allow_module_level=True)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The circuit track on the 4 x 4 model: one held-out task, 2 public and 2 private seeds, budget
    3; the maintainers' seed file and a stand-in private model."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        row = small_in_force(mp, cache, seeds=(0, 1), private_seeds=2, timeout_s=10.0)
        private = tmp_path_factory.mktemp("private")
        seeds = private / "private_seeds.txt"
        seeds.write_text("# maintainers only\n912345677\n887766551\n")
        yield {"seeds": seeds, "model": private_tiny(private), "public": len(row.circuit_seeds)}


def score_circuit(bench, name: str, **kwargs) -> dict:
    """The circuit track in force's scorer, with the maintainers' seed file and private model."""
    return score_transfer(
        name, B.CIRCUIT, private_seeds=bench["seeds"], private_model=bench["model"], **kwargs
    )


def _scored(bench, tmp_path, policy: str) -> dict:
    """The result file the scorer writes for ``sealed_leakers:policy``, read back."""
    result = score_circuit(bench, policy, policy_spec=f"sealed_leakers:{policy}",
                           checkpoint=public_episodes_checkpoint(tmp_path, bench["public"]))  # fmt: skip
    path = write_result(result, tmp_path / f"{policy}.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def honest(bench, tmp_path_factory):
    result = _scored(bench, tmp_path_factory.mktemp("honest"), "honest")
    assert result["status"] == "scored", result.get("failure")
    return result


def test_a_size_encoded_in_the_first_private_episode_cannot_be_read_from_the_result(bench, honest, tmp_path):
    """The encoder's circuit in its first private episode has 1 or 3 heads (the parity of the
    observation's top head), every other circuit 2, and its rankings are the honest builder's. The
    written private part must be the honest builder's, byte for byte: whatever the encoded episode
    changed (size, faithfulness, passes) is not in it. On the old record the private circuit size
    was (1 + 2) / 2 or (3 + 2) / 2, the top head's parity read straight off the file."""
    leaked = _scored(bench, tmp_path, "size_encoder")
    assert leaked["status"] == "scored", leaked.get("failure")
    assert canonical_json(leaked["scores"]) == canonical_json(honest["scores"])  # the public part: honest
    assert canonical_json(leaked["private"]) == canonical_json(honest["private"])
    private = json.dumps(leaked["private"])
    assert "circuit_size" not in private and "passes" not in private  # nothing of the policy's choosing
    summary = leaked["private"]["scores"]["overall"]
    assert 0 <= summary["cpr_ci95"][0] <= summary["cpr"] <= summary["cpr_ci95"][1]  # the ranking score stays


def test_time_spent_in_the_private_part_does_not_reach_the_result(bench, honest, tmp_path):
    """The sleeper sleeps 3 s in its first private episode: the recorded wall time (all the board
    and the record keep of timing) must not include it; on the old record it did."""
    from sealed_leakers import SLEEP_S

    start = time.monotonic()
    slept = _scored(bench, tmp_path, "sleeper")
    took = time.monotonic() - start
    assert slept["status"] == "scored", slept.get("failure")
    assert took >= SLEEP_S
    assert slept["diagnostics"]["wall_seconds"] <= took - SLEEP_S + 0.5, slept["diagnostics"]
    assert canonical_json(slept["private"]) == canonical_json(honest["private"])


def test_a_failure_in_the_private_part_says_only_failed(bench, tmp_path):
    """Two leakers failing different checks in the first private episode (an exception, an illegal
    action) leave the same failure record: which check failed (2 bits, the red team's channel)
    and the exception's type are not recorded."""
    records = []
    for attack in ("leaks_in_message", "leaks_in_action"):
        result = score_circuit(bench, attack, policy_spec=f"hostile_policies:{attack}",
                               checkpoint=public_episodes_checkpoint(tmp_path, bench["public"]))  # fmt: skip
        result = json.loads(write_result(result, tmp_path / f"{attack}.json").read_text())
        assert result["status"] == "failed" and "private" not in result and "scores" not in result
        records.append(result["failure"])
    assert records[0] == records[1]
    assert "check" not in records[0] and "failed in the private part" in records[0]["reason"]


def test_the_edge_tracks_protocol_2_ranking_scores_survive_the_seal():
    """Protocol 2 ranks the edge track on CPR / CMD on the log size axis (and the planted part's AUC
    over the candidates): the sealed private record must keep them, with their intervals, or the
    private column it ranks on is empty; the faithfulness and circuit size beside them stay out."""
    from circuit_gym.leaderboard.edge_scorer import PLANTED_METRICS, TRANSFER_METRICS
    from circuit_gym.leaderboard.scoring import sealed_private

    ranking = {"cpr_log", "cmd_log", "auc_candidates"}
    assert ranking <= set(TRANSFER_METRICS) | set(PLANTED_METRICS)  # the scorer's own names
    summary = {m: 0.5 for m in (*TRANSFER_METRICS, *PLANTED_METRICS)}
    summary |= {f"{m}_ci95": [0.4, 0.6] for m in ranking} | {"episodes": 8}
    sealed = sealed_private({"seed_file_sha256": "x", "scores": {"transfer": {"all": summary}}})
    kept = sealed["scores"]["transfer"]["all"]
    assert ranking | {f"{m}_ci95" for m in ranking} <= set(kept)
    assert not {"faithfulness", "circuit_size", "lm_passes"} & set(kept)
