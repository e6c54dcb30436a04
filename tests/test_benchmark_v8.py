"""Benchmark v8's rows (issues 55, 57, 60): zoo v3 in the transfer frame fixed for zoo v1. v8 must
differ from zoo v1's committed results in its models only (plus its own edge protocol, secret
planted draw and knock-out track), its split must
follow the odd/even rule on zoo v3's names, and every model it holds out must serve held-out tasks
by its own card (read here from the shipped files, not from the benchmark module)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym import benchmark as B
from circuit_gym.embedded import MODEL_SETS
from circuit_gym.leaderboard import tracks
from circuit_gym.leaderboard.edge_benchmark import EDGE_BENCHMARKS, MIN_PRIVATE_EPISODES, MIN_PUBLIC_EPISODES
from circuit_gym.leaderboard.paths import REPO_ROOT

ZOO_DIR = REPO_ROOT / "circuit_gym" / "models" / "zoo"
MODELS_KEYS = {"benchmark_version", "track", "train_models", "held_out_models", "zoo_generation"}


def _gated(member: str) -> set[str]:
    return set(json.loads((ZOO_DIR / member / "card_metrics.json").read_text())["suite"]["included"])


# zoo v1's committed transfer results (a retired board's data, kept in docs/results/transfer/): the
# definitions they were scored under, fixed before any zoo was trained
ZOO_V1_RESULTS = {B.SINGLE_HEAD: "docs/results/transfer/seeds/ppo_seed3.json",
                  B.CIRCUIT: "docs/results/transfer/seeds/circuit_ppo_seed2.json"}  # fmt: skip


@pytest.mark.parametrize("kind", [B.SINGLE_HEAD, B.CIRCUIT])
def test_v8_differs_from_zoo_v1s_scored_definition_in_its_models_only(kind):
    recorded = json.loads((REPO_ROOT / ZOO_V1_RESULTS[kind]).read_text())["provenance"]
    v8 = B.transfer_definition(kind, "v8")
    differing = {k for k in v8 if recorded.get(k) != v8[k]}
    assert differing == MODELS_KEYS and "zoo_generation" not in recorded  # zoo v1's files predate the key
    assert v8["zoo_generation"] == "v3" and v8["track"] == f"v8-{kind}"


def test_zoo_v3_is_split_by_the_odd_even_rule_on_its_names():
    v8 = B.transfer_benchmark("v8")
    members = sorted(
        p.name for p in ZOO_DIR.iterdir() if p.name.startswith("zoo") and 9 <= int(p.name[3:]) <= 12
    )
    assert members == sorted(MODEL_SETS["zoo-v3"]) == sorted(v8.public_models())
    assert all(int(m[3:]) % 2 == 1 for m in v8.train_models) and all(
        int(m[3:]) % 2 == 0 for m in v8.held_out_models
    )
    assert MODEL_SETS[v8.train_set] == v8.train_models and MODEL_SETS["zoo-v3-held-out"] == v8.held_out_models
    assert all(not set(v8.public_models()) & set(MODEL_SETS[z]) for z in ("zoo", "zoo-v2"))


def test_every_held_out_member_serves_at_least_two_held_out_tasks_by_its_card():
    v8 = B.transfer_benchmark("v8")
    for member in v8.held_out_models:
        served = _gated(member) & set(v8.held_out_tasks)
        assert len(served) >= 2, (member, served)
        assert set(v8.tasks_of(member, v8.held_out_tasks)) == served


def test_v8s_edge_row_is_protocol_2_on_v8s_models_with_full_cells():
    row = EDGE_BENCHMARKS["v8"]
    v8 = B.transfer_benchmark("v8")
    assert (
        row.definition()["edge_protocol"] == 2
        and row.held_out_models == v8.held_out_models
        and row.tasks == v8.held_out_tasks
    )
    # counted here from the cards, not from the row's own helper
    transfer = sum(len(_gated(m) & set(v8.held_out_tasks)) for m in v8.held_out_models) * len(row.seeds)
    assert row.public_cells()["transfer"] == transfer >= MIN_PUBLIC_EPISODES
    assert row.private_cells(2)["transfer"] >= MIN_PRIVATE_EPISODES


def test_v8_is_the_board_version_in_force_and_the_only_one():
    bench = tracks.BENCHMARKS["v8"]
    names = [t.name for t in bench.tracks()]
    assert names == ["v8-single-head", "v8-circuit", "v8-planted", "v8-edges", "v8-knockout"]
    assert tracks.IN_FORCE == "v8" and not any(tracks.not_ranking(n) for n in names)
    assert tracks.DEFAULT_TRACK == "v8-single-head"
    assert list(tracks.BENCHMARKS) == ["v8"] and set(tracks.TRACKS) == set(names)
    for retired in tracks.REMOVED:  # every retired track, refused naming the version in force
        with pytest.raises(ValueError, match="is retired: the board ranks on benchmark v8"):
            tracks.track(retired)
    knockout = tracks.track("v8-knockout")
    assert knockout.definition()["benchmark_version"] == "circuit-gym-knockout-v8"
    trained = knockout.episodes(0) - 6 * 3  # zoo v3's held-out members' verified pairs
    assert trained >= 6 and knockout.episodes(1) == 6 * (3 + 8) + trained


def test_v8s_secret_planted_models_are_not_those_of_the_retired_rows():
    """The retired Planted rows' private scores are published: a seed file must draw other secret
    models for v8 (its own salt) than those rows drew (their salts, kept in RETIRED_SALTS)."""
    import dataclasses

    from circuit_gym.leaderboard.knockout_scorer import knockout_benchmark
    from circuit_gym.leaderboard.planted_scorer import PLANTED_BENCHMARKS, RETIRED_SALTS, private_model_seeds

    assert knockout_benchmark("v8-knockout").planted_draw == "v8-planted"
    file_seeds = (12345,)
    v8 = private_model_seeds(file_seeds, "v8-planted")
    row = PLANTED_BENCHMARKS["v8-planted"]
    assert row.salt not in RETIRED_SALTS
    for salt in RETIRED_SALTS:
        retired = dataclasses.replace(row, track="retired", salt=salt)
        with pytest.MonkeyPatch.context() as mp:
            mp.setitem(PLANTED_BENCHMARKS, "retired", retired)
            old = private_model_seeds(file_seeds, "retired")
        assert len(v8) == len(old) and not set(old) & set(v8)
    assert not set(v8) & set(range(20))  # never a public seed


def test_zoo_v3_ids_draw_zoo_v3_members_and_serve_their_gated_tasks():
    ids = [i for i in gym.registry if i.startswith("CircuitDiscovery-ZooV3-")]
    assert len(ids) == 40  # ten task parts x single head, circuit, edges, knock-out
    env = gym.make("CircuitDiscovery-ZooV3-Capital-v0", pool_size=1)
    try:
        seen = set()
        for seed in range(12):
            _, info = env.reset(seed=seed)
            seen.add(info["model"])
        assert seen <= set(MODEL_SETS["zoo-v3"]) and len(seen) >= 2
        assert all("capital" in _gated(m) for m in seen)
        _, info = env.reset(seed=0, options={"model": "zoo10"})
        assert info["model"] == "zoo10" and np.isfinite(env.unwrapped.action_masks()).all()
    finally:
        env.close()
