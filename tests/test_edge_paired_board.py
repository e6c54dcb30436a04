"""The protocol-2 edge board shows, for adjacent entries, the paired difference and its interval
(issue 57, item 4; circuit_gym/leaderboard/edge_tables.py). Checked on constructed result rows
against a paired t-interval computed here with numpy and scipy's t quantile."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from circuit_gym.leaderboard.edge_tables import (
    adjacent_paired,
    edge_markdown,
    edge_row,
    paired_report,
    paired_table,
    rank_edge_rows,
)

TRACK = "v8-edges"
TRANSFER_KEYS = [("zoo6", t, s) for t in ("brackets", "capital") for s in range(3)]
PLANTED_KEYS = [("induction", "", s) for s in range(4)]


def _summary(values: list[float]) -> dict:
    return {"cpr_log": float(np.mean(values)), "cpr_log_ci95": [0.0, 1.0]}


def _entry(name: str, transfer: list[float], planted: list[float], keys=TRANSFER_KEYS) -> dict:
    """A scored protocol-2 result: per-episode cpr_log on ``keys`` and the candidates' AUC on the planted seeds."""
    episodes = [{"part": "transfer", "model": m, "task": t, "seed": s, "cpr_log": v, "cmd_log": 0.1, "cpr": 1.0,
                 "cmd": 0.0, "faithfulness": 0.5, "auc": None} for (m, t, s), v in zip(keys, transfer, strict=True)]  # fmt: skip
    episodes += [{"part": "planted", "kind": k, "seed": s, "auc_candidates": v, "auc": 0.9, "recall": 0.5} for (k, _, s), v in zip(PLANTED_KEYS, planted, strict=True)]  # fmt: skip
    summary = {
        **_summary(transfer),
        "cmd_log": 0.1,
        "cpr": 1.0,
        "cmd": 0.0,
        "faithfulness": 0.5,
        "lm_passes": 4,
    }
    return {"name": name, "track": TRACK, "board": {"check": "reproduced", "reference": True},
            "provenance": {"policy": f"builtin:{name}", "white_box": True},
            "scores": {"transfer": {"all": summary},
                       "planted": {"all": {"precision": 0.5, "recall": 0.5, "auc_candidates": float(np.mean(planted)), "lm_passes": 4}},
                       "episodes": episodes}}  # fmt: skip


def _paired_by_hand(a: dict, b: dict) -> tuple[float, float, float, int]:
    keys = [k for k in a if k in b]
    d = np.array([a[k] - b[k] for k in keys])
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half), len(d)


@pytest.fixture
def entries() -> list[dict]:
    rng = np.random.default_rng(7)
    hard = rng.normal(0.0, 0.4, size=len(TRANSFER_KEYS))  # what each episode itself contributes
    a = (1.0 + hard + rng.normal(0, 0.01, size=hard.size)).tolist()
    b = (0.95 + hard + rng.normal(0, 0.01, size=hard.size)).tolist()  # a little below a, every episode
    c = rng.uniform(0.2, 0.4, size=hard.size).tolist()
    # d played one transfer episode fewer, listed in another order: pairs are matched by key
    keys_d = TRANSFER_KEYS[1:][::-1]
    d = (0.1 + rng.normal(0, 0.05, size=len(keys_d))).tolist()
    planted = [rng.uniform(0.5, 1.0, size=4).tolist() for _ in range(4)]
    return [_entry("a", a, planted[0]), _entry("b", b, planted[1]), _entry("c", c, planted[2]),
            _entry("d", d, planted[3], keys_d)]  # fmt: skip


def test_adjacent_entries_show_their_paired_difference_computed_by_hand(entries):
    rows = rank_edge_rows([edge_row(e) for e in reversed(entries)])
    assert [r["name"] for r in rows] == ["a", "b", "c", "d"]  # by mean cpr_log
    for part in ("transfer", "planted"):
        shown = adjacent_paired(rows, part)
        assert shown[-1] is None and len(shown) == len(rows)
        for upper, lower, d in zip(rows, rows[1:], shown, strict=False):
            mean, low, high, n = _paired_by_hand(upper["paired"][part], lower["paired"][part])
            assert d is not None and d["n"] == n
            assert d["mean"] == pytest.approx(mean, abs=1e-12)
            assert d["ci95"] == pytest.approx([low, high], abs=1e-9)
    # c over d: only the five transfer episodes both played
    assert adjacent_paired(rows, "transfer")[2]["n"] == len(TRANSFER_KEYS) - 1


def test_the_pairing_separates_entries_whose_own_intervals_overlap(entries):
    """a and b differ by ~0.05 on every episode while episodes differ by ~0.4: their means'
    intervals overlap, the paired interval excludes 0."""
    a, b = (edge_row(e)["paired"]["transfer"] for e in entries[:2])

    def interval(x: dict) -> tuple[float, float]:
        v = np.array(list(x.values()))
        half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
        return v.mean() - half, v.mean() + half

    assert interval(b)[1] > interval(a)[0]  # overlap
    _, low, _, _ = _paired_by_hand(a, b)
    assert low > 0


def test_the_section_prints_the_paired_cells_and_the_log_axis_columns(entries):
    rows = rank_edge_rows([edge_row(e) for e in entries])
    text = edge_markdown(rows, TRACK)
    assert "CPR (log)" in text and "MIB CPR / CMD (linear)" in text and "to next: paired CPR (log)" in text
    mean, low, high, _ = _paired_by_hand(rows[0]["paired"]["transfer"], rows[1]["paired"]["transfer"])
    line_a = next(line for line in text.splitlines() if line.startswith("| 1 | a (reference)"))
    assert f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]" in line_a
    line_d = next(line for line in text.splitlines() if line.startswith("| 4 | d (reference)"))
    cells = [c.strip() for c in line_d.split("|")]
    assert cells[10] == "-" and cells[13] == "-"  # the last entry has no entry below


def test_paired_table_orders_by_the_metric_and_pairs_by_episode(entries):
    results = {e["name"]: e for e in entries}
    table = paired_table(results, "cpr_log", "transfer")
    assert [(d["above"], d["below"]) for d in table] == [("a", "b"), ("b", "c"), ("c", "d")]
    mean, low, high, n = _paired_by_hand(edge_row(entries[0])["paired"]["transfer"],
                                         edge_row(entries[1])["paired"]["transfer"])  # fmt: skip
    assert table[0]["mean"] == pytest.approx(mean) and table[0]["n"] == n
    assert table[0]["separated"] == (low > 0 or high < 0)


def test_the_report_holds_each_entrys_mean_and_the_named_pairs(entries):
    results = {e["name"]: e for e in entries}
    report = paired_report(results, (("d", "a"),))
    a, d = (edge_row(results[n])["paired"]["planted"] for n in ("a", "d"))
    mean, low, high, n = _paired_by_hand(d, a)
    shown = report["versus"]["d_vs_a"]["planted_auc_candidates"]
    assert (
        shown["mean"] == pytest.approx(mean)
        and shown["ci95"] == pytest.approx([low, high])
        and shown["n"] == n
    )
    v = np.array(list(edge_row(results["d"])["paired"]["transfer"].values()))
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    assert report["means"]["transfer_cpr_log"]["d"]["ci95"] == pytest.approx(
        [v.mean() - half, v.mean() + half]
    )
    assert report["means"]["transfer_cpr_log"]["d"]["episodes"] == len(TRANSFER_KEYS) - 1


def test_a_sample_without_a_part_is_left_out_of_that_parts_order(entries):
    """A sampled result (its first public episodes: transfer only) pairs on the transfer part and
    is absent from the planted part's order, instead of breaking the table."""
    sample = _entry("s", [0.5] * len(TRANSFER_KEYS), [0.5] * len(PLANTED_KEYS))
    sample["scores"] = {"episodes": [e for e in sample["scores"]["episodes"] if e["part"] == "transfer"]}
    results = {**{e["name"]: e for e in entries}, "s": sample}
    planted = paired_table(results, "auc_candidates", "planted")
    assert "s" not in {d["above"] for d in planted} | {d["below"] for d in planted} and len(planted) == 3
    report = paired_report(results, (("s", "a"),))
    assert report["versus"]["s_vs_a"]["transfer_cpr_log"]["n"] == len(TRANSFER_KEYS)
    assert "planted_auc_candidates" not in report["versus"]["s_vs_a"]
    assert "s" not in report["means"]["planted_auc_candidates"]  # no NaN mean of no episode


def test_an_entry_scored_before_a_column_existed_is_left_out_of_that_column_only(entries):
    old = _entry("o", [0.7] * len(TRANSFER_KEYS), [0.5] * len(PLANTED_KEYS))
    for e in old["scores"]["episodes"]:
        e.pop("auc_candidates", None)
    report = paired_report({**{e["name"]: e for e in entries}, "o": old}, (("o", "a"),))
    assert report["missing"] == {"planted_auc_candidates": ["o"]}
    assert "o" not in report["means"]["planted_auc_candidates"] and "o" in report["means"]["transfer_cpr_log"]
    assert set(report["versus"]["o_vs_a"]) == {c for c in report["means"] if c != "planted_auc_candidates"}
