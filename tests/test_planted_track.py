"""The Planted track (circuit_gym/leaderboard/planted_scorer.py): the attacks first (a policy that memorised
the public models or hunts for the generator's truth files, a forged result, a policy reading
``info`` mid-episode), then the metrics against independent computations, the IDs, the tables, and
the row in force (``v8-planted``: planted generator v3, six kinds).

The scoring tests shrink a track's row (two public seeds, two secret models, one kind) so that they
run in seconds; what they check does not depend on its size."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from scipy.stats import mannwhitneyu

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym import benchmark as B
from circuit_gym.envs.planted import TRUTH_KEY
from circuit_gym.envs.registration import PLANTED_GENERATOR_V1, PLANTED_TASK_SETS_V1, list_envs
from circuit_gym.leaderboard import planted_scorer as PS
from circuit_gym.leaderboard.isolation import probe
from circuit_gym.leaderboard.paths import RESULTS_DIR
from circuit_gym.leaderboard.planted_tables import load_results, planted_table, planted_tables
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.scoring import write_result
from circuit_gym.leaderboard.tracks import TRACKS
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.models.planted.recovery import precision_recall, ranking_auc
from circuit_gym.models.planted.versions import DEFAULT_VERSION, kinds_of
from circuit_gym.solvers import planted_rules as rules
from circuit_gym.tasks.planted import KINDS, KINDS_V3, task_name

IN_FORCE = B.transfer_benchmark(B.IN_FORCE).track(B.PLANTED)  # the row in force (v8-planted)
ROLES = (
    "previous_token",
    "induction",
    "second_previous",
    "mover",
    "retriever",
    "reader",
    "suppressor",
    "decoy",
)


def shrink(monkeypatch, track: str = PS.TRACK, **changes) -> PS.PlantedBenchmark:
    """The row of ``track`` with ``changes`` (public seeds, private models, kinds) for this test."""
    row = dataclasses.replace(PS.planted_benchmark(track), **changes)
    monkeypatch.setitem(PS.PLANTED_BENCHMARKS, track, row)
    return row


@pytest.fixture
def small_track(monkeypatch) -> PS.PlantedBenchmark:
    """The track on two public seeds, two secret models and the multi-hop kind only."""
    return shrink(monkeypatch, public_seeds=(0, 1), private_models=2, kinds=("multihop",))


@pytest.fixture
def seed_file(tmp_path) -> Path:
    path = tmp_path / "private_seeds.json"
    path.write_text(json.dumps([987654, 5]))
    return path


# ------------------------------------------------------------------ attacks
def test_a_policy_that_memorised_the_public_models_or_hunts_truth_files_fails_on_secret_models(
    small_track, seed_file, tmp_path
):
    if not probe().complete:
        pytest.skip("the policy's isolation is unavailable here: " + "; ".join(probe().missing))
    envs = PS.make_planted_envs(small_track.public_seeds)
    known = {}
    for seed in small_track.public_seeds:  # what an attacker learns offline from the published seeds
        obs, _ = (
            envs["multihop"]
            .unwrapped.inner_for(seed)
            .reset(options={"task": task_name("multihop"), "batch_index": 0})
        )
        known[_fingerprint(obs)] = sorted(truth_of(seed, small_track.generator).circuit("multihop"))
    checkpoint = tmp_path / "thief.json"
    checkpoint.write_text(json.dumps({"kind": "multihop", "fingerprints": known}))
    result = PS.score_planted("thief", policy_spec="planted_attack_policies:truth_thief", checkpoint=str(checkpoint),
                              private_seeds=seed_file)  # fmt: skip
    assert result["status"] == "scored", result.get("failure")
    public, secret = result["scores"]["summary"]["all"], result["private"]["scores"]["summary"]["all"]
    assert public["precision"] == public["recall"] == public["auc"] == 1.0  # the memorised models: perfect
    assert secret["recall"] <= 1 / 3 and secret["auc"] < 0.9  # the secret ones: no truth found
    text = json.dumps(result)
    secret_seeds = PS.private_model_seeds((987654, 5))
    assert not any(str(s) in text for s in (*secret_seeds, 987654))  # never a seed in the result
    cache = Path(__import__("os").environ["CIRCUIT_GYM_CACHE"]) / "planted"
    written = {p.name for p in cache.rglob("seed-*")}
    assert not written & {f"seed-{s}" for s in secret_seeds}  # secret models never reach the disk cache


def _fingerprint(obs) -> str:
    from planted_attack_policies import fingerprint

    return fingerprint(obs)


def test_a_forged_or_edited_result_is_refused(small_track, tmp_path):
    result = PS.score_planted("shallow", builtin="shallow_first")
    good = tmp_path / "shallow.json"
    write_result(result, good)
    assert [r["name"] for r in load_results([good])] == ["shallow"]
    forged = json.loads(good.read_text())
    forged["scores"]["summary"]["all"]["recall"] = 1.0  # a better number, hash left as it was
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    with pytest.raises(ValueError, match="content hash"):
        load_results([tmp_path / "forged.json"])
    resealed = {**forged, "provenance": {**forged["provenance"], "budget": 99}}
    resealed["content_hash"] = content_hash(resealed)  # re-hashed, but under another definition
    (tmp_path / "other.json").write_text(json.dumps(resealed))
    with pytest.raises(ValueError, match=f"another {PS.TRACK}-track definition"):
        load_results([tmp_path / "other.json"])


def test_a_policy_reading_info_mid_episode_finds_no_truth():
    """Every step's info of both planted families, searched for the truth (its key, role names
    and the circuit's head set), holds it only in the step that ends the episode."""
    for env_id in ("CircuitDiscovery-Planted-MultiHop-v0", "CircuitDiscovery-Planted-MultiHop-Circuit-v0"):
        env = gym.make(env_id, seeds=(41,), pool_size=1, batch_size=4, oracle_info=False)
        _, info = env.reset(seed=0)
        truth = truth_of(41).circuit("multihop")
        infos, terminated, truncated, step = [info], False, False, 0
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(sorted(truth)[step % 3] if step < 3 else 143 - step)
            infos.append(info)
            step += 1
        for mid in infos[:-1]:
            text = json.dumps(mid, default=str)
            assert TRUTH_KEY not in mid and not any(role in text for role in ROLES), env_id
        assert {h["head"] for h in infos[-1][TRUTH_KEY]["circuits"]["multihop"]} == truth
        env.close()


# ------------------------------------------------------------------ metrics
def test_auc_equals_mann_whitney_and_a_brute_force_count():
    rng = np.random.default_rng(0)
    for _ in range(50):
        ranking = rng.permutation(144).tolist()
        truth = set(rng.choice(144, size=int(rng.integers(1, 6)), replace=False).tolist())
        pos = [-i for i, h in enumerate(ranking) if h in truth]  # higher = ranked earlier
        neg = [-i for i, h in enumerate(ranking) if h not in truth]
        brute = np.mean([p > q for p in pos for q in neg])
        u = mannwhitneyu(pos, neg).statistic
        assert ranking_auc(ranking, truth) == pytest.approx(brute) == pytest.approx(u / (len(pos) * len(neg)))
    assert ranking_auc([5, 7, 0, 1, 2], {5, 7}) == 1.0 and ranking_auc([0, 1, 2, 5, 7], {5, 7}) == 0.0


def test_precision_and_recall_by_hand_and_bad_input():
    assert precision_recall([1, 2, 3, 4], {2, 4, 9}) == (0.5, 2 / 3)
    assert precision_recall([], {1}) == (0.0, 0.0)
    with pytest.raises(ValueError, match="twice"):
        ranking_auc([1, 1, 2], {1})
    with pytest.raises(ValueError, match="leaves out"):
        ranking_auc([1, 2], {3})


def test_scores_equal_a_recomputation_from_the_episode_rows_and_are_deterministic(small_track):
    first = PS.score_planted("memo", builtin="memoriser")
    again = PS.score_planted("memo", builtin="memoriser")
    assert first["scores"] == again["scores"]
    for row in first["scores"]["episodes"]:
        truth = truth_of(row["seed"], small_track.generator).circuit(row["kind"])
        assert len(row["order"]) == rules.PROPOSED and row["ranking"][: len(row["order"])] == row["order"]
        pos = [i for i, h in enumerate(row["ranking"]) if h in truth]
        neg = [i for i, h in enumerate(row["ranking"]) if h not in truth]
        assert row["auc"] == pytest.approx(np.mean([p < q for p in pos for q in neg]))
        assert row["recall"] == pytest.approx(len(set(row["order"]) & truth) / len(truth))
    recalls = [r["recall"] for r in first["scores"]["episodes"]]
    assert first["scores"]["summary"]["all"]["recall"] == pytest.approx(np.mean(recalls))


def test_the_memoriser_of_the_public_models_is_at_chance_on_fresh_seeds():
    """Its ranking (how often each head was a circuit head in the public models) against
    seeds it has not seen: the AUC of a coin, and the top heads rarely circuit heads."""
    public = [truth_of(s).circuit(k) for s in range(20) for k in KINDS]
    counts = rules.circuit_frequency(public, 144)
    order = np.lexsort((np.arange(144), -counts)).tolist()
    fresh = [truth_of(s).circuit(k) for s in range(5000, 5100) for k in KINDS]
    aucs = [ranking_auc(order, t) for t in fresh]
    recalls = [precision_recall(order[: rules.PROPOSED], t)[1] for t in fresh]
    assert 0.4 < np.mean(aucs) < 0.6 and np.mean(recalls) < 0.1
    assert np.mean([ranking_auc(order, t) for t in public]) > np.mean(aucs)  # it did memorise something


def test_private_model_seeds_are_a_function_of_the_first_seed_and_never_public():
    for track in PS.PLANTED_BENCHMARKS:
        row = PS.planted_benchmark(track)
        seeds = PS.private_model_seeds((123, 4), track)
        assert seeds == PS.private_model_seeds((123, 99), track) != PS.private_model_seeds((124, 4), track)
        assert len(set(seeds)) == row.private_models and not set(seeds) & set(row.public_seeds)


def test_choose_column_finds_a_planted_informative_column():
    rng = np.random.default_rng(1)
    observations, truths = [], []
    for _ in range(4):
        obs = rng.random((144, 13))
        truth = set(rng.choice(144, 3, replace=False).tolist())
        obs[sorted(truth), 6] = -5.0  # column 6, read with the minus sign, puts the truth first
        observations.append(obs)
        truths.append(truth)
    assert rules.choose_column(observations, truths) == (6, -1.0, 1.0)


# ------------------------------------------------------------------ IDs and tables
def test_every_planted_id_makes_resets_and_steps_on_its_generator_version():
    """v0: generator version 2's four kinds (a retired board's models); v1: version 3's six kinds."""
    rows = [
        r for family in ("planted", "planted-circuit") for r in list_envs(all_versions=True, family=family)
    ]
    ids = {v: [r["id"] for r in rows if r["version"] == v] for v in (0, 1)}
    assert len(ids[0]) == 2 * len(KINDS) and len(ids[1]) == 2 * len(KINDS_V3) == len(rows) - len(ids[0])
    assert all(PS.env_id(k) in ids[1] for k in KINDS_V3)  # the track in force plays v1
    new_kinds = [i for i in ids[1] if "-SelfRepair-" in i or "-And-" in i]  # v1's others: their specs (below)
    for version, seed, generator in ((0, 7, 2), (1, 0, 3)):  # seeds whose models the other tests build too
        for env_id in ids[version] if version == 0 else new_kinds:
            env = gym.make(env_id, seeds=(seed,), pool_size=1, batch_size=4, oracle_info=False)
            obs, info = env.reset(seed=0)
            assert env.observation_space.contains(obs) and info["model"] == f"planted-v{generator}-{seed}"
            obs, reward, *_ = env.step(0)
            assert env.observation_space.contains(obs) and np.isfinite(reward)
            env.close()


def test_the_planted_ids_pin_their_generator_version_and_its_kinds():
    """The registry writes v1's generator version out; it is the row in force's, and every ID's spec
    builds its line's version (v0: none given, the default, 2)."""
    assert (
        PLANTED_GENERATOR_V1
        == B.transfer_benchmark(B.IN_FORCE).planted_generator
        == PS.planted_benchmark(IN_FORCE).generator
    )
    assert sorted(t for (t,) in PLANTED_TASK_SETS_V1.values()) == sorted(
        map(task_name, kinds_of(PLANTED_GENERATOR_V1))
    )
    rows = list_envs(all_versions=True)
    planted = [r for r in rows if r["family"] in ("planted", "planted-circuit", "planted-edges")]
    assert len(planted) == 3 * (len(KINDS) + len(KINDS_V3))  # single head, circuit building, edges
    for r in planted:
        generator = gym.spec(r["id"]).kwargs.get("version", DEFAULT_VERSION)
        assert generator == {0: DEFAULT_VERSION, 1: PLANTED_GENERATOR_V1}[r["version"]], r["id"]
        assert r["tasks"][0].removeprefix("planted_") in kinds_of(generator)
    # knock-out (issue 60) starts at v0 on generator 3, one ID per kind
    knockout = [r for r in rows if r["family"] == "planted-knockout"]
    assert sorted(r["tasks"][0].removeprefix("planted_") for r in knockout) == sorted(
        kinds_of(PLANTED_GENERATOR_V1)
    )
    for r in knockout:
        assert gym.spec(r["id"]).kwargs.get("version", DEFAULT_VERSION) == PLANTED_GENERATOR_V1, r["id"]


def test_the_tables_show_each_entry_on_public_and_secret_models(small_track, seed_file, tmp_path):
    path = tmp_path / "random.json"
    write_result(PS.score_planted("random", builtin="random", private_seeds=seed_file), path)
    results = load_results([path])
    summary = results[0]["scores"]["summary"]["multihop"]
    cell = f"{summary['precision']:.2f} / {summary['recall']:.2f} / {summary['auc']:.2f}"
    assert f"| random | {cell} | {cell} |" in planted_table(results)  # the row's kind (multi-hop) and all
    assert planted_table(results, secret=True).count("| random |") == 1
    assert "Secret models (2 per kind" in planted_tables([path])


def test_the_committed_results_are_sealed_current_and_their_summaries_follow_from_their_episodes():
    paths = sorted(TRACKS[IN_FORCE].results_dir.glob("*.json"))  # the board's folder of the track
    results = load_results(paths, IN_FORCE)
    assert len(results) == len(paths) >= 7  # every committed file passes the hash and definition checks
    tables = planted_tables(paths, IN_FORCE)
    row = PS.planted_benchmark(IN_FORCE)
    for r in results:
        assert tables.count(f"| {r['name']} |") == 2  # public and secret
        episodes = r["scores"]["episodes"]
        assert len(episodes) == len(row.kinds) * len(row.public_seeds)
        for kind in row.kinds:
            rows = [e for e in episodes if e["kind"] == kind]
            summary = r["scores"]["summary"][kind]
            for metric in ("precision", "recall", "auc"):
                assert summary[metric] == pytest.approx(np.mean([e[metric] for e in rows]))


# ------------------------------------------------------------------ the row in force
def test_the_planted_row_in_force_plays_generator_3s_kinds_on_their_ids():
    new = PS.definition(IN_FORCE)
    # the benchmark in force's row is every default
    assert PS.TRACK == IN_FORCE and PS.definition() == new
    assert (
        new["kinds"] == list(KINDS_V3)
        and new["generator_version"] == B.transfer_benchmark(B.IN_FORCE).planted_generator
    )
    assert new["public_seeds"] == list(range(20)) and new["private_models"] == 20
    for env_id, kind in zip(new["env_ids"], KINDS_V3, strict=True):
        spec = gym.spec(env_id)
        assert (spec.kwargs["tasks"], spec.kwargs["inner"], spec.kwargs["version"]) == (
            (task_name(kind),),
            "circuit",
            3,
        )
    # another salt than the edge track's draw (planted_scorer.EDGE_DRAW, a retired board's): other
    # secret models
    assert not set(PS.private_model_seeds((5,))) & set(PS.private_model_seeds((5,), IN_FORCE))
    row = TRACKS[IN_FORCE]
    assert (row.benchmark, row.definition()) == (B.IN_FORCE, new)
    assert row.results_dir.relative_to(RESULTS_DIR) == Path(B.IN_FORCE, "planted")
    assert row.episodes(0) == 6 * 20 and row.episodes(1) == 6 * 40


def test_the_planted_row_scores_builtins_on_all_six_kinds_against_generator_3s_truth(monkeypatch, tmp_path):
    """random (a full run of a one-seed row) and attribution (a sample of it) on every kind of
    seed 0's version-3 model; each episode's scores recomputed from its circuit and ranking against
    version 3's truth, where the self-repair circuit holds its backup head (its AUC against the
    primary heads alone, or against version 2's truth of the same seed, is another number)."""
    row = shrink(monkeypatch, IN_FORCE, public_seeds=(0,))
    random = PS.score_planted("random", builtin="random", track=IN_FORCE)
    white = PS.score_planted("attribution", builtin="attribution", track=IN_FORCE, sample=len(row.jobs()))
    assert (random["status"], white["status"]) == ("scored", "sample")
    assert set(random["scores"]["summary"]) == {*KINDS_V3, "all"} and random["track"] == IN_FORCE
    assert random["provenance"]["generator_version"] == 3 and random["provenance"]["kinds"] == list(KINDS_V3)
    truth = truth_of(0, 3)
    backups = truth.backups("self_repair")
    assert backups and backups < truth.circuit("self_repair")
    for result in (random, white):
        episodes = result["scores"]["episodes"]
        assert [(e["kind"], e["seed"]) for e in episodes] == row.jobs()
        for e in episodes:
            circuit = truth.circuit(e["kind"])
            assert e["recall"] == pytest.approx(len(set(e["order"]) & circuit) / len(circuit))
            assert e["auc"] == pytest.approx(_auc_by_count(e["ranking"], circuit))
        repair = next(e for e in episodes if e["kind"] == "self_repair")
        assert _auc_by_count(repair["ranking"], truth.circuit("self_repair") - backups) != pytest.approx(
            repair["auc"]
        )
        assert any(_auc_by_count(e["ranking"], truth_of(0, 2).circuit(e["kind"])) != pytest.approx(e["auc"])
                   for e in episodes if e["kind"] in KINDS)  # fmt: skip
    path = tmp_path / "random.json"
    write_result(random, path)
    assert "| entry | " + " | ".join((*KINDS_V3, "all")) + " |" in planted_tables([path], track=IN_FORCE)


def test_the_memoriser_of_the_public_models_is_at_chance_on_secret_models():
    """The memoriser builtin as the row in force builds it (how often each head was a circuit head of
    any kind in the public version-3 models) against the secret models one seed file draws."""
    row = PS.planted_benchmark(IN_FORCE)
    solver, _ = PS.reference_solver("memoriser", {}, IN_FORCE)
    scores = solver.scores(None, np.zeros((144, len(rules.COLUMNS))), {})
    order = np.lexsort((np.arange(144), -scores)).tolist()
    secret = [
        truth_of(s, 3).circuit(k) for s in PS.private_model_seeds((987654, 5), IN_FORCE) for k in row.kinds
    ]
    public = [truth_of(s, 3).circuit(k) for s in row.public_seeds for k in row.kinds]
    aucs = [ranking_auc(order, t) for t in secret]
    recalls = [precision_recall(order[: rules.PROPOSED], t)[1] for t in secret]
    assert 0.4 < np.mean(aucs) < 0.6 and np.mean(recalls) < 0.1
    assert np.mean([ranking_auc(order, t) for t in public]) > np.mean(aucs) + 0.1  # it memorised version 3's


def _auc_by_count(ranking: list[int], truth: frozenset[int]) -> float:
    """The share of (circuit head, other head) pairs the ranking orders circuit head first."""
    pos = [i for i, h in enumerate(ranking) if h in truth]
    neg = [i for i, h in enumerate(ranking) if h not in truth]
    return float(np.mean([p < q for p in pos for q in neg]))
