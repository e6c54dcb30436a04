"""The probing ledger (circuit_gym/leaderboard/probing.py): every private scoring counted per
submitter and per policy (a weights-free digest of its source), beside the private seed file and
never in the repository; the board's words for the count."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from circuit_gym.leaderboard import probing
from circuit_gym.leaderboard.paths import REPO_ROOT

TESTS_DIR = Path(__file__).resolve().parent
DAY = 24 * 3600.0


@pytest.fixture
def seeds(tmp_path) -> Path:
    path = tmp_path / "private" / "seeds.json"
    path.parent.mkdir()
    path.write_text("[1, 2]")
    return path


@pytest.fixture
def team_policy(tmp_path, monkeypatch) -> Path:
    package = tmp_path / "code" / "team_policy"
    package.mkdir(parents=True)
    shutil.copy(TESTS_DIR / "hostile_policies.py", package / "__init__.py")
    monkeypatch.syspath_prepend(str(package.parent))
    return package


def test_each_private_scoring_is_counted_per_submitter_and_week(seeds, team_policy):
    spec = "team_policy:honest"
    start = 1_000_000_000.0
    got = [probing.record_private_scoring(seeds, name, spec, "planted", now=start + day * DAY)["probing"]
           for name, day in (("alice", 0), ("bob", 1), ("alice", 2), ("alice", 9))]  # fmt: skip
    assert [g["submitter_scorings"] for g in got] == [1, 1, 2, 3]
    assert [g["submitter_scorings_7d"] for g in got] == [1, 1, 2, 1]  # day 9: day 0 and 2 are past the week
    assert [g["policy_scorings"] for g in got] == [1, 2, 3, 4]  # one policy, whoever submits it
    lines = [json.loads(line) for line in (seeds.parent / probing.LEDGER_NAME).read_text().splitlines()]
    assert [(e["submitter"], e["track"]) for e in lines] == [("alice", "planted"), ("bob", "planted"),
                                                              ("alice", "planted"), ("alice", "planted")]  # fmt: skip
    assert probing.record_private_scoring(None, "alice", spec, "planted") == {}


def test_the_policy_digest_is_its_source_not_its_weights(team_policy, tmp_path):
    digest = probing.policy_digest("team_policy:honest")
    expected = hashlib.sha256((team_policy / "__init__.py").read_bytes()).hexdigest()
    assert expected.startswith(digest)  # (a prefix of) the source files' SHA-256, no checkpoint
    (team_policy / "__init__.py").write_text((team_policy / "__init__.py").read_text() + "\n# edited\n")
    assert probing.policy_digest("team_policy:honest") != digest
    assert probing.policy_digest("builtin:acdc") == "builtin:acdc"


def test_the_ledger_stays_out_of_the_repository(tmp_path):
    with pytest.raises(ValueError, match="lies in the repository"):
        probing.ledger_path(REPO_ROOT / "tests" / "data" / "private_seeds.json")
    assert probing.ledger_path(tmp_path / "seeds.json") == tmp_path / probing.LEDGER_NAME


def test_the_board_shows_the_count_and_marks_an_entry_over_the_rule():
    counts = {"submitter_scorings": 5, "policy_scorings": 2, "rule_per_week": probing.SCORINGS_PER_WEEK}
    within = {"name": "alice", "track": "v8-planted", "probing": {**counts, "submitter_scorings_7d": 2}}
    over = {"name": "bob", "track": "v8-single-head", "probing": {**counts, "submitter_scorings_7d": 3}}
    text = probing.probing_markdown([within, over, {"name": "old"}])
    assert "- alice (v8-planted): private scoring 2 of the submitter's week\n" in text
    assert (
        f"- bob (v8-single-head): private scoring 3 of the submitter's week (over the rule of {probing.SCORINGS_PER_WEEK})"
        in text
    )
    assert "old" not in text
    assert probing.probing_markdown([{"name": "old"}]) == ""  # results scored before the ledger: no line
