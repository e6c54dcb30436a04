"""The leaderboard's circuit track in force (``transfer_scorer``, made small by
tests/leaderboard_helpers.py: the 4 x 4 model, one held-out task, 3 seeds, budget 3): a
circuit-building policy's score recomputed independently, determinism, and the board's table of
the track. Attacks on the track: tests/test_attacks.py."""

import json
import re

import gymnasium as gym
import numpy as np
import pytest
from leaderboard_helpers import (
    SMALL_TASK,
    edited_result,
    manifest_for,
    private_tiny,
    score_small_board,
    small_in_force,
)

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.board import RefusedResultError, render
from circuit_gym.leaderboard.provenance import canonical_json, content_hash
from circuit_gym.leaderboard.transfer_scorer import score_transfer
from circuit_gym.reporting.transfer_tables import transfer_heading
from circuit_gym.stats import mean_ci95

RANDOM_SPEC = "circuit_gym.baselines.circuit_random_policy:make_policy"
TRACK = B.transfer_benchmark(B.IN_FORCE).track(B.CIRCUIT)
QUADRANT = "unseen_task_seen_model"  # the small benchmark's one: its held-out task on its one model
# Small reference set for the board test: random (sandboxed) and attribution (white-box).
TEST_REFERENCES = {"random": (RANDOM_SPEC, None), "attribution": ("builtin:attribution", None)}


def score_circuit(name, **kwargs) -> dict:
    """The circuit track in force's scorer (the small benchmark where its fixture is on)."""
    return score_transfer(name, B.CIRCUIT, **kwargs)


@pytest.fixture(scope="module")
def small_track(tmp_path_factory):
    """The small benchmark, 3 seeds, 5 s per call; its stand-in private model."""
    with pytest.MonkeyPatch.context() as mp:
        small_in_force(mp, tmp_path_factory.mktemp("cache"), seeds=(0, 1, 2), timeout_s=5.0, fast_start=False)
        yield {"model": private_tiny(tmp_path_factory.mktemp("private"))}


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
    assert result["track"] == TRACK and result["content_hash"] == content_hash(result)
    prov = result["provenance"]
    assert prov["benchmark_version"] == B.transfer_benchmark(B.IN_FORCE).benchmark_version(B.CIRCUIT)
    assert prov["seeds"] == [0, 1, 2]
    assert (prov["budget"], prov["alpha"], prov["start"]) == (3, B.CIRCUIT_ALPHA, "empty")
    assert {"package_version", "git_commit", "weights_hashes", "policy_files_hash"} <= set(prov)

    # By hand: the circuit-building env played with the policy's rule written out here, the
    # ranking (insertion order, then the rest by the policy's scores) run on a runner of the batch.
    env = gym.make("CircuitDiscovery-Toy-Multi-Circuit-v0", model="tiny", split="test", pool_size=3,
                   batch_size=8, budget=3, alpha=B.CIRCUIT_ALPHA, oracle_info=False)  # fmt: skip
    n = env.unwrapped.n_total
    order = [int(h) for h in np.argsort(-constant_ranking(n), kind="stable")]
    sizes = circuit_sizes(n)
    fractions = np.array(MIB_FRACTIONS)
    episodes = result["scores"]["episodes"]
    assert [(e["model"], e["task"], e["seed"]) for e in episodes] == [
        ("tiny", SMALL_TASK, s) for s in (0, 1, 2)
    ]
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
    quadrants = result["scores"]["quadrants"]
    assert {q for q, summary in quadrants.items() if summary} == {QUADRANT}
    summary = quadrants[QUADRANT]
    cpr, ci = mean_ci95([e["cpr"] for e in episodes])
    assert summary["cpr"] == pytest.approx(cpr) and summary["cpr_ci95"] == pytest.approx(ci)
    assert summary["forward_passes"] == 6 and summary["episodes"] == 3
    cell = result["scores"]["per_model_task"]["tiny"][SMALL_TASK]
    assert cell["cmd"] == pytest.approx(np.mean([e["cmd"] for e in episodes]))


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

    def scorer(name, **kwargs):  # the private seeds come with the private model
        return score_circuit(name, private_model=small_track["model"] if "private_seeds" in kwargs else None,
                             **kwargs)  # fmt: skip

    results, seeds = score_small_board(
        scorer, d, references, "policies_for_tests:circuit_constant", "random", [5, 6, 7]
    )
    entry = json.loads((results / "entry.json").read_text())
    bad = d / "bad"
    bad.mkdir()

    def bump_cpr(r):
        r["scores"]["quadrants"][QUADRANT]["cpr"] += 0.5

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
    manifest = manifest_for(results, TEST_REFERENCES, TRACK)
    return {"results": results, "bad": bad, "seeds": seeds, "dir": d, "entry": entry, "manifest": manifest,
            "model": small_track["model"]}  # fmt: skip


@pytest.mark.slow
def test_the_board_verifies_circuit_results_and_renders_their_table(circuit_results):
    results, bad, d = circuit_results["results"], circuit_results["bad"], circuit_results["dir"]
    manifest = circuit_results["manifest"]
    summary = render(
        sorted(results.glob("*.json")) + sorted(bad.glob("*.json")), d / "board", references=manifest
    )
    ranked = summary["transfer_rows"][TRACK]
    rows = {r["name"]: r for r in ranked}
    assert set(rows) == {"random", "attribution", "entry", "rehashed"}
    refused = "\n".join(summary["refused"])
    assert "forged.json" in refused and "content hash" in refused
    assert "old.json" in refused and "budget" in refused
    assert "imposter.json" in refused and f"reserved for the {TRACK} reference entry" in refused
    assert rows["random"]["reference"] == "random" and rows["attribution"]["white_box"]
    entry = circuit_results["entry"]
    private = entry["private"]["scores"]["overall"]
    assert rows["entry"][QUADRANT] == entry["scores"]["quadrants"][QUADRANT]["cpr"]
    assert rows["entry"]["private"] == private["cpr"] and rows["random"]["private"] is None
    # ranked on the private model: the two entries scored there first (tied: by name), then the rest
    assert [r["name"] for r in ranked][:2] == ["entry", "rehashed"]
    readme = (d / "board" / "README.md").read_text()
    table = readme.split(f"### {transfer_heading(TRACK)}", 1)[1]
    assert f"| 1 | entry | hash-checked | {private['cpr']:.3f} [" in table
    # white-box: it runs in the scorer's process
    assert re.search(r"\| \*\*attribution\*\*[^|]* \| hash-checked \(not isolated\) \|", table), table
    single_head = B.transfer_benchmark(B.IN_FORCE).track(B.SINGLE_HEAD)
    assert transfer_heading(single_head) not in readme  # no entries there: no section
    html = (d / "board" / "index.html").read_text()
    assert f'id="{TRACK}"' in html and transfer_heading(TRACK) in html
    # references are required once the track has entries
    with pytest.raises(RefusedResultError, match=rf"{TRACK} track: reference entries missing.*'attribution'"):
        render([results / "random.json", results / "entry.json"], d / "board2", references=manifest)
    # --rescore: the same scores again; with the private seed file and model, "verified"
    summary = render([results / "random.json", results / "attribution.json", results / "entry.json",
                      bad / "rehashed.json"], d / "board3", rescore=True, private_seeds=circuit_results["seeds"],
                     private_model=circuit_results["model"], references=manifest)  # fmt: skip
    checks = {r["name"]: r["check"] for r in summary["transfer_rows"][TRACK]}
    assert checks == {"random": "rescored", "attribution": "rescored", "entry": "verified"}
    assert "rehashed.json" in "\n".join(summary["refused"]) and "re-scoring" in "\n".join(summary["refused"])
