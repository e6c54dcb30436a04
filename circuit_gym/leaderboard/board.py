"""Build the leaderboard from scorer-written result files only: verification
(``circuit_gym/leaderboard/verification.py``), then each track's table (``transfer_tables.py``,
``planted_tables.py``, ``edge_tables.py``; ``tables.py``: the failures) in ``leaderboard/README.md``
and the HTML page (``html_page.py``). An edge entry's MIB export is re-made only when its result
changed (its committed source record): re-compressing the exports took most of a render's CPU.

Each file is verified before it is shown: its entry name must be valid, its content hash
must match its content, and it must be current (``circuit_gym/leaderboard/protocol.py``: the scorer
protocol, its track's benchmark definition and the public models' weights; the package version,
commit and source hashes are provenance only). A refused file is named with the reason and
never shown. Every entry's row says how far it was checked:

- ``hash-checked``: content hash and provenance match (anyone can recompute a hash, so this
  proves no more than that the file is internally consistent);
- ``rescored``: ``render --rescore`` re-ran the scorer on the recorded policy and got the
  same scores;
- ``verified``: rescored, and its private scores (on the maintainers' private seeds) were
  re-computed from a seed file with the recorded SHA-256 and matched.

A track's reference entries must be present once it has an entry; they are the files the
reviewed manifest names (``circuit_gym/leaderboard/references.py``: scores and checkpoint digests),
and their names are reserved for them. Each track's results have their folder
(``tracks.Track.results_dir``), and the board shows the tracks in order, the benchmark in force first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from circuit_gym.leaderboard import paths as board_paths
from circuit_gym.leaderboard.edge_benchmark import EDGE_TRACKS
from circuit_gym.leaderboard.edge_tables import (
    edge_markdown,
    edge_row,
    mib_export_is_current,
    rank_edge_rows,
    write_mib_export,
)
from circuit_gym.leaderboard.html_page import write_page
from circuit_gym.leaderboard.knockout_benchmark import KNOCKOUT_BENCHMARKS
from circuit_gym.leaderboard.knockout_tables import knockout_markdown, knockout_row, rank_knockout_rows
from circuit_gym.leaderboard.planted_scorer import PLANTED_BENCHMARKS
from circuit_gym.leaderboard.private_models import PrivateModelArg
from circuit_gym.leaderboard.probing import probing_markdown
from circuit_gym.leaderboard.references import References, load_manifest
from circuit_gym.leaderboard.tables import failures_markdown
from circuit_gym.leaderboard.tracks import IN_FORCE, TRACKS, in_board_order, not_ranking
from circuit_gym.leaderboard.transfer_tables import (
    rank_transfer_rows,
    transfer_about,
    transfer_markdown,
    transfer_row,
)
from circuit_gym.leaderboard.verification import (  # noqa: F401 - RefusedResultError, rescore_matches: the board's API
    TRANSFER_TRACKS,
    RefusedResultError,
    collect,
    missing_references,
    rescore_matches,
    track,
)
from circuit_gym.progress import stage

PLANTED_TRACKS = tuple(PLANTED_BENCHMARKS)  # every version of the Planted track (planted_scorer's rows)
KNOCKOUT_TRACKS = tuple(KNOCKOUT_BENCHMARKS)  # every knock-out track (knockout_scorer's rows)
RESULTS_DIR = board_paths.RESULTS_DIR
MARK_BEGIN, MARK_END = "<!-- board:begin -->", "<!-- board:end -->"


def board_files() -> list[Path]:
    """Every result file of the board's folders, one folder per track (what ``render`` reads)."""
    return sorted(p for t in TRACKS.values() for p in t.results_dir.glob("*.json"))


def planted_markdown(paths: list[Path], track_name: str) -> str:
    """A Planted track's section (``circuit_gym/leaderboard/planted_tables.py``), or nothing without results."""
    from circuit_gym.leaderboard.planted_tables import planted_tables

    if not paths:
        return ""
    title = f"Planted track, {track_name}"
    return (
        f"### {title} (every seed a new model with its circuits at new heads)\n\n"
        f"{planted_tables(sorted(paths), track_name)}\n"
    )


def with_status(section: str, track_name: str) -> str:
    """``section`` (Markdown, its heading first) with, under its heading, why the board does not rank
    on its track when it does not (a benchmark scored but not yet in force)."""
    status = not_ranking(track_name)
    if not status or not section.strip():
        return section
    heading, _, rest = section.lstrip("\n").partition("\n")
    lead = section[: len(section) - len(section.lstrip("\n"))]
    return f"{lead}{heading}\n\n**Not ranking: {status}.**\n{rest}"


def render(result_paths: list[Path] | None = None, out: Path | None = None, **kwargs: Any) -> dict:
    """:func:`build` (every argument), as a stage a person waits for: in a log a line at least every
    30 s while it verifies, rescores and writes (``circuit_gym.progress.stage``), a bar in a terminal."""
    n = len(result_paths) if result_paths else len(board_files())
    with stage(f"leaderboard render: {n} result files verified, tables written"):
        return build(result_paths, out, **kwargs)


def build(result_paths: list[Path] | None = None, out: Path | None = None, rescore: bool = False,
          private_seeds: Path | None = None, require_isolation: bool = True, jobs: int = 1,
          references: References | None = None, private_model: PrivateModelArg = None) -> dict:  # fmt: skip
    """Verify results and write the board: each track's table in ``out/README.md`` (between its
    markers) and the HTML page ``out/index.html``. ``jobs`` (with ``rescore``): entries re-scored at
    once, each in its own process. ``references``: the reference manifest (default
    ``leaderboard/references.json``).

    ``private_seeds`` (with ``rescore``): the maintainers' private seed file, to re-compute the
    private scores of the entries scored on it (the same SHA-256) and call them verified.
    ``require_isolation`` (with ``rescore``): refuse to run a submission without complete isolation.
    ``private_model`` (with ``rescore`` and ``private_seeds``): the private model, to verify the
    private scores of the tracks ranked on it (an entry scored on other weights is refused); for a
    benchmark ranked on several (v8), a sequence of ``private_models.PrivateModel``, each with its
    seed file (matched to each entry's record by their weights).
    """
    out = out or board_paths.BOARD_DIR
    paths = sorted(result_paths or board_files())
    if private_seeds is not None and not rescore:
        raise ValueError(
            "private_seeds only makes sense with rescore=True (the private scores are re-computed)"
        )
    references = load_manifest() if references is None else references
    entries, refused, failed = collect(
        paths, rescore, private_seeds, require_isolation, jobs, references, private_model
    )
    probed = probing_markdown([*entries, *failed])  # each private scoring's count (issue 44)
    # A failure is listed under its own track's table when the board shows one, else in the board's
    # own failures section (never under another track's heading).
    unlisted = list(failed)
    transfer = []  # (track, about, ranked rows) of each transfer track with entries
    for t in in_board_order(TRANSFER_TRACKS):
        t_entries = [e for e in entries if track(e) == t]
        if t_entries:
            missing_references(t_entries, references[t], refused, f"{t} track: ")
            status = f"Not ranking: {not_ranking(t)}. " if not_ranking(t) else ""  # the HTML page's note
            transfer.append(
                (t, status + transfer_about(t), rank_transfer_rows([transfer_row(e) for e in t_entries]))
            )
    planted_by_track = {t: [e for e in entries if track(e) == t] for t in in_board_order(PLANTED_TRACKS)}
    for t, t_entries in planted_by_track.items():
        if t_entries:
            missing_references(t_entries, references[t], refused, f"{t} track: ")
    edges = []  # (track, ranked rows) of each edge track with entries; each entry's MIB export beside it
    for t in in_board_order(EDGE_TRACKS):
        t_entries = [e for e in entries if track(e) == t]
        if t_entries:
            missing_references(t_entries, references[t], refused, f"{t} track: ")
            for e in t_entries:
                result_path = Path(e["board"]["path"])
                if not mib_export_is_current(result_path):  # its committed source record says so
                    write_mib_export(result_path)
            edges.append((t, rank_edge_rows([edge_row(e) for e in t_entries])))
    knockout = []  # (track, rows) of each knock-out track with entries
    for t in in_board_order(KNOCKOUT_TRACKS):
        t_entries = [e for e in entries if track(e) == t]
        if t_entries:
            missing_references(t_entries, references[t], refused, f"{t} track: ")
            knockout.append((t, [knockout_row(e) for e in t_entries]))
    out.mkdir(parents=True, exist_ok=True)
    readme = out / "README.md"
    text = readme.read_text() if readme.exists() else f"# Leaderboard\n\n{MARK_BEGIN}\n{MARK_END}\n"
    if MARK_BEGIN not in text:
        text += f"\n{MARK_BEGIN}\n{MARK_END}\n"
    head, rest = text.split(MARK_BEGIN, 1)
    tail = rest.split(MARK_END, 1)[1]
    sections: dict[str, str] = {}  # each shown track's section, by kind: transfer, planted, edges, knock-out
    for t, _, rows_t in transfer:
        mine = [f for f in unlisted if track(f) == t]
        unlisted = [f for f in unlisted if track(f) != t]
        sections[t] = (
            with_status(transfer_markdown(rows_t, t) + "\n".join(failures_markdown(mine, [])), t) + "\n\n"
        )
    for t, t_entries in planted_by_track.items():
        sections[t] = with_status(planted_markdown([Path(e["board"]["path"]) for e in t_entries], t), t)
    planted = "".join(sections[t] for t in planted_by_track)
    for t, rows_t in edges:
        sections[t] = f"{with_status(edge_markdown(rows_t, t), t)}\n"
    edge_text = "".join(sections[t] for t, _ in edges)
    for t, rows_t in knockout:
        sections[t] = f"{with_status(knockout_markdown(rows_t, t), t)}\n"
    knockout_text = "".join(sections[t] for t, _ in knockout)
    # every section of the benchmark in force first, then each other version's (in_board_order is
    # stable: within a version, the kinds keep the order above)
    body = "".join(sections[t] for t in in_board_order(list(sections)))
    if unlisted or refused:
        body += (
            "\n### Failed submissions and refused result files\n"
            + "\n".join(failures_markdown(unlisted, refused, with_track=True))
            + "\n"
        )
    readme.write_text(f"{head}{MARK_BEGIN}\n{body}{probed}{MARK_END}{tail}")
    about = (f"Benchmark {IN_FORCE}, the one in force: its tracks' entries ranked on the maintainers' private "
             "material (the private models, the secret planted models), with the public quadrants anyone can "
             "reproduce. Check: hash-checked, rescored (render --rescore matched) or verified (rescored with "
             "private scores). Retired benchmarks: docs/archive.md; a section marked 'Not ranking' is one the "
             "board shows without ranking on it.")  # fmt: skip
    write_page(out / "index.html", about=about, failed=failed, refused=refused, transfer=transfer,
               planted=planted, edges=edge_text + knockout_text)  # fmt: skip
    read: dict[str, int] = {}
    for path in paths:
        read[str(path.parent)] = read.get(str(path.parent), 0) + 1
    boards = {**{t: rows_t for t, _, rows_t in transfer},
              **{t: [{"name": e["name"], "check": e["board"]["check"]} for e in t_entries]
                 for t, t_entries in planted_by_track.items()},
              **{t: rows_t for t, rows_t in edges},
              **{t: rank_knockout_rows(rows_t) for t, rows_t in knockout}}  # fmt: skip
    return {"refused": refused, "failed": [f["name"] for f in failed],
            "failures": [{"name": f["name"], "track": track(f)} for f in failed],
            "written": [readme, out / "index.html"], "transfer_rows": {t: rows_t for t, _, rows_t in transfer},
            "read": read, "boards": {t: r for t, r in boards.items() if r}}  # fmt: skip
