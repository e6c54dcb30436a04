"""Issue 56: one benchmark in force, a tree without the retired ones.

The retired benchmarks (v5 on ``toy``, v6 on zoo v1, the first Planted track on planted generator
2, v7 on zoo v2) left the code; their final tables and history are docs/archive.md. No file under circuit_gym/,
tests/ or leaderboard/results/ names them but those in :data:`ALLOWED`, each for its stated
reason, and the board pages name a retired track only on a line that links the archive.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("circuit_gym", "tests", "leaderboard/results")
RETIRED = re.compile(r"\b(v5|v6|v7)\b|heldout-v5|transfer-v6|first Planted")
# Files that may name a retired benchmark, and why. A file leaves the list once it names none
# (test_every_allowed_file_still_needs_its_place), so the list only shrinks.
ALLOWED = {
    "tests/test_old_ids.py": "refuses the retired IDs by name",
    "tests/test_readme.py": "refuses retired names in README (its RETIRED pattern)",
    "tests/test_retired_names.py": "this test: the pattern and the retired versions the board pages refuse",
    "circuit_gym/benchmark.py": "the retired version strings its studies still record (BENCHMARK_VERSION, TRANSFER_BENCHMARK_VERSION)",
    "circuit_gym/leaderboard/tracks.py": "refuses the retired v7 track names by name (REMOVED)",
}


def text_of(path: Path) -> str | None:
    """The file's text, or None for a binary file (a NUL byte in its first 8 KiB, or not UTF-8):
    weights, images and archives hold these bytes by chance."""
    with path.open("rb") as f:
        head = f.read(8192)
    if b"\0" in head:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def naming_files(root: Path, folders: tuple[str, ...] = SCANNED) -> dict[str, list[str]]:
    """Each text file under ``root``/``folders`` (caches aside) that names a retired benchmark,
    relative to ``root``, with its first naming lines (``line number: text``)."""
    out: dict[str, list[str]] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            text = text_of(path)
            if text is None:
                continue
            lines = [
                f"{i}: {line.strip()[:100]}"
                for i, line in enumerate(text.splitlines(), 1)
                if RETIRED.search(line)
            ]
            if lines:
                out[path.relative_to(root).as_posix()] = lines[:3]
    return out


@pytest.mark.parametrize(
    ("text", "names"),
    [("benchmark v6's board", True), ("(v5)", True), ("circuit-gym-heldout-v5", True),
     ("circuit-gym-transfer-circuit-v6", True), ("the first Planted track", True),
     ("tag archive/v6-last", True), ("benchmark v7", True), ("--track v7-edges", True), ("v60", False),
     ("v70", False), ("uv5", False), ("benchmark v8", False),
     ("zoo v1's board", False), ("the first planted model", False)],
)  # fmt: skip
def test_the_pattern_catches_the_retired_names_and_nothing_else(text, names):
    assert bool(RETIRED.search(text)) is names


def test_the_scan_finds_a_mention_in_any_text_file_and_skips_binaries(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "notes.md").write_text("ok\nscored as in benchmark v6\n")
    (tmp_path / "pkg" / "clean.py").write_text('"""benchmark v8"""\n')
    (tmp_path / "pkg" / "weights.bin").write_bytes(b"\0\1 v6 \0")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "m.py").write_text("# v5\n")
    assert naming_files(tmp_path, ("pkg",)) == {"pkg/sub/notes.md": ["2: scored as in benchmark v6"]}


def test_no_file_names_a_retired_benchmark_but_the_allowed_ones():
    naming = naming_files(ROOT)
    unexpected = {path: lines for path, lines in naming.items() if path not in ALLOWED}
    assert unexpected == {}, (
        "these files name a retired benchmark (v5, v6, v7, the first Planted track): name what it is "
        f"and point to docs/archive.md instead: {unexpected}"
    )


def test_every_allowed_file_still_needs_its_place():
    naming = naming_files(ROOT)
    stale = [path for path in ALLOWED if path not in naming]
    assert stale == [], f"no retired name left in {stale}: remove them from ALLOWED"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_board_pages_name_no_retired_track_but_in_the_archive_link():
    """leaderboard/README.md and index.html (the generated board and the hand-written parts) name
    a track that left the board (as a track: in backticks, after --track, as a heading's track) or
    its benchmark version only on a line that links the archive (docs/archive.md): a page that
    describes a retired board as current fails here."""
    from circuit_gym.leaderboard.tracks import REMOVED

    versions = (
        "circuit-gym-transfer-v6",
        "circuit-gym-transfer-circuit-v6",
        "circuit-gym-planted-v0",
        "circuit-gym-transfer-v7",
        "circuit-gym-transfer-circuit-v7",
        "circuit-gym-planted-v7",
        "circuit-gym-edges-v7",
    )
    patterns = [re.escape(v) for v in versions] + [
        rf"(`{re.escape(t)}`|--track {re.escape(t)}\b|track \({re.escape(t)}\)|\"{re.escape(t)}\")"
        for t in REMOVED
    ]
    patterns += [r"Benchmark v[67], transfer track", r"### Planted track \(", r"<h2>Planted track \("]
    for page in ("leaderboard/README.md", "leaderboard/index.html"):
        text = (ROOT / page).read_text()
        lines = text.splitlines() if page.endswith(".md") else text.replace("<h", "\n<h").splitlines()
        named = [
            (p, line[:100]) for line in lines if "archive" not in line for p in patterns if re.search(p, line)
        ]
        assert named == [], f"{page} names retired tracks: {named}"
    archive = (ROOT / "docs/archive.md").read_text()
    assert (
        all(v in archive for v in versions) and "archive/v6-last" in archive and "archive/v7-last" in archive
    )
