"""Benchmark v8's rows (issues 55, 57, 60): zoo v3 in v7's frame. v8 must differ from v7 in its
models only (plus its own edge protocol, secret planted draw and knock-out track), its split must
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


@pytest.mark.parametrize("kind", [B.SINGLE_HEAD, B.CIRCUIT])
def test_v8_differs_from_v7_in_its_models_only(kind):
    v7, v8 = B.transfer_definition(kind, "v7"), B.transfer_definition(kind, "v8")
    assert set(v7) == set(v8)
    assert {k for k in v7 if v7[k] != v8[k]} == MODELS_KEYS
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
    assert not set(v8.public_models()) & set(B.transfer_benchmark("v7").public_models())


def test_every_held_out_member_serves_at_least_two_held_out_tasks_by_its_card():
    v8 = B.transfer_benchmark("v8")
    for member in v8.held_out_models:
        served = _gated(member) & set(v8.held_out_tasks)
        assert len(served) >= 2, (member, served)
        assert set(v8.tasks_of(member, v8.held_out_tasks)) == served


def test_v8s_edge_row_is_protocol_2_on_v8s_models_with_full_cells():
    row = EDGE_BENCHMARKS["v8"]
    v8 = B.transfer_benchmark("v8")
    assert row.protocol == 2 and row.held_out_models == v8.held_out_models and row.tasks == v8.held_out_tasks
    # counted here from the cards, not from the row's own helper
    transfer = sum(len(_gated(m) & set(v8.held_out_tasks)) for m in v8.held_out_models) * len(row.seeds)
    assert row.public_cells()["transfer"] == transfer >= MIN_PUBLIC_EPISODES
    assert row.private_cells(2)["transfer"] >= MIN_PRIVATE_EPISODES


def test_v8_is_the_board_version_in_force_and_v7_is_retired():
    bench = tracks.BENCHMARKS["v8"]
    names = [t.name for t in bench.tracks()]
    assert names == ["v8-single-head", "v8-circuit", "v8-planted", "v8-edges", "v8-knockout"]
    assert tracks.IN_FORCE == "v8" and not any(tracks.not_ranking(n) for n in names)
    assert tracks.DEFAULT_TRACK == "v8-single-head"
    v7 = [t.name for t in tracks.BENCHMARKS["v7"].tracks()]
    assert v7 and all((tracks.not_ranking(n) or "").startswith("retired") for n in v7)
    knockout = tracks.track("v8-knockout")
    assert knockout.definition()["benchmark_version"] == "circuit-gym-knockout-v8"
    trained = knockout.episodes(0) - 6 * 3  # zoo v3's held-out members' verified pairs
    assert trained >= 6 and knockout.episodes(1) == 6 * (3 + 8) + trained


def test_v8s_secret_planted_models_are_not_v7s():
    from circuit_gym.leaderboard.knockout_scorer import knockout_benchmark
    from circuit_gym.leaderboard.planted_scorer import private_model_seeds

    assert knockout_benchmark("v8-knockout").planted_draw == "v8-planted"
    file_seeds = (12345,)
    v7, v8 = private_model_seeds(file_seeds, "v7-planted"), private_model_seeds(file_seeds, "v8-planted")
    assert len(v8) == len(v7) and not set(v7) & set(v8)
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
