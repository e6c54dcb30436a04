"""The edge track's protocol 2 (issue 57; circuit_gym/edges/entry_ranking.py, benchmark v8's row of
circuit_gym/leaderboard/edge_benchmark.py, transfer_row in edge_scorer.py): the entry decides
every edge the ranking metric reads, a constant entry is a random one, the row counts enough
episodes, and its committed results were scored under its definition."""

from __future__ import annotations

import numpy as np
import pytest

from circuit_gym.edges.entry_ranking import entry_order, entry_rankings, fixed_order
from circuit_gym.edges.graph import EdgeGraph
from circuit_gym.edges.ranking import EdgeRanking
from circuit_gym.leaderboard import edge_benchmark as EB


def test_the_entry_order_by_hand():
    # 8 edges, candidates 5, 2, 7, 0 with scores 3, -4, 9, 1; edge 7 added; a tie order given
    tie = np.array([3, 7, 1, 0, 6, 2, 4, 5])  # rank of edge e: edge 3 first, then 2, 5, 0, 6, 7, 4, 1
    signed = entry_order(8, [5, 2, 7, 0], [7], [3.0, -4.0, 9.0, 1.0], tie)
    absolute = entry_order(8, [5, 2, 7, 0], [7], [3.0, -4.0, 9.0, 1.0], tie, absolute=True)
    # added first; then 5 (3), 0 (1), 2 (-4); then the non-candidates 3, 6, 4, 1 by the tie order
    assert signed.tolist() == [7, 5, 0, 2, 3, 6, 4, 1]
    assert absolute.tolist() == [7, 2, 5, 0, 3, 6, 4, 1]  # |-4| before 3: the entry's own sign decides
    # equal scores: the tie order among the candidates (2, 5, 0, 7: ranks 1, 2, 3, 5)
    flat = entry_order(8, [5, 2, 7, 0], [], [1.0, 1.0, 1.0, 1.0], tie)
    assert flat.tolist() == [2, 5, 0, 7, 3, 6, 4, 1]


def test_a_constant_entry_follows_the_fixed_random_order_not_eap_igs():
    """The attack of issue 57: constant scores (an entry that ranks nothing). Under protocol 1 (the
    retired edge tracks') the candidates kept EAP-IG's order, the environment's rows (|EAP-IG|
    descending); under protocol 2 they follow the episode's fixed order, and so does every other
    edge."""
    graph = EdgeGraph(2, 4)
    rng = np.random.default_rng(0)
    eap_ig = rng.normal(size=graph.n_edges)
    candidates = np.argsort(-np.abs(eap_ig))[:20]
    constant = np.zeros(len(candidates))
    tie = fixed_order(graph, "weights/task/0")
    signed, absolute = entry_rankings(graph, candidates, [], constant, tie)
    assert signed.order()[:20].tolist() == sorted(candidates.tolist(), key=lambda e: tie[e])
    assert signed.order()[:20].tolist() != candidates.tolist()  # not EAP-IG's order
    outside = [e for e in signed.order().tolist() if e not in set(candidates.tolist())]
    assert outside == sorted(outside, key=lambda e: tie[e])  # nor its signs anywhere else
    assert absolute.order().tolist() == signed.order().tolist()
    # the order is the same for every entry of the episode and another for another episode
    assert np.array_equal(fixed_order(graph, "weights/task/0"), tie)
    assert not np.array_equal(fixed_order(graph, "weights/task/1"), tie)


def test_entries_that_agree_on_the_candidates_score_alike_on_the_ranking_metric(tiny_model):
    """Issue 57's "two policies that agree on every edge but differ outside the candidates": an
    entry cannot rank an edge outside them, and the ranking metric cannot read one. Two rankings
    with the same candidates in the same order and every other edge in another order: cpr_log and
    cmd_log equal (the log axis ends at K edges), MIB's linear CPR not (it reads past K)."""
    from circuit_gym.circuits.area import cpr
    from circuit_gym.edges.curve import edge_faithfulness_curves
    from circuit_gym.edges.patching import EdgePatcher
    from circuit_gym.edges.small_circuits import cmd_log, cpr_log, log_axis_fractions
    from circuit_gym.tasks import get_task

    task = get_task("ioi")
    patcher = EdgePatcher.for_task(tiny_model, task, task.batch(tiny_model, "eval", 8, seed=0))
    graph, k = patcher.graph, 64
    from circuit_gym.edges.attribution import eap_ig_ranking

    eap_ig = eap_ig_ranking(patcher)
    candidates = eap_ig.order(absolute=True)[:k]
    scores = np.asarray(eap_ig.scores)[candidates]
    tie = fixed_order(graph, "a")
    other = tie.copy()
    outside = np.setdiff1d(np.arange(graph.n_edges), candidates)
    other[outside] = tie[outside][::-1]  # the same ranks, reversed among the non-candidates only
    one, one_abs = entry_rankings(graph, candidates, [], scores, tie)
    two, two_abs = entry_rankings(graph, candidates, [], scores, other)
    assert one.order()[:k].tolist() == two.order()[:k].tolist()
    assert one.order()[k:].tolist() != two.order()[k:].tolist()
    curves = edge_faithfulness_curves(patcher, [(one, False), (one_abs, True), (two, False), (two_abs, True)])
    axis = log_axis_fractions(graph.n_edges, k)
    assert max(int(f * graph.n_edges) for f in axis) <= k
    assert cpr_log(curves[0], axis) == cpr_log(curves[2], axis)
    assert cmd_log(curves[1], axis) == cmd_log(curves[3], axis)
    assert cpr(curves[0]) != cpr(curves[2])


def test_v8s_row_counts_enough_episodes_per_cell():
    draft = EB.EDGE_BENCHMARKS["v8"]
    assert draft.transfer_version == "v8" and draft.held_out_models == ("zoo10", "zoo12")
    assert min(draft.public_cells().values()) >= EB.MIN_PUBLIC_EPISODES == 16
    assert min(draft.private_cells(2).values()) >= EB.MIN_PRIVATE_EPISODES == 8
    assert min(draft.private_cells(1).values()) < EB.MIN_PRIVATE_EPISODES  # the scorer refuses that model
    assert EB.edge_benchmark("v8-edges") is draft


def test_the_committed_edge_results_were_scored_under_the_rows_definition():
    """Every committed edge result of the manifest records the definition its row gives now
    (protocol 2's keys included): a change of the row that would make them stale fails here."""
    import json

    from circuit_gym.leaderboard.references import load_manifest

    definition = json.loads(json.dumps(EB.EDGE_BENCHMARKS["v8"].definition()))
    assert definition["edge_protocol"] == 2 and definition["min_public_episodes"] == 16
    entries = load_manifest()["v8-edges"]
    assert len(entries) >= 6
    for name, entry in entries.items():
        committed = json.loads(entry.result_path().read_text())["provenance"]
        assert {k: committed.get(k) for k in definition} == definition, name


def test_a_reference_is_scored_on_its_scores_of_the_candidates_only():
    """A reference's ranking outside the candidates changes nothing of its protocol-2 order."""
    graph = EdgeGraph(2, 4)
    rng = np.random.default_rng(1)
    a = rng.normal(size=graph.n_edges)
    candidates = np.argsort(-np.abs(a))[:12]
    b = a.copy()
    outside = np.setdiff1d(np.arange(graph.n_edges), candidates)
    b[outside] = 100.0 + rng.normal(size=outside.size)  # another method outside: far above every candidate
    tie = fixed_order(graph, "k")
    orders = [entry_rankings(graph, candidates, [], EdgeRanking.from_array(s, "r", graph).scores[candidates], tie)[0]
              .order().tolist() for s in (a, b)]  # fmt: skip
    assert orders[0] == orders[1]


@pytest.mark.parametrize("bad", [[1.0, float("nan")], [1.0]])
def test_scores_must_be_one_finite_number_per_candidate(bad):
    graph = EdgeGraph(2, 4)
    with pytest.raises(ValueError):
        entry_order(graph.n_edges, [0, 1], [], bad, fixed_order(graph, "x"))


def test_the_terminal_headline_shows_the_planted_auc_the_board_ranks_first():
    """The scorer's summary prints the planted part's AUC over the candidates (the board's column)
    before the AUC over every edge, each read from the committed result's own summaries."""
    import json

    from circuit_gym.leaderboard.edge_scorer import headline
    from circuit_gym.leaderboard.references import load_manifest

    result = json.loads(load_manifest()["v8-edges"]["eap_ig"].result_path().read_text())
    lines = headline(result)
    public = result["scores"]["planted"]["all"]
    planted = next(line for line in lines if line.startswith("planted, public seeds"))
    assert planted.index(f"AUC (candidates) {public['auc_candidates']:.3f}") < planted.index(
        f"AUC (every edge) {public['auc']:.3f}"
    )
    secret = result["private"]["scores"]["planted"]["all"]
    assert any(f"AUC (candidates) {secret['auc_candidates']:.3f}" in line for line in lines)
