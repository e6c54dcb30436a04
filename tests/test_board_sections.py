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
            "track": "v7-single-head",
            "private_k1": None,
            "unseen_task_unseen_model_k1": 0.99,
        },
        {
            "name": "low",
            "track": "v7-single-head",
            "private_k1": 0.2,
            "unseen_task_unseen_model_k1": 0.9,
        },
        {
            "name": "high",
            "track": "v7-single-head",
            "private_k1": 0.7,
            "unseen_task_unseen_model_k1": 0.1,
        },
    ]
    # an entry without a private score is placed on its public column (issue 59): above every entry
    # it beats there, and marked as awaiting the maintainers' private score
    ranked = rank_transfer_rows(rows)
    assert [r["name"] for r in ranked] == ["public_only", "high", "low"]
    assert [r["awaiting"] for r in ranked] == [True, False, False]


def test_a_section_of_a_track_the_board_does_not_rank_on_says_why_under_its_heading():
    from circuit_gym.leaderboard.board import with_status
    from circuit_gym.leaderboard.tracks import TRACKS, retired

    for name in TRACKS:
        section = f"### Heading of {name}\n\nabout\n| table |\n"
        shown = with_status(section, name)
        if retired(name) is None:
            assert shown == section  # a ranking track's section is untouched
        else:
            heading, blank, note = shown.splitlines()[:3]
            assert heading == f"### Heading of {name}" and blank == "" and retired(name) in note
            assert shown.endswith("about\n| table |\n")
    assert with_status("", next(iter(TRACKS))) == ""  # no results: no section, no note
