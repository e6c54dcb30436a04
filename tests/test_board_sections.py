"""The board's newer sections: Markdown rendered into the HTML page escaped, and the transfer
tables ranked on the private model."""

from __future__ import annotations

from circuit_gym.leaderboard.html_page import markdown_section
from circuit_gym.leaderboard.transfer_tables import rank_transfer_rows


def test_a_markdown_section_becomes_escaped_html_tables():
    text = "### Planted <b>track</b>\n\nsome text\n\n| entry | all |\n|---|---|\n| <img src=x onerror=alert(1)> | 0.5 |\n| b | 0.1 |\n"
    html = markdown_section(text)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<b>" not in html and html.count("<tr>") == 3  # header and two rows; the --- line is no row
    assert html.startswith("<h2>Planted &lt;b&gt;track&lt;/b&gt;</h2>")


def test_transfer_rows_rank_on_the_private_model_and_place_public_only_entries_on_the_public_column():
    rows = [
        {
            "name": "public_only",
            "track": "v8-single-head",
            "private_k1": None,
            "unseen_task_unseen_model_k1": 0.99,
        },
        {
            "name": "low",
            "track": "v8-single-head",
            "private_k1": 0.2,
            "unseen_task_unseen_model_k1": 0.9,
        },
        {
            "name": "high",
            "track": "v8-single-head",
            "private_k1": 0.7,
            "unseen_task_unseen_model_k1": 0.1,
        },
    ]
    # an entry without a private score is placed on its public column (issue 59): above every entry
    # it beats there, and marked as awaiting the maintainers' private score
    ranked = rank_transfer_rows(rows)
    assert [r["name"] for r in ranked] == ["public_only", "high", "low"]
    assert [r["awaiting"] for r in ranked] == [True, False, False]


def test_a_section_of_a_track_the_board_does_not_rank_on_says_why_under_its_heading(monkeypatch):
    """Every track of the benchmark in force ranks; a version scored before it is put in force (its
    row's ``not_ranking``, here the one in force taken as such) says why under each heading."""
    import dataclasses

    from circuit_gym.leaderboard import tracks
    from circuit_gym.leaderboard.board import with_status

    def shown(name: str) -> str:
        return with_status(f"### Heading of {name}\n\nabout\n| table |\n", name)

    for name in tracks.TRACKS:
        if tracks.track(name).benchmark == tracks.IN_FORCE:  # a ranking track's: untouched
            assert shown(name) == f"### Heading of {name}\n\nabout\n| table |\n"
        elif tracks.not_ranking(name):  # a version being built: why, under the heading
            assert shown(name).startswith(
                f"### Heading of {name}\n\n**Not ranking: {tracks.not_ranking(name)}.**\n"
            )
    why = "scored before it is put in force"
    row = dataclasses.replace(tracks.BENCHMARKS[tracks.IN_FORCE], not_ranking=why)
    monkeypatch.setitem(tracks.BENCHMARKS, tracks.IN_FORCE, row)
    for name in [t for t in tracks.TRACKS if tracks.track(t).benchmark == tracks.IN_FORCE]:
        heading, blank, note = shown(name).splitlines()[:3]
        assert heading == f"### Heading of {name}" and blank == "" and note == f"**Not ranking: {why}.**"
        assert shown(name).endswith("about\n| table |\n")
    assert with_status("", tracks.DEFAULT_TRACK) == ""  # no results: no section, no note
