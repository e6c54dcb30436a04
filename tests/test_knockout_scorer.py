"""The knock-out track's scorer (circuit_gym/leaderboard/knockout_scorer.py) against independent
computations: one tiny cell (public planted seed 0, the self-repair kind, K = 3, 8 prompts), its
area and truth scores recomputed here from the reference's order with the stacked prefix curve and
an exact greedy search written here; the greedy cache used and checked; the private record sealed;
the paired differences against numpy. The scoring tests shrink the track's row (one public seed,
one secret model, one kind) so that they run in a minute; what they check does not depend on its size."""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import numpy as np
import pytest

from circuit_gym.circuits import Circuit
from circuit_gym.circuits.knockout_scores import ranking_auc, relative_area
from circuit_gym.envs.registration import planted_knockout_id
from circuit_gym.leaderboard import knockout_scorer as KS
from circuit_gym.leaderboard.scoring import PRIVATE_RECORD_FIELDS, PRIVATE_SCORE_FIELDS
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.solvers.knockout import conditional, knockout_curve

TINY = "tiny-knockout"
SECRET = "# maintainers only\n734512987\n"


@pytest.fixture
def tiny(monkeypatch, tmp_path) -> KS.KnockOutBenchmark:
    """The v8 row on public seed 0, one secret model, the self-repair kind, K = 3, 8 prompts."""
    row = dataclasses.replace(KS.KNOCKOUT_V8, track=TINY, public_seeds=(0,), private_models=1,
                              kinds=("self_repair",), steps=3, batch_size=8, trained_models=())  # fmt: skip
    monkeypatch.setitem(KS.KNOCKOUT_BENCHMARKS, TINY, row)
    return row


def exact_greedy(state, k: int) -> np.ndarray:
    """Exact greedy knock-out written here: each step every free head is tried on top of the order
    (``runner.metric`` of the circuits without them, not the environment's ``knockout_metrics``),
    the lowest metric kept (ties: the lower head id); the metric after each step."""
    runner = state.runner
    n = runner.n_layers * runner.n_heads
    full, order, metrics = frozenset(range(n)), [], []
    for _ in range(k):
        free = [h for h in range(n) if h not in order]
        tried = runner.metric(
            [Circuit(full - frozenset([*order, h]), runner.n_layers, runner.n_heads) for h in free]
        )
        j = int(np.argmin(np.asarray(tried, dtype=np.float64)))
        order.append(free[j])
        metrics.append(float(tried[j]))
    return np.asarray(metrics)


def independent_cell(row: KS.KnockOutBenchmark, seed: int) -> dict:
    """Conditional attribution's order on the cell, its stacked prefix curve and exact greedy's,
    from a fresh environment without memo (``cache=False``)."""
    env = gym.make(planted_knockout_id("self_repair"), seeds=(seed,), split=row.split, pool_size=1,
                   batch_size=row.batch_size, steps=row.steps, cache=False)  # fmt: skip
    try:
        env.reset(options={"model_seed": seed, "batch_index": row.batch_index})
        state = env.unwrapped.current.unwrapped.state
        order = list(conditional(state, row.steps).order)
        return {"order": order, "curve": knockout_curve(state, order), "greedy": exact_greedy(state, row.steps),
                "clean": state.clean_metric}  # fmt: skip
    finally:
        env.close()


@pytest.fixture
def scored(tiny, tmp_path):
    """Conditional attribution scored on the tiny cell, no greedy cache (greedy computed)."""
    result = KS.score_knockout(
        "ca", TINY, builtin="conditional_attribution", greedy_cache=tmp_path / "none.json"
    )
    assert result["status"] == "scored", result.get("failure")
    return result


def test_the_area_of_conditional_attribution_is_the_independent_one(tiny, scored):
    """The scorer's curve and area against the prefix curve of the reference's order and an exact
    greedy search written here; its truth scores against the planted truth read here (backup counted)."""
    [episode] = scored["scores"]["episodes"]
    cell = independent_cell(tiny, 0)
    assert episode["curve"] == pytest.approx((cell["curve"] / cell["clean"]).tolist(), rel=1e-5, abs=1e-6)
    expected = relative_area(cell["curve"], cell["greedy"], cell["clean"], tiny.steps)
    assert np.isfinite(expected) and episode["relative_area"] == pytest.approx(expected, rel=1e-5)
    truth = truth_of(0, tiny.generator)
    circuit, backups = set(truth.circuit("self_repair")), set(truth.backups("self_repair"))
    assert backups  # the self-repair kind has its backup
    ablated = set(cell["order"])
    assert episode["recall"] == pytest.approx(len(ablated & circuit) / len(circuit))
    assert episode["precision"] == pytest.approx(len(ablated & circuit) / len(ablated))
    assert episode["backup_recall"] == pytest.approx(len(ablated & backups) / len(backups))
    assert episode["auc"] == pytest.approx(ranking_auc(cell["order"], circuit, 144))
    assert episode["lm_passes"] == 2 * tiny.steps  # the reference's own count: 2 passes a step
    # against itself, the paired difference is 0 on every metric
    versus = scored["scores"]["versus"]["conditional_attribution"]["all"]
    assert versus["relative_area"] == 0 and versus["episodes"] == 1


def test_the_greedy_cache_is_used_and_checked(tiny, scored, tmp_path):
    """A cache built by ``build_greedy_cache`` gives the same scores as greedy computed at scoring
    time; an entry that is not this batch's (its clean metric changed) stops the scoring."""
    path = tmp_path / "greedy.json"
    curves = KS.build_greedy_cache(tiny, path)
    assert list(curves) == [KS.greedy_key(tiny, "self_repair", 0)]
    cached = KS.score_knockout("ca", TINY, builtin="conditional_attribution", greedy_cache=path)
    assert cached["scores"]["summary"] == scored["scores"]["summary"]
    stale = json.loads(path.read_text())
    stale["curves"][KS.greedy_key(tiny, "self_repair", 0)]["clean_metric"] *= 2
    path.write_text(json.dumps(stale))
    with pytest.raises(ValueError, match="greedy cache"):
        KS.score_knockout("ca", TINY, builtin="conditional_attribution", greedy_cache=path)


def test_the_private_record_keeps_scores_and_intervals_only(tiny, tmp_path):
    """With a secret seed file: the private part holds the ranking scores (area against greedy,
    backup recall, recall, precision, AUC), their intervals, the paired differences and the counts;
    never a seed, an order, a curve or a pass count."""
    seeds = tmp_path / "secret.txt"
    seeds.write_text(SECRET)
    result = KS.score_knockout("ca", TINY, builtin="conditional_attribution", private_seeds=seeds,
                               greedy_cache=tmp_path / "none.json")  # fmt: skip
    assert result["status"] == "scored", result.get("failure")
    private = result["private"]
    assert set(private) <= PRIVATE_RECORD_FIELDS | {"scores"} and private["n_models"] == 1
    leaves = []

    def walk(tree: dict) -> None:
        for key, value in tree.items():
            walk(value) if isinstance(value, dict) else leaves.append(key)

    walk(private["scores"])
    assert set(leaves) <= PRIVATE_SCORE_FIELDS
    summary = private["scores"]["summary"]["self_repair"]
    assert {"relative_area", "backup_recall", "recall", "precision", "auc"} <= set(summary)
    assert np.isfinite(summary["relative_area"]) and summary["episodes"] == 1
    assert "734512987" not in json.dumps(result)
    assert "lm_passes" not in json.dumps(private) and "curve" not in json.dumps(private)


def test_paired_differences_against_numpy():
    """Adjacent entries' paired differences of the public episodes, matched by (kind, seed), against
    numpy's mean and scipy's t-interval of the differences by hand."""
    from scipy import stats

    a = [0.9, 0.8, 1.0, 0.7]
    b = [0.5, 0.6, 0.4, 0.65]
    keys = [("self_repair", 0), ("self_repair", 1), ("and", 0), ("and", 1)]

    def result(values):
        return {"status": "scored", "scores": {"episodes": [{"kind": k, "seed": s, "relative_area": v}
                                                            for (k, s), v in zip(keys, values, strict=True)]}}  # fmt: skip

    # b's episodes listed in another order: matched by key, not by position
    shuffled = result(b)
    shuffled["scores"]["episodes"].reverse()
    [d] = KS.paired_table({"low": shuffled, "high": result(a)})
    diff = np.subtract(a, b)
    ci = stats.t.interval(0.95, len(diff) - 1, loc=diff.mean(), scale=stats.sem(diff))
    assert (d["above"], d["below"], d["n"]) == ("high", "low", 4)
    assert d["mean"] == pytest.approx(diff.mean()) and d["ci95"] == pytest.approx(list(ci))


def test_v8s_row():
    """``v8-knockout``: generator 3's six kinds on public seeds, secret models of the v8 Planted
    draw, K = 8, and zoo v3's held-out members on the tasks whose recorded pair their cards verify
    (read here from the shipped card files); its definition names every episode setting; an
    unknown track is refused."""
    import json

    from circuit_gym.leaderboard.paths import REPO_ROOT

    row = KS.knockout_benchmark("v8-knockout")
    assert row is KS.KNOCKOUT_V8 and len(row.kinds_played) == 6 and row.planted_draw == "v8-planted"
    assert row.trained_models == ("zoo10", "zoo12")
    verified = {}
    for member in row.trained_models:
        card = json.loads(
            (REPO_ROOT / "circuit_gym" / "models" / "zoo" / member / "card_metrics.json").read_text()
        )
        verified[member] = [t for t, p in card["backup_pairs"].items()
                            if p.get("measures", {}).get("meets_bar") and t in card["suite"]["included"]]  # fmt: skip
    assert {m: list(KS.trained_tasks(m)) for m in row.trained_models} == verified
    d = row.definition()
    assert d["track"] == "v8-knockout" and d["steps"] == 8 and d["generator_version"] == 3
    assert d["env_ids"][4] == "CircuitDiscovery-Planted-SelfRepair-KnockOut-v0"
    assert d["trained_models"] == verified
    trained = sum(len(v) for v in verified.values())
    assert trained >= 6  # zoo10: 5 verified pairs, zoo12: 3 (docs/zoo.md)
    assert row.episodes(False) == 6 * len(row.public_seeds) + trained
    assert row.episodes(True) == 6 * (len(row.public_seeds) + row.private_models) + trained
    with pytest.raises(ValueError, match="knock-out track"):
        KS.knockout_benchmark("v9-knockout")
    with pytest.raises(ValueError, match="versus"):
        dataclasses.replace(row, versus=("nope",))


def test_the_committed_greedy_cache_covers_the_public_episodes():
    """Every public episode of the draft row has its greedy curve committed (K values, each below the
    clean metric: greedy never raises it), so scoring never recomputes them."""
    row = KS.KNOCKOUT_V8
    curves = KS.read_greedy_cache()
    for kind in row.kinds_played:
        for seed in row.public_seeds:
            entry = curves[KS.greedy_key(row, kind, seed)]
            assert len(entry["order"]) == len(entry["metrics"]) == row.steps == len(set(entry["order"]))
            assert entry["metrics"][0] < entry["clean_metric"]


def test_the_track_plays_the_scores_an_entry_asks_for_and_never_measures_the_last_observation(tiny):
    """What an entry reads decides what it pays: the track's environment measures the scores the
    entry asked for (recorded in its result's definition), never the episode's unread last
    observation; an unknown choice is refused before anything runs."""
    env = KS.make_env(tiny, "self_repair", (0,), "attribution")
    try:
        inner = KS._inner(env, 0)
        assert inner.scores == "attribution" and inner.observe_last is False
        play = KS.play_actions(inner, "planted_self_repair", 0, lambda obs, mask: int(np.argmax(mask[:-1])))
        assert play.passes == 2 * tiny.steps
    finally:
        env.close()
    assert KS.KnockOutRun(TINY, scores="attribution").definition()["observation_scores"] == "attribution"
    with pytest.raises(ValueError, match="scores must be one of"):
        KS.KnockOutRun(TINY, scores="eap_ig")


@pytest.mark.slow
def test_the_trained_part_scores_an_entry_against_the_recorded_pair(monkeypatch, tmp_path):
    """A trained model's episode (zoo9, successor: its recorded pair meets the bar) is scored against
    the pair its training log records (read here from the raw file), greedy's curve cached under its
    own key, and its row keyed for pairing by (kind, model, task)."""
    import json

    from circuit_gym.envs.knockout import KnockOutEnv
    from circuit_gym.models.loading import embedded_dir
    from circuit_gym.solvers.knockout import REFERENCES

    track = "tiny-knockout-trained"
    row = dataclasses.replace(KS.KNOCKOUT_V8, track=track, public_seeds=(0,), kinds=("induction",), steps=2,
                              batch_size=8, trained_models=("zoo9",))  # fmt: skip
    monkeypatch.setitem(KS.KNOCKOUT_BENCHMARKS, track, row)
    from circuit_gym.leaderboard import knockout_benchmark as KB

    for module in (KS, KB):  # the row's episodes (KB) and the scorer's environments (KS)
        monkeypatch.setattr(module, "trained_tasks", lambda member: ("successor",))
    cache = tmp_path / "greedy.json"
    KS.build_greedy_cache(row, cache)
    assert KS.trained_greedy_key(row, "zoo9", "successor") in KS.read_greedy_cache(cache)
    result = KS.score_knockout("ref", track, builtin="conditional_attribution", greedy_cache=cache)
    assert result["status"] == "scored"
    (got,) = [r for r in result["scores"]["episodes"] if r["kind"] == KS.TRAINED_KIND]
    assert (got["model"], got["task"]) == ("zoo9", "successor")
    log = json.loads((embedded_dir("zoo9") / "training_log.json").read_text())
    (pair,) = [p for p in log["backup_pairs"] if p["task"] == "successor"]
    env = KnockOutEnv(model="zoo9", tasks=("successor",), split="test", pool_size=1, batch_size=8, steps=2,
                      ablation="resample")  # fmt: skip
    env.reset(options={"task": "successor", "batch_index": 0})
    order = REFERENCES["conditional_attribution"](env.state, 2).order
    env.close()
    truth = {int(pair["primary"]), int(pair["backup"])}
    assert got["recall"] == pytest.approx(len(truth & set(order)) / 2)
    assert got["backup_recall"] == float(int(pair["backup"]) in order)
    assert KS.episode_key(got) == (KS.TRAINED_KIND, "zoo9", "successor")
    assert result["scores"]["summary"][KS.TRAINED_KIND]["episodes"] == 1


def _stand_in_private_models(tmp_path, members: tuple[str, ...]) -> list:
    """Copies of public zoo members' directories (weights, card, training log) as private models,
    each with its own seed file: what the maintainers' sealed files open into."""
    import shutil

    from circuit_gym.leaderboard.private_models import PrivateModel
    from circuit_gym.models.loading import embedded_dir

    out = []
    for i, member in enumerate(members):
        directory = tmp_path / f"private{i}"
        shutil.copytree(embedded_dir(member), directory)
        seeds = tmp_path / f"seeds{i}"
        seeds.write_text(f"{734512987 + i}\n")
        out.append(PrivateModel(directory, seeds))
    return out


def test_private_models_are_the_rows_count_distinct_and_verified(tmp_path):
    """Refused before anything plays: another count than the row's, one model given twice, a model
    whose card verifies no backup pair, private models on a row without a private zoo."""
    pm = _stand_in_private_models(tmp_path, ("zoo9", "zoo11"))
    assert KS.KNOCKOUT_V8.private_trained_models == 2
    with pytest.raises(ValueError, match="ranks on 2 private models"):
        KS.KnockOutRun(KS.KNOCKOUT_V8.track, private_model=pm[:1])
    with pytest.raises(ValueError, match="same weights"):
        KS.KnockOutRun(KS.KNOCKOUT_V8.track, private_model=[pm[0], pm[0]]).check((1,))
    card = json.loads((pm[1].directory / "card_metrics.json").read_text())
    for pair in card["backup_pairs"].values():
        pair.setdefault("measures", {})["meets_bar"] = False
    (pm[1].directory / "card_metrics.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match="verifies no backup pair"):
        KS.KnockOutRun(KS.KNOCKOUT_V8.track, private_model=pm).check((1,))
    bare = dataclasses.replace(KS.KNOCKOUT_V8, track="no-private-zoo", private_zoo=None)
    KS.KNOCKOUT_BENCHMARKS["no-private-zoo"] = bare
    try:
        with pytest.raises(ValueError, match="plays no private model"):
            KS.KnockOutRun("no-private-zoo", private_model=pm)
    finally:
        del KS.KNOCKOUT_BENCHMARKS["no-private-zoo"]


@pytest.mark.slow
def test_the_private_trained_part_scores_each_private_model_on_its_verified_tasks(monkeypatch, tmp_path):
    """Two stand-in private models (copies of zoo9 and zoo11) each play the first task their card
    verifies; the sealed record names each model's weights (its card's hash), seed file (SHA-256 of
    its bytes, computed here) and tasks, and its one episode's backup recall is the one recomputed
    here from conditional attribution's order on the public twin and the pair its training log records."""
    import hashlib

    from circuit_gym.envs.knockout import KnockOutEnv
    from circuit_gym.models.trained_truth import verified_backup_tasks
    from circuit_gym.solvers.knockout import REFERENCES

    track = "tiny-knockout-private"
    row = dataclasses.replace(KS.KNOCKOUT_V8, track=track, public_seeds=(0,), private_models=1,
                              kinds=("self_repair",), steps=2, batch_size=8, trained_models=())  # fmt: skip
    monkeypatch.setitem(KS.KNOCKOUT_BENCHMARKS, track, row)
    monkeypatch.setattr(KS, "verified_backup_tasks", lambda card: verified_backup_tasks(card)[:1])
    pm = _stand_in_private_models(tmp_path, ("zoo9", "zoo11"))
    result = KS.score_knockout("ca", track, builtin="conditional_attribution",
                               greedy_cache=tmp_path / "none.json", private_model=pm)  # fmt: skip
    assert result["status"] == "scored", result.get("failure")
    private = result["private"]
    assert private["seed_file_sha256"] == hashlib.sha256(pm[0].seeds.read_bytes()).hexdigest()
    assert private["scores"]["summary"][KS.TRAINED_KIND]["episodes"] == 2
    models = private["private_models"]
    assert len(models) == 2
    for member, model, record in zip(("zoo9", "zoo11"), pm, models, strict=True):
        card = json.loads((model.directory / "card_metrics.json").read_text())
        task = verified_backup_tasks(card)[0]
        assert record["weights_hash"] == card["weights_hash"] and record["tasks"] == [task]
        assert record["seed_file_sha256"] == hashlib.sha256(model.seeds.read_bytes()).hexdigest()
        log = json.loads((model.directory / "training_log.json").read_text())
        (pair,) = [p for p in log["backup_pairs"] if p["task"] == task]
        env = KnockOutEnv(model=member, tasks=(task,), split="test", pool_size=1, batch_size=8, steps=2,
                          ablation="resample")  # fmt: skip
        env.reset(options={"task": task, "batch_index": 0})
        order = REFERENCES["conditional_attribution"](env.state, 2).order
        env.close()
        trained = record["scores"]["summary"][KS.TRAINED_KIND]
        assert trained["episodes"] == 1
        assert trained["backup_recall"] == pytest.approx(float(int(pair["backup"]) in order))
    assert set(private) <= PRIVATE_RECORD_FIELDS | {"scores"}


def test_private_greedy_curves_are_sealed_reused_and_checked(tiny, tmp_path, monkeypatch):
    """A private curve is computed once, written sealed (no plain number in the file), read back by
    a later run with the key (greedy not run again: it would raise), refused with another key, and
    an entry that is not this batch's (its clean metric) is refused rather than used."""
    from cryptography.fernet import Fernet

    from circuit_gym.leaderboard.custody import CustodyError

    key, other = tmp_path / "board.key", tmp_path / "other.key"
    key.write_bytes(Fernet.generate_key())
    other.write_bytes(Fernet.generate_key())
    sealed = tmp_path / "curves.enc"
    env = KS.make_env(tiny, "self_repair", (0,))
    try:
        inner = KS._inner(env, 0)
        first = KS.PrivateCurves()
        assert first.attach(sealed, key) == 0
        metrics = first.metrics(inner, tiny, "planted_self_repair")
        assert len(metrics) == tiny.steps and sealed.exists()
        assert str(round(metrics[0], 4))[:5] not in sealed.read_text()
        monkeypatch.setattr(KS, "greedy_entry", lambda *a: pytest.fail("greedy ran again"))
        later = KS.PrivateCurves()
        assert later.attach(sealed, key) == 1
        assert later.metrics(inner, tiny, "planted_self_repair") == metrics
        with pytest.raises(CustodyError, match="another key"):
            KS.PrivateCurves().attach(sealed, other)
        (entry,) = later.curves.values()
        entry["clean_metric"] += 1.0
        with pytest.raises(ValueError, match="not this batch's"):
            later.metrics(inner, tiny, "planted_self_repair")
    finally:
        env.close()


def test_a_knockout_entrys_observation_scores_reach_its_manifest_row_and_its_rescore():
    """The knock-out agent was scored on attribution scores alone (``--scores attribution``, recorded
    as ``observation_scores``); its manifest row must say so, or the canary replays it on the track's
    default scores (attribution and EAP-IG), which cost other LM passes (8 where it counted 4)."""
    import json

    from circuit_gym.envs.features import DEFAULT_FEATURES
    from circuit_gym.envs.knockout import SCORES
    from circuit_gym.leaderboard.paths import RESULTS_DIR
    from circuit_gym.leaderboard.references import load_manifest, manifest_entry, recorded_features

    assert recorded_features({"observation_scores": "attribution"}) == "attribution"
    assert recorded_features({"observation_scores": SCORES[0]}) == DEFAULT_FEATURES  # the track's default
    assert recorded_features({"features": "causal"}) == "causal" and recorded_features({}) == DEFAULT_FEATURES
    agent = json.loads((RESULTS_DIR / "v8" / "knockout" / "knockout_ppo.json").read_text())
    assert agent["provenance"]["observation_scores"] == "attribution"
    entry = manifest_entry(agent, agent["provenance"]["policy"], None, "r.json")
    assert entry["features"] == "attribution" == load_manifest()["v8-knockout"]["knockout_ppo"].features
