"""The knock-out track's board section (circuit_gym/leaderboard/knockout_tables.py): public means
computed from the episodes, planted and trained apart; ranked on the secret column only when every
entry has one; the paired column read from the result's ``versus``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from circuit_gym.leaderboard import knockout_tables as T


def _entry(
    name: str, planted: list[float], trained: list[float], secret: float | None, versus: float | None
) -> dict:
    episodes = [{"kind": "self_repair", "seed": i, "relative_area": a, "backup_recall": float(i % 2), "lm_passes": 16}
                for i, a in enumerate(planted)]  # fmt: skip
    episodes += [{"kind": "trained", "model": "zoo10", "task": f"t{i}", "relative_area": a,
                  "backup_recall": 1.0, "lm_passes": 16} for i, a in enumerate(trained)]  # fmt: skip
    entry = {"name": name, "board": {"check": "hash-checked"}, "scores": {"episodes": episodes, "versus": {}}}
    if versus is not None:
        entry["scores"]["versus"] = {"conditional_attribution": {"all": {"relative_area": versus,
                                                                          "relative_area_ci95": [versus - 0.1, versus + 0.1]}}}  # fmt: skip
    if secret is not None:
        entry["private"] = {"scores": {"summary": {"all": {"relative_area": secret, "relative_area_ci95": [0.1, 0.9],
                                                            "backup_recall": 0.5}}}}  # fmt: skip
    return entry


def test_public_cells_are_the_episode_means_with_t_intervals_planted_and_trained_apart():
    planted, trained = [0.9, 0.7, 0.8, float("nan")], [0.2, 0.4]
    row = T.knockout_row(_entry("a", planted, trained, None, 0.05))
    finite = np.array([0.9, 0.7, 0.8])
    ci = stats.t.interval(0.95, len(finite) - 1, loc=finite.mean(), scale=stats.sem(finite))
    assert row["public"][0] == pytest.approx(finite.mean()) and row["public"][1] == pytest.approx(list(ci))
    assert row["public"][2] == pytest.approx(
        np.mean([0, 1, 0, 1])
    )  # backup recall over every planted episode
    assert row["trained"][0] == pytest.approx(0.3) and row["secret"] is None
    assert row["versus"][0] == pytest.approx(0.05) and row["passes"] == 16


def test_a_kind_without_a_backup_is_left_out_of_backup_recall_not_counted_as_zero():
    """The scorer records backup recall None on kinds that have no backup (induction, multihop...):
    a real entry's planted rows mix both (the board's render crashed on them)."""
    entry = _entry("a", [0.9, 0.7], [], None, None)
    entry["scores"]["episodes"] += [
        {"kind": "induction", "seed": 9, "relative_area": 0.5, "backup_recall": None, "lm_passes": 16}
    ]
    row = T.knockout_row(entry)
    assert row["public"][0] == pytest.approx(np.mean([0.9, 0.7, 0.5]))  # the area counts every kind
    assert row["public"][2] == pytest.approx(0.5)  # recall over the two self-repair episodes only
    no_backup = {
        **entry,
        "private": {"scores": {"summary": {"all": {"relative_area": 0.6, "backup_recall": None}}}},
    }
    text = T.knockout_markdown([T.knockout_row(no_backup)], "v8-knockout")
    assert "0.600 / -" in text


def test_ranked_on_the_secret_column_only_when_every_entry_has_it():
    high_public = _entry("high_public", [0.95, 0.9], [], 0.2, 0.1)
    high_secret = _entry("high_secret", [0.5, 0.4], [], 0.8, -0.1)
    rows = [T.knockout_row(e) for e in (high_public, high_secret)]
    assert [r["name"] for r in T.rank_knockout_rows(rows)] == ["high_secret", "high_public"]
    rows.append(T.knockout_row(_entry("public_only", [0.1, 0.2], [], None, None)))
    assert [r["name"] for r in T.rank_knockout_rows(rows)] == ["high_public", "high_secret", "public_only"]


def test_the_section_names_the_track_and_the_reference_has_no_paired_cell():
    ref = _entry("conditional_attribution", [0.9, 0.8], [0.5], 0.9, 0.0)
    text = T.knockout_markdown([T.knockout_row(ref)], "v8-knockout")
    assert text.startswith("### Knock-out track (v8-knockout)")
    (line,) = [x for x in text.splitlines() if x.startswith("| 1 |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1] == "conditional_attribution" and cells[6] == "-"  # no difference against itself
    assert cells[3].startswith("0.900 [0.100, 0.900] / 0.50") and cells[5].startswith("0.500 / 1.00")


def test_the_board_shows_a_knockout_entry_under_its_track_ranking_in_force(monkeypatch, tmp_path):
    """``leaderboard render`` puts a verified knock-out entry in its track's section (README and HTML
    page), ranking (v8 is in force: no "Not ranking" note); verification is the board's usual (replaced here:
    the section is what is tested)."""
    from circuit_gym.leaderboard import board, tracks

    entry = {**_entry("conditional_attribution", [0.9, 0.8], [0.4], None, None), "track": "v8-knockout"}
    entry["board"]["path"] = str(tmp_path / "conditional_attribution.json")
    monkeypatch.setattr(board, "collect", lambda *args, **kwargs: ([entry], [], []))
    monkeypatch.setattr(board, "missing_references", lambda *args, **kwargs: None)
    out = tmp_path / "board"
    result = board.build(
        [tmp_path / "conditional_attribution.json"], out, references={t: {} for t in tracks.TRACKS}
    )
    text = (out / "README.md").read_text()
    section = text[text.index("### Knock-out track (v8-knockout)") :]
    # v8 is in force: no note under the heading (a retired or not-yet-ranking version's track has one)
    assert tracks.not_ranking("v8-knockout") is None and "Not ranking" not in section.split("###")[1]
    assert (
        "| 1 | conditional_attribution |" in section and "0.850 [" in section
    )  # the planted mean of 0.9, 0.8
    assert "Knock-out track (v8-knockout)" in (out / "index.html").read_text()
    assert [r["name"] for r in result["boards"]["v8-knockout"]] == ["conditional_attribution"]
