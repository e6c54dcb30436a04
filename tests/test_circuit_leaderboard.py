"""The leaderboard's circuit track (circuit_gym/leaderboard/circuit_scorer.py): a circuit-building policy's
score recomputed independently, determinism, and the board's circuit table. Attacks on the
track: tests/test_attacks.py."""

import json

import gymnasium as gym
import numpy as np
import pytest
from leaderboard_helpers import edited_result, manifest_for, score_small_board

from circuit_gym import benchmark as B
from circuit_gym.leaderboard import sandbox
from circuit_gym.leaderboard.board import RefusedResultError, render
from circuit_gym.leaderboard.circuit_scorer import score_circuit
from circuit_gym.leaderboard.provenance import canonical_json, content_hash
from circuit_gym.stats import mean_ci95

RANDOM_SPEC = "circuit_gym.baselines.circuit_random_policy:make_policy"
# Small reference set for the board test: random (sandboxed) and attribution (white-box).
TEST_REFERENCES = {"random": (RANDOM_SPEC, None), "attribution": ("builtin:attribution", None)}


@pytest.fixture(scope="module")
def small_track(tmp_path_factory):
    """The 4 x 4 model, one held-out task, 3 seeds, budget 3, 2 random rankings per episode."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(B, "MODEL", "tiny")
        mp.setattr(B, "HELD_OUT_TASKS", ("docstring",))
        mp.setattr(B, "CIRCUIT_EVAL_SEEDS", (0, 1, 2))
        mp.setattr(B, "CIRCUIT_BUDGET", 3)
        mp.setattr(B, "CIRCUIT_N_RANDOM", 2)
        mp.setattr(B, "CIRCUIT_PRIVATE_SEEDS", 2)
        mp.setattr(B, "CALL_TIMEOUT_S", 5.0)
        mp.setattr(sandbox, "PRELOAD", ())  # the test policies import numpy only: start them fast
        mp.setenv("CIRCUIT_GYM_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


def _trapezoid(x, y) -> float:
    x, y = np.asarray(x), np.asarray(y)
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2))


def test_a_circuit_policy_scores_what_an_independent_computation_gives(small_track, tiny_model):
    from policies_for_tests import constant_ranking

    from circuit_gym.circuits import Circuit, CircuitRunner, faithfulness
    from circuit_gym.circuits.curve import MIB_FRACTIONS, circuit_sizes

    result = score_circuit("constant", policy_spec="policies_for_tests:circuit_constant")
    again = score_circuit("constant", policy_spec="policies_for_tests:circuit_constant")
    assert result["status"] == "scored", result.get("failure")
    assert canonical_json(result["scores"]) == canonical_json(again["scores"])  # deterministic
    assert result["track"] == "circuit" and result["content_hash"] == content_hash(result)
    prov = result["provenance"]
    assert prov["benchmark_version"] == B.CIRCUIT_BENCHMARK_VERSION and prov["seeds"] == [0, 1, 2]
    assert (prov["budget"], prov["alpha"], prov["start"]) == (3, B.CIRCUIT_ALPHA, "empty")
    assert {"package_version", "git_commit", "weights_hash", "policy_files_hash"} <= set(prov)

    # By hand: the circuit-building env played with the policy's rule written out here, the
    # ranking (insertion order, then the rest by the policy's scores) run on a runner of the batch.
    env = gym.make("CircuitDiscovery-Toy-Multi-Circuit-v0", model="tiny", split="test", pool_size=3,
                   batch_size=8, budget=3, alpha=B.CIRCUIT_ALPHA, oracle_info=False)  # fmt: skip
    n = env.unwrapped.n_total
    order = [int(h) for h in np.argsort(-constant_ranking(n), kind="stable")]
    sizes = circuit_sizes(n)
    fractions = np.array(MIB_FRACTIONS)
    episodes = result["scores"]["episodes"]
    assert [(e["task"], e["seed"]) for e in episodes] == [("docstring", s) for s in (0, 1, 2)]
    for episode in episodes:
        _, info = env.reset(options={"task": "docstring", "batch_index": episode["seed"]})
        for head in order[:2]:
            _, _, terminated, _, info = env.step(head)
            assert not terminated
        _, _, terminated, _, info = env.step(n)  # STOP
        assert terminated
        assert episode["order"] == order[:2] and episode["circuit_size"] == 2
        assert episode["forward_passes"] == info["forward_passes"] == 4 + 2  # setup + one per head
        pool = env.unwrapped.pool("docstring")
        runner = CircuitRunner.for_task(
            tiny_model, pool.task, pool.episode(episode["seed"]).batch, pool.ablation
        )
        circuits = [Circuit.of(order[:s], runner.n_layers, runner.n_heads) for s in sizes]
        m = runner.metric(
            [Circuit.empty(runner.n_layers, runner.n_heads), Circuit.of(order[:2], 4, 4), *circuits]
        )
        f = np.array([faithfulness(x, m[0], runner.full_metric) for x in m[2:]])
        assert episode["faithfulness"] == pytest.approx(
            faithfulness(m[1], m[0], runner.full_metric), abs=1e-6
        )
        assert episode["cpr"] == pytest.approx(_trapezoid(fractions, f), abs=1e-6)
        assert episode["cmd"] == pytest.approx(_trapezoid(fractions, np.abs(1 - f)), abs=1e-6)
    summary = result["scores"]["summary"]
    assert set(summary) == {"docstring", "all"}
    cpr, ci = mean_ci95([e["cpr"] for e in episodes])
    assert summary["all"]["cpr"] == pytest.approx(cpr) and summary["all"]["cpr_ci95"] == pytest.approx(ci)
    assert summary["all"]["forward_passes"] == 6 and summary["all"]["episodes"] == 3
    assert summary["docstring"]["cmd"] == pytest.approx(np.mean([e["cmd"] for e in episodes]))


def test_white_box_references_count_their_own_passes(small_track):
    greedy = score_circuit("greedy_search", builtin="greedy_search")
    attribution = score_circuit("attribution", builtin="attribution")
    for result in (greedy, attribution):
        assert result["status"] == "scored" and result["provenance"]["white_box"]
    for e in greedy["scores"]["episodes"]:  # every candidate of every state it looked at: 16, 15, ...
        size = e["circuit_size"]
        looked = size + (size < B.CIRCUIT_BUDGET)  # one more table where it said STOP
        assert e["forward_passes"] == 4 + size + sum(16 - i for i in range(looked))
    for e in attribution["scores"]["episodes"]:
        assert e["forward_passes"] == 4 + e["circuit_size"] + 2  # one forward, one backward pass
    with pytest.raises(ValueError, match="greedy_search"):
        score_circuit("x", builtin="greedy")  # the single-head track's builtin


@pytest.fixture(scope="module")
def circuit_results(small_track, tmp_path_factory):
    d = tmp_path_factory.mktemp("circuit_board")
    references = {"random": dict(policy_spec=RANDOM_SPEC), "attribution": dict(builtin="attribution")}
    results, seeds = score_small_board(
        score_circuit, d, references, "policies_for_tests:circuit_constant", "random", [5, 6, 7]
    )
    entry = json.loads((results / "entry.json").read_text())
    bad = d / "bad"
    bad.mkdir()

    def bump_cpr(r):
        r["scores"]["summary"]["all"]["cpr"] += 0.5

    def other_budget(r):
        r["provenance"]["budget"] = 99

    for name, edit, rehash in (
        ("forged", bump_cpr, False),
        ("rehashed", bump_cpr, True),
        ("old", other_budget, True),
    ):
        (bad / f"{name}.json").write_text(
            json.dumps(edited_result(results / "entry.json", name, edit, rehash))
        )
    manifest = manifest_for(results, TEST_REFERENCES, track="circuit")
    return {"results": results, "bad": bad, "seeds": seeds, "dir": d, "entry": entry, "manifest": manifest}


@pytest.mark.slow
def test_the_board_verifies_circuit_results_and_renders_their_table(circuit_results):
    results, bad, d = circuit_results["results"], circuit_results["bad"], circuit_results["dir"]
    manifest = circuit_results["manifest"]
    summary = render(
        sorted(results.glob("*.json")) + sorted(bad.glob("*.json")), d / "board", references=manifest
    )
    rows = {r["name"]: r for r in summary["circuit_rows"]}
    assert summary["rows"] == [] and set(rows) == {"random", "attribution", "entry", "rehashed"}
    refused = "\n".join(summary["refused"])
    assert "forged.json" in refused and "content hash" in refused
    assert "old.json" in refused and "budget" in refused
    assert "imposter.json" in refused and "reserved for the circuit reference entry" in refused
    assert rows["random"]["reference"] == "random" and rows["attribution"]["white_box"]
    entry = circuit_results["entry"]["scores"]["summary"]["all"]
    assert rows["entry"]["cpr"] == entry["cpr"] and rows["entry"]["forward"] == entry["forward_passes"] == 6
    assert rows["entry"]["private_cpr"] is not None and rows["random"]["private_cpr"] is None
    cprs = [r["cpr"] for r in summary["circuit_rows"]]
    assert cprs == sorted(cprs, reverse=True)
    readme = (d / "board" / "README.md").read_text()
    table = readme.split("### Circuit track", 1)[1]
    assert f"| {cprs.index(entry['cpr']) + 1} | entry | hash-checked | {entry['cpr']:.3f} [" in table
    assert "attribution (reference; white-box" in table and "| 6 |" in table
    assert "best-of-5" not in readme  # no single-head entries: no single-head table
    html = (d / "board" / "index.html").read_text()
    assert 'id="circuit"' in html and "Circuit track" in html and 'id="entries"' not in html
    # references are required once the track has entries
    with pytest.raises(RefusedResultError, match=r"circuit track: reference entries missing.*'attribution'"):
        render([results / "random.json", results / "entry.json"], d / "board2", references=manifest)
    # --rescore: the same scores again; with the private seed file, "verified"
    summary = render([results / "random.json", results / "attribution.json", results / "entry.json",
                      bad / "rehashed.json"], d / "board3", rescore=True, private_seeds=circuit_results["seeds"],
                     references=manifest)  # fmt: skip
    checks = {r["name"]: r["check"] for r in summary["circuit_rows"]}
    assert checks == {"random": "rescored", "attribution": "rescored", "entry": "verified"}
    assert "rehashed.json" in "\n".join(summary["refused"]) and "re-scoring" in "\n".join(summary["refused"])
