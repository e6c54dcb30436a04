"""Protocol 2's ranking through the scorer's own path (builtin_play, entry_played, transfer_row)
on one tiny cell (``tiny``, IOI, one test batch): a constant entry is the episode's fixed random
order, not EAP-IG's, and once the track offers every edge, two entries that agree on the old
candidates but differ outside them score differently (issue 57's "Done when")."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from circuit_gym.edges.entry_ranking import fixed_order
from circuit_gym.envs.edge_building import EdgeBuildingEnv
from circuit_gym.leaderboard.edge_benchmark import EDGE_BENCHMARKS
from circuit_gym.leaderboard.edge_scorer import builtin_play, entry_played, episode_key, transfer_row

K, BUDGET, TASK = 64, 4, "ioi"


def _env(candidates: int) -> EdgeBuildingEnv:
    return EdgeBuildingEnv(model="tiny", tasks=(TASK,), split="test", candidates=candidates, budget=BUDGET,
                           pool_size=1, batch_size=8, ablation="resample")  # fmt: skip


@pytest.fixture(scope="module")
def env() -> EdgeBuildingEnv:
    return _env(K)


def _row(env: EdgeBuildingEnv, name: str) -> tuple[dict, object]:
    bench = dataclasses.replace(EDGE_BENCHMARKS["v8"], candidates=K, budget=BUDGET)
    played = builtin_play(name, bench)(env, TASK, 0)
    return transfer_row("tiny", TASK, 0, played), played


def test_a_constant_entry_is_scored_as_the_fixed_random_order_not_as_eap_ig(env):
    constant, played = _row(env, "constant")
    eap_ig, _ = _row(env, "eap_ig")
    candidates = env.state.candidates.tolist()
    tie = fixed_order(env.graph, episode_key(env, TASK, 0))
    by_fixed_order = sorted(candidates, key=lambda e: tie[e])
    # its ranking of the candidates and its circuit are the fixed order's, nothing of EAP-IG's
    assert played.ranking.order()[:K].tolist() == by_fixed_order
    assert list(played.circuit) == by_fixed_order[:BUDGET]
    assert by_fixed_order != candidates  # (the environment lists the candidates by |EAP-IG|)
    # the same episode played by an entry that ranks the candidates in the fixed order itself
    # (positive scores: its signed and absolute orders agree)
    env.reset(options={"task": TASK, "batch_index": 0})
    same = transfer_row(
        "tiny", TASK, 0, entry_played(env, TASK, 0, [], (env.graph.n_edges - tie)[env.state.candidates], 0)
    )
    assert constant["cpr_log"] == pytest.approx(same["cpr_log"], abs=1e-12)
    assert constant["cmd_log"] == pytest.approx(same["cmd_log"], abs=1e-12)
    # and not EAP-IG's score (under protocol 1 a constant policy had EAP-IG's order: test_edge_protocol2.py)
    assert abs(constant["cpr_log"] - eap_ig["cpr_log"]) > 1e-3


def test_entries_agreeing_on_the_old_candidates_differ_once_every_edge_is_offered(env):
    """With every edge a candidate (K = N) the log axis reaches 5% of the graph, past the old K'
    candidates: two entries that give the old candidates the same scores and order the other edges
    oppositely rank differently there, and their cpr_log differ. With the old K' offered, neither
    can rank those edges and the axis ends within K' (test_edge_protocol2.py)."""
    n = env.graph.n_edges
    env = _env(n)
    env.reset(options={"task": TASK, "batch_index": 0})
    assert len(env.state.candidates) == n  # every edge a candidate, listed by |EAP-IG|
    old = 8  # the old candidate set: the first 8 (fewer than the axis' largest size, 5% of N)
    assert old < int(0.05 * n)
    scores = np.linspace(1.0, 0.0, n)  # the first `old` candidates far above the rest in both entries
    scores[:old] += 10.0
    other = scores.copy()
    other[old:] = scores[old:][::-1]
    one = transfer_row("tiny", TASK, 0, entry_played(env, TASK, 0, [], scores, 0))
    two = transfer_row("tiny", TASK, 0, entry_played(env, TASK, 0, [], other, 0))
    sizes = [int(key.removeprefix("f_")) for key in one["budgeted"]]
    within, beyond = [s for s in sizes if s <= old], [s for s in sizes if s > old]
    assert within and beyond
    # the same circuits up to the old set's size, other circuits beyond it
    assert all(one["budgeted"][f"f_{s}"] == two["budgeted"][f"f_{s}"] for s in within)
    assert any(abs(one["budgeted"][f"f_{s}"] - two["budgeted"][f"f_{s}"]) > 1e-6 for s in beyond)
    assert abs(one["cpr_log"] - two["cpr_log"]) > 1e-6


def test_the_planted_auc_over_the_candidates_reads_only_the_entrys_order():
    """candidate_auc counts, among the candidates, the (truth, other) pairs the entry orders right;
    truth edges outside the candidates only lower truth_in_candidates, the same for every entry."""
    from types import SimpleNamespace

    from circuit_gym.edges.graph import EdgeGraph
    from circuit_gym.edges.ranking import EdgeRanking
    from circuit_gym.leaderboard.edge_scorer import candidate_auc

    graph = EdgeGraph(2, 4)
    rng = np.random.default_rng(3)
    candidates = rng.permutation(graph.n_edges)[:12]
    truth_edges = [int(candidates[1]), int(candidates[5]), int(candidates[9])]
    outside = int(next(e for e in range(graph.n_edges) if e not in set(candidates.tolist())))
    truth = frozenset(graph.names[e] for e in [*truth_edges, outside])
    scores = rng.normal(size=graph.n_edges)
    scores[outside] = 100.0  # first in the whole order: counts for nothing here
    played = SimpleNamespace(state=SimpleNamespace(graph=graph, candidates=candidates),
                             ranking=EdgeRanking.from_array(scores, "r", graph))  # fmt: skip
    got = candidate_auc(played, truth)  # type: ignore[arg-type]
    inside = set(truth_edges)
    others = [e for e in candidates.tolist() if e not in inside]
    wins = sum(float(scores[t] > scores[o]) for t in inside for o in others)
    assert got["auc_candidates"] == pytest.approx(wins / (len(inside) * len(others)))
    assert got["truth_in_candidates"] == pytest.approx(3 / 4)
