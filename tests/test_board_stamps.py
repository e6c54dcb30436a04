"""``render`` re-makes a chart or an edge export only when what goes into it changed (``stamps.py``)."""

from __future__ import annotations

from pathlib import Path

from circuit_gym.leaderboard import board, charts, stamps

ROW = {"name": "entry", "k5": 0.8, "k1": 0.5, "top1": 0.4, "spread": 0.1, "consistency": 0.7}


def counting(chart):
    """``chart``, under its own name, counting its calls."""
    calls = []

    def wrapped(data, path: Path) -> None:
        calls.append(path)
        chart(data, path)

    wrapped.__name__ = chart.__name__
    return wrapped, calls


def test_an_unchanged_chart_is_not_drawn_again_and_its_bytes_are_the_drawing(tmp_path):
    chart, calls = counting(charts.radar)
    out = tmp_path / "radar.png"
    board.draw(chart, ROW, out)
    board.draw(chart, dict(ROW), out)  # equal data, another dict
    assert len(calls) == 1
    charts.radar(ROW, tmp_path / "direct.png")  # what drawing it again would write
    assert out.read_bytes() == (tmp_path / "direct.png").read_bytes()


def test_changed_data_an_edited_or_deleted_output_or_other_code_draw_again(tmp_path, monkeypatch):
    chart, calls = counting(charts.radar)
    out = tmp_path / "radar.png"
    board.draw(chart, ROW, out)
    board.draw(chart, {**ROW, "k5": 0.81}, out)
    assert len(calls) == 2
    out.write_bytes(b"edited")
    board.draw(chart, {**ROW, "k5": 0.81}, out)
    assert len(calls) == 3 and out.read_bytes() != b"edited"
    out.unlink()
    board.draw(chart, {**ROW, "k5": 0.81}, out)
    assert len(calls) == 4 and out.is_file()
    monkeypatch.setattr(stamps, "code_digest", lambda: "other code")
    board.draw(chart, {**ROW, "k5": 0.81}, out)
    assert len(calls) == 5


def test_the_same_data_under_another_chart_or_path_is_drawn(tmp_path):
    radar, radar_calls = counting(charts.radar)
    board.draw(radar, ROW, tmp_path / "a.png")
    board.draw(radar, ROW, tmp_path / "b.png")
    assert len(radar_calls) == 2

    made = []

    def other(data, path: Path) -> None:
        made.append(path)
        path.write_bytes((tmp_path / "a.png").read_bytes())  # the same bytes, another chart

    board.draw(other, ROW, tmp_path / "a.png")
    assert made == [tmp_path / "a.png"]


def test_refresh_records_nothing_when_nothing_was_written(tmp_path):
    out = tmp_path / "never.bin"
    made = []
    assert stamps.refresh(out, b"x", lambda: made.append(1))
    assert stamps.refresh(out, b"x", lambda: made.append(1))  # no file: no stamp, made again
    assert made == [1, 1] and not stamps.is_current(out, b"x")


def test_the_sources_digest_changes_with_a_python_source_only(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("X = 1\n")
    (tmp_path / "pkg" / "data.json").write_text("{}")
    before = stamps.sources_digest(tmp_path)
    (tmp_path / "pkg" / "data.json").write_text("[]")
    assert stamps.sources_digest(tmp_path) == before
    (tmp_path / "pkg" / "a.py").write_text("X = 2\n")
    edited = stamps.sources_digest(tmp_path)
    assert edited != before
    (tmp_path / "pkg" / "a.py").rename(tmp_path / "pkg" / "b.py")
    assert stamps.sources_digest(tmp_path) not in (before, edited)


def test_a_stamp_without_the_secret_is_not_believed(tmp_path):
    import json

    chart, calls = counting(charts.radar)
    out = tmp_path / "radar.png"
    board.draw(chart, ROW, out)
    out.write_bytes(b"forged")  # then a stamp for the forged bytes, written without the secret
    stamp = stamps._stamp_path(out)
    forged = {**json.loads(stamp.read_text()), "output": stamps._file_digest(out), "mac": "0" * 64}
    stamp.write_text(json.dumps(forged))
    board.draw(chart, ROW, out)
    assert len(calls) == 2 and out.read_bytes() != b"forged"
