import json
import shutil

import pytest

from circuit_gym.leaderboard import benchmark as B
from circuit_gym.leaderboard.board import render
from circuit_gym.leaderboard.scorer import canonical_json, content_hash, score, write_result


@pytest.fixture
def small_benchmark(monkeypatch, tmp_path):
    monkeypatch.setattr(B, "EVAL_SEEDS", (0, 1, 2))
    monkeypatch.setattr(B, "REPRO_SEEDS", (3, 4))
    monkeypatch.setattr(B, "CALL_TIMEOUT_S", 3.0)
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))


def test_scoring_twice_gives_byte_identical_scores(small_benchmark):
    a = score("good", policy_spec="policies_for_tests:good")
    b = score("good", policy_spec="policies_for_tests:good")
    assert a["status"] == "scored"
    assert canonical_json(a["scores"]) == canonical_json(b["scores"])
    assert a["content_hash"] == content_hash(a)
    prov = a["provenance"]
    for key in (
        "package_version",
        "git_commit",
        "weights_hash",
        "seeds",
        "ablation",
        "lam",
        "policy_files_hash",
    ):
        assert key in prov
    s = a["scores"]
    assert s["overall"]["k5"]["episodes"] == 3 and set(s["generalisation"]) == set(B.HELD_OUT_TASKS)
    assert 0.0 <= s["consistency_top5_jaccard"]["docstring"] <= 1.0


@pytest.mark.parametrize(
    "factory, reason",
    [
        ("crash_on_load", "loading the policy failed"),
        ("crash", "ZeroDivisionError"),
        ("hang", "time limit"),
        ("wrong_shape", "expected 16 scores"),
        ("nan_scores", "NaN"),
        ("a_head_not_scores", "expected 16 scores"),
        ("no_rank_heads", "rank_heads"),
    ],
)
def test_bad_policies_get_a_failure_record_not_a_score(small_benchmark, factory, reason):
    result = score(factory, policy_spec=f"policies_for_tests:{factory}")
    assert result["status"] == "failed" and "scores" not in result
    assert reason in result["failure"]["reason"]


def test_memory_limit(small_benchmark, monkeypatch):
    monkeypatch.setattr(B, "MEMORY_LIMIT_MB", 300)
    result = score("hog", policy_spec="policies_for_tests:memory_hog")
    assert result["status"] == "failed" and "memory limit" in result["failure"]["reason"]


def test_a_wrong_import_path_is_a_clear_error(small_benchmark):
    with pytest.raises(ValueError, match="package.module:factory"):
        score("x", policy_spec="no_colon_here")
    with pytest.raises(ModuleNotFoundError):
        score("x", policy_spec="not_a_module_anywhere:make")


def test_board_shows_only_verified_results(small_benchmark, tmp_path):
    results = tmp_path / "results"
    for name, kwargs in (("random", dict(policy_spec="circuit_gym.baselines.random_policy:make_policy")),
                         ("greedy", dict(builtin="greedy")), ("ppo", dict(policy_spec="policies_for_tests:good")),
                         ("fixed", dict(policy_spec="policies_for_tests:good")),
                         ("entry", dict(policy_spec="policies_for_tests:good"))):  # fmt: skip
        write_result(score(name, **kwargs), results / f"{name}.json")

    # 1. edited numbers, hash not updated
    forged = json.loads((results / "entry.json").read_text())
    forged["name"] = "forged"
    forged["scores"]["overall"]["k5"]["recovery_mean"] += 0.123
    (results / "forged.json").write_text(json.dumps(forged))
    # 2. edited numbers with a recomputed hash: caught only by re-scoring
    rehashed = dict(forged, name="rehashed")
    rehashed["content_hash"] = content_hash(rehashed)
    (tmp_path / "rehashed.json").write_text(json.dumps(rehashed))
    # 3. a result from another benchmark version
    other = json.loads((results / "entry.json").read_text())
    other["name"], other["provenance"]["benchmark_version"] = "old", "circuit-gym-heldout-v-1"
    other["content_hash"] = content_hash(other)
    (results / "old.json").write_text(json.dumps(other))

    out = tmp_path / "board"
    summary = render(sorted(results.glob("*.json")), out)
    names = [r["name"] for r in summary["rows"]]
    assert set(names) == {"random", "fixed", "greedy", "ppo", "entry"}
    assert any("forged.json" in m and "content hash" in m for m in summary["refused"])
    assert any("old.json" in m and "benchmark_version" in m for m in summary["refused"])
    k5 = [r["k5"] for r in summary["rows"]]
    assert k5 == sorted(k5, reverse=True)
    board = (out / "README.md").read_text()
    assert "forged" not in board.split("Refused")[0] and "| 1 |" in board
    assert (out / "index.html").exists() and (out / "board.png").stat().st_size > 1000
    assert (out / "radar" / "ppo.png").exists()

    summary = render([results / "random.json", results / "greedy.json", results / "ppo.json", results / "fixed.json",
                      tmp_path / "rehashed.json"], tmp_path / "board2", rescore=True)  # fmt: skip
    assert any("rehashed.json" in m and "re-scoring" in m for m in summary["refused"]), summary["refused"]
    assert "rehashed" not in [r["name"] for r in summary["rows"]]

    shutil.move(results / "ppo.json", tmp_path / "ppo.json")
    with pytest.raises(ValueError, match="reference entries missing"):
        render(sorted(results.glob("*.json")), out)


def test_board_ranks_by_best_of_5_then_best_of_1():
    from circuit_gym.leaderboard.board import rank_rows

    rows = [{"name": "a", "k5": 1.0, "k1": 0.4, "top1": 0.0}, {"name": "b", "k5": 0.9, "k1": 1.0, "top1": 1.0},
            {"name": "c", "k5": 1.0, "k1": 1.0, "top1": 0.9}]  # fmt: skip
    assert [r["name"] for r in rank_rows(rows)] == ["c", "a", "b"]
