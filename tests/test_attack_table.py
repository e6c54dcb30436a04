"""docs/leaderboard.md's table of what a submission can and cannot see, reach and carry out
names, per track, the test that checks each line: every named test (and parameter) exists in the
file its letter stands for, and each track's column names at least one test of its own."""

from __future__ import annotations

import re
from pathlib import Path

from circuit_gym import benchmark as B

ROOT = Path(__file__).resolve().parents[1]
FILES = {"A": "test_attacks.py", "O": "test_attacks_other_tracks.py", "P": "test_planted_track.py",
         "L": "test_probing_ledger.py", "E": "test_edge_track.py"}  # fmt: skip
# the tracks of the benchmark in force, each named with its version (a retired version's column fails)
TRACK_COLUMNS = tuple(f"{track} ({B.IN_FORCE})" for track in ("single head", "circuit", "Planted", "edges"))


def _table() -> list[list[str]]:
    text = (ROOT / "docs" / "leaderboard.md").read_text()
    section = text[text.index("## What a submission can and cannot see, reach and carry out") :]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_every_test_the_table_names_exists_where_it_says():
    header, *rows = _table()
    assert header[1:] == list(TRACK_COLUMNS)
    sources = {letter: (ROOT / "tests" / name).read_text() for letter, name in FILES.items()}
    for row in rows:
        assert len(row) == 1 + len(TRACK_COLUMNS), row
        for cell in row[1:]:
            # "A `test_x` [p, q], `test_y`": each test name belongs to the file of the letter before it
            for letter, names in re.findall(
                r"\b([AOPLE]) ((?:`test_[a-z0-9_.]+`(?: \[[^\]]*\])?,? ?)+)", cell
            ):
                for name in re.findall(r"`(test_[a-z0-9_]+)`", names):
                    assert f"def {name}(" in sources[letter], (name, FILES[letter])
                for params in re.findall(r"\[([^\]]*)\]", names):
                    for param in re.split(r",\s*", params):
                        assert f'"{param}"' in sources[letter], (param, FILES[letter])
            assert cell == "shared" or cell.startswith("shared (") or re.search(r"\b[AOPLE] ", cell), cell


def test_each_track_has_tests_of_its_own():
    header, *rows = _table()
    for column in range(1, len(header)):
        assert any(re.search(r"\b[AOPLE] `test_", row[column]) for row in rows), header[column]
