"""The Planted track (circuit_gym/leaderboard/planted_scorer.py): the attacks first (a policy that memorised
the public models or hunts for the generator's truth files, a forged result, a policy reading
``info`` mid-episode), then the metrics against independent computations, the IDs, the tables.

The scoring tests shrink the track (two public seeds, two secret models, one kind) so that they
run in seconds; what they check does not depend on its size."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from scipy.stats import mannwhitneyu

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym.envs.planted import TRUTH_KEY
from circuit_gym.envs.registration import list_envs
from circuit_gym.leaderboard import planted_scorer as PS
from circuit_gym.leaderboard.isolation import probe
from circuit_gym.leaderboard.planted_tables import load_results, planted_table, planted_tables
from circuit_gym.leaderboard.scoring import write_result
from circuit_gym.leaderboard.tracks import TRACKS
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.models.planted.recovery import precision_recall, ranking_auc
from circuit_gym.solvers import planted_rules as rules
from circuit_gym.tasks.planted import KINDS, task_name

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


@pytest.fixture
def small_track(monkeypatch):
    """The track on two public seeds, two secret models and the multi-hop kind only."""
    monkeypatch.setattr(PS, "PUBLIC_SEEDS", (0, 1))
    monkeypatch.setattr(PS, "N_PRIVATE_MODELS", 2)
    monkeypatch.setattr(PS, "KINDS", ("multihop",))


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
    envs = PS.make_planted_envs(PS.PUBLIC_SEEDS)
    known = {}
    for seed in PS.PUBLIC_SEEDS:  # what an attacker learns offline from the published seeds
        obs, _ = (
            envs["multihop"]
            .unwrapped.inner_for(seed)
            .reset(options={"task": task_name("multihop"), "batch_index": 0})
        )
        known[_fingerprint(obs)] = sorted(truth_of(seed).circuit("multihop"))
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
    resealed["content_hash"] = PS.content_hash(resealed)  # re-hashed, but under another definition
    (tmp_path / "other.json").write_text(json.dumps(resealed))
    with pytest.raises(ValueError, match="another planted-track definition"):
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
        truth = truth_of(row["seed"]).circuit(row["kind"])
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
    seeds = PS.private_model_seeds((123, 4))
    assert seeds == PS.private_model_seeds((123, 99)) != PS.private_model_seeds((124, 4))
    assert len(set(seeds)) == PS.N_PRIVATE_MODELS and not set(seeds) & set(PS.PUBLIC_SEEDS)


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
def test_every_planted_id_makes_resets_and_steps():
    ids = [r["id"] for family in ("planted", "planted-circuit") for r in list_envs(family=family)]
    assert len(ids) == 8 and all(PS.env_id(k) in ids for k in KINDS)
    for env_id in ids:
        env = gym.make(env_id, seeds=(7,), pool_size=1, batch_size=4, oracle_info=False)
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs) and info["model"] == "planted-v2-7"
        obs, reward, *_ = env.step(0)
        assert env.observation_space.contains(obs) and np.isfinite(reward)
        env.close()


def test_the_tables_show_each_entry_on_public_and_secret_models(small_track, seed_file, tmp_path):
    path = tmp_path / "random.json"
    write_result(PS.score_planted("random", builtin="random", private_seeds=seed_file), path)
    results = load_results([path])
    summary = results[0]["scores"]["summary"]["multihop"]
    cell = f"{summary['precision']:.2f} / {summary['recall']:.2f} / {summary['auc']:.2f}"
    assert f"| random | - | {cell} | - | - |" in planted_table(results)  # multi-hop only: the others are -
    assert planted_table(results, secret=True).count("| random |") == 1
    assert "Secret models (2 per kind" in planted_tables([path])


def test_the_committed_results_are_sealed_current_and_their_summaries_follow_from_their_episodes():
    paths = sorted(TRACKS["planted"].results_dir.glob("*.json"))  # the board's folder of the track
    results = load_results(paths)
    assert len(results) == len(paths) >= 7  # every committed file passes the hash and definition checks
    tables = planted_tables(paths)
    for r in results:
        assert tables.count(f"| {r['name']} |") == 2  # public and secret
        episodes = r["scores"]["episodes"]
        assert len(episodes) == len(KINDS) * len(PS.PUBLIC_SEEDS)
        for kind in KINDS:
            rows = [e for e in episodes if e["kind"] == kind]
            summary = r["scores"]["summary"][kind]
            for metric in ("precision", "recall", "auc"):
                assert summary[metric] == pytest.approx(np.mean([e[metric] for e in rows]))
