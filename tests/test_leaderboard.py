"""The scorer and the board on the benchmark in force's single-head track (``transfer_scorer``),
made small (tests/leaderboard_helpers.py: the 4 x 4 model, one held-out task, 3 seeds, a
stand-in private model): scores recomputed independently, failures, the private seeds, and the
board's verification of result files. The circuit track: tests/test_circuit_leaderboard.py;
attacks: tests/test_attacks.py."""

import functools
import json
import os
import re
import resource
import sys
from pathlib import Path

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
from circuit_gym.ablation import ContrastiveScorer
from circuit_gym.leaderboard.board import RefusedResultError, render, rescore_matches
from circuit_gym.leaderboard.provenance import canonical_json, content_hash
from circuit_gym.leaderboard.references import Reference, manifest_entry
from circuit_gym.leaderboard.scoring import read_private_seeds, write_result
from circuit_gym.leaderboard.transfer_scorer import score_transfer
from circuit_gym.passes import PassCounter

RANDOM_SPEC = "circuit_gym.baselines.random_policy:make_policy"
TRACK = B.transfer_benchmark(B.IN_FORCE).track(B.SINGLE_HEAD)
# The small benchmark's one quadrant: its held-out task on its one (training) model.
QUADRANT = "unseen_task_seen_model"
# Small reference set for the board tests: "ppo" stands in for the real checkpoint-based one.
TEST_REFERENCES = {"random": (RANDOM_SPEC, None), "greedy": ("builtin:greedy", None),
                   "ppo": ("policies_for_tests:good", None), "fixed": ("policies_for_tests:memoriser", None)}  # fmt: skip


def score(name, **kwargs) -> dict:
    """The single-head track in force's scorer (the tests' small benchmark where its fixture is on)."""
    return score_transfer(name, B.SINGLE_HEAD, **kwargs)


@pytest.fixture(scope="module")
def small_benchmark(tmp_path_factory):
    """The benchmark in force on the 4 x 4 model: 3 seeds, 3 s per call, a private disk cache;
    its stand-in private model."""
    with pytest.MonkeyPatch.context() as mp:
        row = small_in_force(mp, tmp_path_factory.mktemp("cache"), seeds=(0, 1, 2), timeout_s=3.0,
                             fast_start=False)  # fmt: skip
        yield {"row": row, "model": private_tiny(tmp_path_factory.mktemp("private"))}


def _recovery_by_hand(rewards, oracle):
    pos = np.asarray(oracle) > 0
    return float(np.sum(np.asarray(rewards)[pos]) / np.sum(np.asarray(oracle)[pos]))


def test_scoring_twice_gives_byte_identical_scores(small_benchmark, tiny_model):
    from circuit_gym.tasks import get_task
    from circuit_gym.tasks.reference import reference_batch

    # "constant" always ranks the same heads first, and its best-of-5 misses the oracle head:
    # its consistency is exactly 1 and its recovery differs from seed to seed
    a = score("constant", policy_spec="policies_for_tests:constant")
    b = score("constant", policy_spec="policies_for_tests:constant")
    assert a["status"] == "scored"
    assert canonical_json(a["scores"]) == canonical_json(b["scores"])
    assert a["content_hash"] == content_hash(a)
    prov = a["provenance"]
    for key in ("package_version", "git_commit", "seeds", "ablation", "lam", "policy_files_hash"):
        assert key in prov
    assert prov["weights_hashes"] == {"tiny": tiny_model.circuit_gym_info.weights_hash}
    s = a["scores"]
    assert {q for q, summary in s["quadrants"].items() if summary} == {QUADRANT}  # one model, one task
    overall = s["quadrants"][QUADRANT]
    assert overall["k5"]["episodes"] == 3
    # recovery is the ratio of sums of the per-episode rewards the file records
    eps = s["episodes"]
    for k in B.KS:
        expected = _recovery_by_hand([e[f"reward_k{k}"] for e in eps], [e["oracle_reward"] for e in eps])
        assert overall[f"k{k}"]["recovery"] == pytest.approx(expected, abs=1e-9)
    assert s["per_model_task"]["tiny"][SMALL_TASK] == overall
    # every episode recomputed from a sweep of its batch built here (with the benchmark's reference
    # text and ablation): best-of-k is the best of the policy's first k heads
    from policies_for_tests import constant_ranking

    row = small_benchmark["row"]
    task = get_task(SMALL_TASK)
    ref = reference_batch(tiny_model, row.reference)
    order = np.argsort(-constant_ranking(tiny_model.cfg.n_layers * tiny_model.cfg.n_heads), kind="stable")

    def by_hand(seed: int) -> dict:
        batch = task.batch(tiny_model, B.SPLIT, B.PROMPTS_PER_EPISODE, seed=seed)
        reward = ContrastiveScorer(tiny_model, task, batch, ref, row.ablation, B.LAM).sweep().reward
        return {"oracle_reward": reward.max(), **{f"reward_k{k}": reward[order[:k]].max() for k in B.KS}}

    assert [(e["model"], e["task"], e["seed"]) for e in eps] == [
        ("tiny", SMALL_TASK, seed) for seed in row.seeds
    ]
    for episode in eps:
        for key, value in by_hand(episode["seed"]).items():
            assert episode[key] == pytest.approx(value, abs=1e-6), key
    # a sandboxed policy sees observations only: it makes no pass of the benchmark's model
    assert s["compute"] == {"forward_passes_per_episode": 0.0, "partial_passes_per_episode": 0.0,
                            "backward_passes_per_episode": 0.0, "episodes": 3}  # fmt: skip
    assert "private" not in a


@pytest.mark.parametrize(
    "factory, reason",
    [
        ("crash_on_load", "loading the policy failed"),
        ("crash", "ZeroDivisionError"),
        ("hang", "time limit"),
        ("wrong_shape", r"expected \d+ scores"),
        ("nan_scores", "NaN"),
        ("a_head_not_scores", r"expected \d+ scores"),
        ("no_rank_heads", "rank_heads"),
    ],
)
def test_bad_policies_get_a_failure_record_not_a_score(small_benchmark, factory, reason):
    result = score(factory, policy_spec=f"policies_for_tests:{factory}")
    assert result["status"] == "failed" and "scores" not in result
    assert re.search(reason, result["failure"]["reason"]), result["failure"]


def test_memory_limit_is_an_rlimit_in_the_child(small_benchmark, monkeypatch):
    # The child imports torch and circuit_gym (~220 MB of private memory measured) before the
    # limit applies; the policy then allocates 800 MB.
    monkeypatch.setattr(B, "MEMORY_LIMIT_MB", 500)
    before = resource.getrlimit(resource.RLIMIT_DATA)
    result = score("hog", policy_spec="policies_for_tests:memory_hog")
    assert result["status"] == "failed"
    reason = result["failure"]["reason"]
    assert "memory limit of 500 MB" in reason and "while ranking heads" in reason and "MemoryError" in reason
    assert resource.getrlimit(resource.RLIMIT_DATA) == before  # the scorer's own limit is untouched
    monkeypatch.undo()
    assert score("after", policy_spec="policies_for_tests:good")["status"] == "scored"  # and it goes on


def test_a_wrong_import_path_is_a_clear_error(small_benchmark):
    with pytest.raises(ValueError, match="package.module:factory"):
        score("x", policy_spec="no_colon_here")
    with pytest.raises(ModuleNotFoundError, match="not_a_module_anywhere"):
        score("x", policy_spec="not_a_module_anywhere:make")
    with pytest.raises(ModuleNotFoundError, match="is not a package"):
        score("x", policy_spec="json.decoder.nothing:make")


@pytest.mark.parametrize("name", ["../evil", "a/b", "", ".hidden", "a..b", "x" * 65, "sp ace", "naïve", None])
def test_bad_entry_names_are_refused_before_scoring(name):
    with pytest.raises(ValueError, match="entry name"):
        score(name, policy_spec="policies_for_tests:good")


def test_constant_policy_matches_an_independent_computation_and_is_imported_only_in_the_child(
    small_benchmark, tiny_model
):
    row = small_benchmark["row"]
    sys.modules.pop("policies_for_tests", None)  # so an import by the scorer would run the module again
    result = score("constant", policy_spec="policies_for_tests:constant")
    assert result["status"] == "scored", result.get("failure")
    assert "policies_for_tests" not in sys.modules
    # the module's import-time code ran, but only in the sandbox's child
    where = score("where", policy_spec="policies_for_tests:where_am_i")
    report = json.loads(where["failure"]["reason"].rsplit("REPORT ", 1)[1].splitlines()[0])
    assert report["imported_in_pid"] == report["pid"] != os.getpid()
    assert "policies_for_tests" not in sys.modules
    from policies_for_tests import constant_ranking

    # Independently: every head's reward from a separately built ContrastiveScorer.
    env = gym.make(f"CircuitDiscovery-Toy-Multi-{B.ENV_VERSION}", split=B.SPLIT, pool_size=max(row.seeds) + 1,
                   batch_size=B.PROMPTS_PER_EPISODE, ablation=row.ablation, lam=B.LAM, model="tiny",
                   reference=row.reference)  # fmt: skip
    n = env.unwrapped.n_total
    order = np.argsort(-constant_ranking(n), kind="stable")
    rewards = {1: [], 5: []}
    oracle = []
    for task in row.held_out_tasks:
        pool = env.unwrapped.pool(task)
        for seed in row.seeds:
            batch = pool.episode(seed).batch
            scorer = ContrastiveScorer(tiny_model, pool.task, batch, pool.reference, pool.ablation, pool.lam)
            per_head = np.array([scorer.reward([h]) for h in range(n)])
            oracle.append(per_head.max())
            for k in (1, 5):
                rewards[k].append(per_head[order[:k]].max())
    episodes = result["scores"]["episodes"]
    assert [e["head_k1"] for e in episodes] == [int(order[0])] * len(episodes)
    assert [e["oracle_reward"] for e in episodes] == pytest.approx(oracle, abs=1e-5)
    for k in (1, 5):
        got = result["scores"]["quadrants"][QUADRANT][f"k{k}"]["recovery"]
        assert got == pytest.approx(_recovery_by_hand(rewards[k], oracle), abs=1e-4)
    # circuit scores: the constant order's circuits run on each episode's batch, by the scorer
    from circuit_gym.circuits import Circuit, CircuitRunner, faithfulness
    from circuit_gym.circuits.curve import MIB_FRACTIONS, circuit_sizes

    pool = env.unwrapped.pool(SMALL_TASK)
    runner = CircuitRunner.for_task(tiny_model, pool.task, pool.episode(0).batch, pool.ablation)
    sizes = circuit_sizes(n)
    circuits = [Circuit.of([int(h) for h in order[:s]], runner.n_layers, runner.n_heads) for s in sizes]
    m = runner.metric([Circuit.empty(runner.n_layers, runner.n_heads), *circuits])
    f = [faithfulness(x, m[0], runner.full_metric) for x in m[1:]]
    fractions = np.array(MIB_FRACTIONS)  # MIB's x axis: the requested fractions, trapezoids
    by_hand = float(np.sum((fractions[1:] - fractions[:-1]) * (np.array(f[1:]) + np.array(f[:-1])) / 2))
    first = episodes[0]
    assert first["cpr"] == pytest.approx(by_hand, abs=1e-6)
    circuits = result["scores"]["quadrants"][QUADRANT]["circuits"]
    assert circuits["cpr"] == pytest.approx(np.mean([e["cpr"] for e in episodes]), abs=1e-9)


def test_what_a_policy_can_learn_about_the_private_seeds(small_benchmark, tmp_path):
    """Told the private seed file's path, and looking at its own and its parent's command line
    and environment, a sandboxed policy learns nothing of the seeds; the result keeps only the
    summaries and the file's hash. (More attempts: tests/test_attacks.py.)"""
    seeds = [912345677, 887766551]
    seed_file = tmp_path / "private_seeds.txt"
    seed_file.write_text("# maintainers only\n" + "\n".join(map(str, seeds)) + "\n")
    told = tmp_path / "checkpoint.json"
    told.write_text(json.dumps({"seed_path": str(seed_file)}))
    private = dict(private_seeds=seed_file, private_model=small_benchmark["model"])
    reader = score(
        "reader", policy_spec="policies_for_tests:seed_file_reader", checkpoint=str(told), **private
    )
    report = json.loads(reader["failure"]["reason"].rsplit("REPORT ", 1)[1].splitlines()[0])
    assert report["pid"] != os.getpid() and report["ppid"] != os.getpid()  # its own PID namespace
    assert report["told_path_content"].startswith("unreadable")
    assert report["parent_cmdline"].startswith("unreadable") or str(seed_file) not in report["parent_cmdline"]
    assert str(seed_file) not in report["own_cmdline"] and str(seed_file) not in json.dumps(
        report["own_environ"]
    )
    assert not set(report["own_environ"]) & {"CIRCUIT_GYM_CACHE", "CIRCUIT_GYM_CACHE_KEY"}
    # what it stores: the hash and the summaries, never the seeds or their episodes
    result = score("entry", policy_spec="policies_for_tests:constant", **private)
    assert result["status"] == "scored", result.get("failure")
    private = result["private"]
    assert private["seed_file_sha256"] == read_private_seeds(seed_file)[1] and private["n_seeds"] == 2
    assert set(private["scores"]) == {"overall", "per_task"}  # summaries, no per-episode rows
    for summary in (private["scores"]["overall"], *private["scores"]["per_task"].values()):
        areas = summary["circuits"]  # areas: means, intervals and counts only
        assert all(isinstance(v, int | float) or v is None or (isinstance(v, list) and len(v) == 2)
                   for v in areas.values()), areas  # fmt: skip
    assert not any(str(s) in json.dumps(result) for s in seeds)


def test_rebuilding_the_public_pool_finds_no_model_in_the_sandbox(small_benchmark, monkeypatch, tmp_path):
    """A policy that rebuilds the public pool with the packaged model (loading it in its sandbox) to
    look up the oracle: before issue 58's third round it scored 1.0 on the public seeds (and below 0.5
    on the private ones); the sandbox now hides the package's weights, so it gets nothing to load."""
    monkeypatch.setattr(B, "CALL_TIMEOUT_S", 120.0)  # the first call rebuilds the pool in the child
    told = tmp_path / "checkpoint.json"
    told.write_text(json.dumps({"public_seeds": max(small_benchmark["row"].seeds) + 1}))
    seed_file = tmp_path / "private.json"
    seed_file.write_text(
        json.dumps(sorted(np.random.default_rng(7).choice(10**9, 3, replace=False).tolist()))
    )
    result = score("cheat", policy_spec="policies_for_tests:pool_rebuilder", checkpoint=str(told),
                   private_seeds=seed_file, private_model=small_benchmark["model"])  # fmt: skip
    assert result["status"] == "failed" and "scores" not in result
    assert "model.safetensors" in result["failure"]["reason"]  # the weights are not there to load


def test_private_seed_files():
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "s"
        for text, seeds in (
            ("[3, 10, 7]", (3, 10, 7)),
            ("3\n\n10 # a comment\n7\n", (3, 10, 7)),
            ("5", (5,)),
        ):
            f.write_text(text)
            assert read_private_seeds(f)[0] == seeds
        f.write_text("[3, 10, 7]")
        import hashlib

        assert read_private_seeds(f)[1] == hashlib.sha256(b"[3, 10, 7]").hexdigest()
        for bad in ("[]", "[1, 1]", "[-4]", "[true]", "[1.5]", "x\n", "123456789 abc"):
            f.write_text(bad)
            with pytest.raises(ValueError, match="private seed file") as err:
                read_private_seeds(f)
            assert "123456789" not in str(err.value)


def test_pass_counter_counts_full_partial_and_backward_passes():
    import torch

    from circuit_gym.baselines.greedy import attribution_scores
    from circuit_gym.envs.pool import clear_caches

    clear_caches()  # a fresh reference engine: greedy has not met its batch in this process
    env = gym.make("CircuitDiscovery-Toy-Multi-v1", split="test", pool_size=2, batch_size=4)
    env.reset(options={"task": "docstring", "batch_index": 0})
    base = env.unwrapped
    engine = base.episode.scorer.task_engine
    with PassCounter(base.model) as counter:
        engine.score([base.n_total - 1])  # restarts at the last layer: one partial pass
    assert counter.counts() == {"forward": 0, "partial": 1, "backward": 0}
    with PassCounter(base.model) as counter, torch.no_grad():
        base.model(engine.ev.tokens)
    assert counter.counts() == {"forward": 1, "partial": 0, "backward": 0}
    with PassCounter(base.model) as counter:
        first = attribution_scores(env)  # one forward and one backward pass each: task, reference
    assert counter.counts() == {"forward": 2, "partial": 0, "backward": 2}
    with PassCounter(base.model) as counter:
        again = attribution_scores(env)  # the reference batch's estimate is kept
    assert counter.counts() == {"forward": 1, "partial": 0, "backward": 1}
    np.testing.assert_allclose(again, first, rtol=1e-6)
    assert not base.model.embed._forward_hooks and not base.model.blocks[-1]._backward_hooks  # removed


@pytest.fixture(scope="module")
def scored(small_benchmark, tmp_path_factory):
    """Result files of a small board: three references, an entry with private scores, an
    entry that calls itself "ppo", and hand-made bad files."""
    d = tmp_path_factory.mktemp("board")
    references = {"random": dict(policy_spec=RANDOM_SPEC), "greedy": dict(builtin="greedy"),
                  "ppo": dict(policy_spec="policies_for_tests:good"),
                  "fixed": dict(policy_spec="policies_for_tests:memoriser")}  # fmt: skip
    model = small_benchmark["model"]

    def scorer(name, **kwargs):  # the private seeds come with the private model
        return score(name, private_model=model if "private_seeds" in kwargs else None, **kwargs)

    results, seeds = score_small_board(scorer, d, references, "policies_for_tests:constant", "ppo", [5, 6])
    edited = functools.partial(edited_result, results / "entry.json")

    def bump_public(r):
        r["scores"]["quadrants"][QUADRANT]["k1"]["recovery"] += 0.123

    def bump_private(r):
        r["private"]["scores"]["overall"]["k1"]["recovery"] += 0.123

    def old_version(r):
        r["provenance"]["benchmark_version"] = "circuit-gym-transfer-v-1"

    bad = d / "bad"
    bad.mkdir()
    for file, r in (("forged", edited("forged", bump_public, rehash=False)),
                    ("rehashed", edited("rehashed", bump_public, rehash=True)),
                    ("private_rehashed", edited("private_rehashed", bump_private, rehash=True)),
                    ("old", edited("old", old_version, rehash=True)),
                    ("evil", edited("../evil", lambda r: None, rehash=True))):  # fmt: skip
        (bad / f"{file}.json").write_text(json.dumps(r))
    return {
        "results": results,
        "bad": bad,
        "seeds": seeds,
        "dir": d,
        "model": model,
        "manifest": manifest_for(results, TEST_REFERENCES, TRACK),
    }


def test_board_shows_only_verified_results_and_says_how_they_were_checked(scored):
    results, bad, manifest = scored["results"], scored["bad"], scored["manifest"]
    out = scored["dir"] / "board"
    summary = render(sorted(results.glob("*.json")) + sorted(bad.glob("*.json")), out, references=manifest)
    ranked = summary["transfer_rows"][TRACK]
    rows = {r["name"]: r for r in ranked}
    assert set(rows) == {"random", "greedy", "ppo", "fixed", "entry", "private_rehashed", "rehashed"}
    refused = "\n".join(summary["refused"])
    assert "forged.json" in refused and "content hash" in refused
    assert "old.json" in refused and "benchmark_version" in refused
    assert "evil.json" in refused and "entry name" in refused
    assert "imposter.json" in refused and f"reserved for the {TRACK} reference entry" in refused
    # without --rescore nothing is more than hash-checked, however it was edited
    assert {r["check"] for r in rows.values()} == {"hash-checked"}
    assert {n for n, r in rows.items() if r["reference"]} == {"random", "greedy", "ppo", "fixed"}
    # the private score ranks: the entries with one first, the others placed on their public column
    entry = json.loads((results / "entry.json").read_text())
    assert rows["entry"]["private_k1"] == entry["private"]["scores"]["overall"]["k1"]["recovery"]
    assert rows["random"]["private_k1"] is None
    with_private = [r["name"] for r in ranked if not r["awaiting"]]
    # the bumped private score first; the entry and its copy with a bumped public score tie (then by name)
    assert with_private == ["private_rehashed", "entry", "rehashed"]
    # compute: attribution patching makes one forward and one backward pass on the task's
    # prompts each episode, plus one of each on the reference batch in the first of the 3
    # scored episodes, however many this process ran before; sandboxed policies make none
    assert rows["greedy"]["passes"] == pytest.approx(4 / 3 + 4 / 3) and rows["entry"]["passes"] == 0
    board = (out / "README.md").read_text()
    table = board.split("Refused")[0]
    assert "forged" not in table and "| 1 |" in table and "hash-checked" in table
    # the white-box reference runs in the scorer's process: not isolated, and the board says so
    assert re.search(r"\| \*\*greedy\*\*[^|]* \| hash-checked \(not isolated\) \|", table), table
    assert re.search(r"\| \*\*ppo\*\*[^|]* \| hash-checked \|", table), table
    assert "- greedy: scored without isolation (white-box reference solver" in table
    assert f'id="{TRACK}"' in (out / "index.html").read_text()

    # the imposter named "ppo" does not stand in for the reference
    with pytest.raises(RefusedResultError, match=rf"{TRACK} track: reference entries missing.*'ppo'"):
        render(
            [results / "random.json", results / "greedy.json", results / "imposter.json"],
            out,
            references=manifest,
        )


def test_rescoring_tells_rescored_from_verified_and_refuses_edits(scored):
    results, bad, seeds = scored["results"], scored["bad"], scored["seeds"]
    manifest = manifest_for(results, {"random": TEST_REFERENCES["random"]}, TRACK)
    paths = [
        results / "random.json",
        results / "entry.json",
        bad / "rehashed.json",
        bad / "private_rehashed.json",
    ]
    summary = render(paths, scored["dir"] / "board2", rescore=True, private_seeds=seeds,
                     private_model=scored["model"], references=manifest)  # fmt: skip
    rows = {r["name"]: r for r in summary["transfer_rows"][TRACK]}
    assert rows["random"]["check"] == "rescored"  # no private scores: never "verified"
    assert rows["entry"]["check"] == "verified"
    refused = "\n".join(summary["refused"])
    assert "rehashed.json" in refused and "re-scoring" in refused
    assert "private_rehashed.json" in refused and "private seeds" in refused
    # without the seed file, the same entry is only rescored
    entry = json.loads((results / "entry.json").read_text())
    assert rescore_matches(results / "entry.json", entry) == "rescored"


def test_rescoring_in_parallel_keeps_each_entrys_own_outcome_in_order(tmp_path):
    from circuit_gym.leaderboard.verification import _rescore_all

    def result(name: str, module: str) -> dict:
        return {
            "name": name,
            "track": TRACK,
            "provenance": {"policy": f"{module}:make_policy", "model": "zoo", "checkpoint": None},
        }

    items = [(tmp_path / f"{m}.json", result(m, f"no_such_module_{m}"), None) for m in ("a", "b", "c")]
    serial = _rescore_all(items, None, False, jobs=1)
    parallel = _rescore_all(items, None, False, jobs=2)  # spawned processes
    for (path, _, _), one, two in zip(items, serial, parallel, strict=True):
        assert isinstance(one, RefusedResultError) and isinstance(two, RefusedResultError)
        assert str(one) == str(two) and str(path) in str(two) and "cannot re-score" in str(two)


# --- Currency by rules, references by the reviewed manifest (issue 30) -------------------------
# Attacks first: forged files of every kind are refused, each with a message that says why.


def _forge(source: Path, out: Path, edit, rehash: bool = True) -> Path:
    """A copy of the result file ``source`` with ``edit`` applied, re-sealed unless ``rehash`` is
    False (anyone can recompute a content hash)."""
    r = json.loads(source.read_text())
    edit(r)
    if rehash:
        r["content_hash"] = content_hash(r)
    out.write_text(json.dumps(r))
    return out


def _refusals(paths, manifest) -> dict[str, str]:
    from circuit_gym.leaderboard.board import collect

    entries, refused, _ = collect(paths, references=manifest)
    by_file = {Path(m.split(":", 1)[0]).name: m for m in refused}
    return {"accepted": {e["name"]: e["board"]["reference"] for e in entries}, **by_file}


def test_forged_result_files_are_refused_with_a_clear_reason(scored, tmp_path):
    results, manifest = scored["results"], scored["manifest"]

    def bump(r):
        r["scores"]["quadrants"][QUADRANT]["k1"]["recovery"] += 0.2

    def set_prov(key, value):
        return lambda r: r["provenance"].__setitem__(key, value)

    forged = [
        _forge(results / "entry.json", tmp_path / "edited.json", bump, rehash=False),
        _forge(results / "greedy.json", tmp_path / "greedy_better.json", bump),  # a reference's name
        _forge(results / "entry.json", tmp_path / "protocol.json", set_prov("scorer_protocol", "circuit-gym-scorer-v0")),
        _forge(results / "entry.json", tmp_path / "no_protocol.json", lambda r: r["provenance"].pop("scorer_protocol")),
        _forge(results / "entry.json", tmp_path / "weights.json", set_prov("weights_hashes", {"tiny": "0" * 16})),
        _forge(results / "ppo.json", tmp_path / "ppo_checkpoint.json", set_prov("checkpoint_digest", "f" * 64)),
        _forge(results / "entry.json", tmp_path / "sample.json", lambda r: r.__setitem__("status", "sample")),
        _forge(results / "entry.json", tmp_path / "seeds.json", set_prov("seeds", [0, 1, 7])),
    ]  # fmt: skip
    got = _refusals(forged, manifest)
    assert got["accepted"] == {}
    assert "content hash mismatch" in got["edited.json"]
    assert f"reserved for the {TRACK} reference entry" in got["greedy_better.json"]
    assert "not the reviewed ones" in got["greedy_better.json"]
    assert "scorer protocol 'circuit-gym-scorer-v0'" in got["protocol.json"]
    assert "before scorer protocols" in got["no_protocol.json"]
    assert "other weights of the public zoo" in got["weights.json"]
    assert "another checkpoint" in got["ppo_checkpoint.json"]
    assert "status 'sample'" in got["sample.json"]
    assert "seeds: [0, 1, 7]" in got["seeds.json"]


def test_a_reference_whose_checkpoint_changed_is_refused_until_rescored(small_benchmark, tmp_path):
    checkpoint = tmp_path / "fixed.json"
    checkpoint.write_text(json.dumps({"scores": list(range(16))}))
    spec = "circuit_gym.baselines.fixed_policy:make_policy"
    path = write_result(
        score("fixed", policy_spec=spec, checkpoint=str(checkpoint)), tmp_path / "fixed.json.result"
    )
    entry = manifest_entry(json.loads(path.read_text()), spec, str(checkpoint), str(path))
    manifest = {TRACK: {"fixed": Reference(TRACK, "fixed", **entry)}}
    assert entry["checkpoint_digest"] is not None
    assert _refusals([path], manifest)["accepted"] == {"fixed": "fixed"}
    checkpoint.write_text(json.dumps({"scores": list(range(16))[::-1]}))  # new weights, same file name
    refusal = _refusals([path], manifest)[path.name]
    assert "changed since the manifest was reviewed" in refusal and "rescore-references" in refusal


def test_package_version_commit_and_source_hash_are_provenance_only(scored, tmp_path, monkeypatch):
    """A version bump, another commit and edited policy sources (another ``policy_files_hash``)
    leave every entry current and every reference recognised."""
    import circuit_gym

    results, manifest = scored["results"], scored["manifest"]
    monkeypatch.setattr(circuit_gym, "__version__", "99.0.0")

    def moved(r):
        r["provenance"].update(package_version="0.0.1", git_commit="0" * 40, policy_files_hash="f" * 16)

    paths = [
        _forge(results / f"{n}.json", tmp_path / f"{n}.json", moved) for n in ("random", "greedy", "entry")
    ]
    assert _refusals(paths, manifest) == {"accepted": {"random": "random", "greedy": "greedy", "entry": None}}


def test_a_docstring_edit_keeps_a_reference_current_and_a_behaviour_change_fails_the_canary(
    small_benchmark, tmp_path, monkeypatch
):
    """A reference policy in a module of its own: its docstring edited on disk, the package
    version bumped, the board still recognises it and the canary passes; its ranking changed,
    the canary fails and says which episode row moved."""
    import circuit_gym
    from circuit_gym.leaderboard.canary import canary

    module = tmp_path / "canary_reference_policy.py"
    source = '''"""Version one of a reference policy."""
import numpy as np


class Policy:
    def rank_heads(self, observation):
        return np.arange(observation.shape[0], dtype=float){tail}


def make():
    return Policy()
'''
    module.write_text(source.format(tail=""))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = "canary_reference_policy:make"
    path = write_result(score("ref", policy_spec=spec), tmp_path / "ref.json")
    reference = Reference(TRACK, "ref", **manifest_entry(json.loads(path.read_text()), spec, None, str(path)))
    manifest = {TRACK: {"ref": reference}}

    module.write_text(source.format(tail="").replace("Version one", "Version one, better documented"))
    monkeypatch.setattr(circuit_gym, "__version__", "99.0.0")
    assert _refusals([path], manifest)["accepted"] == {"ref": "ref"}
    assert canary(reference, episodes=2) == []

    module.write_text(source.format(tail="[::-1]"))  # the ranking reversed: other heads chosen
    found = canary(reference, episodes=2)
    assert found and all(d.startswith(f"{TRACK}/ref: episodes[") for d in found)
    assert any(".head_k1:" in d or ".top5" in d for d in found), found
