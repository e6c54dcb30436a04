"""Build the leaderboard from scorer-written result files only: verification
(``circuit_gym/leaderboard/verification.py``), then tables (``tables.py``), figures (``charts.py``) and the
HTML page (``html_page.py``). A figure or an edge entry's MIB export is re-made only when what goes into
it changed (``stamps.py``): re-compressing the exports took most of a render's CPU.

Each file is verified before it is shown: its entry name must be valid, its content hash
must match its content, and it must be current (``circuit_gym/leaderboard/protocol.py``: the scorer
protocol, its track's benchmark definition and the model weights; the package version,
commit and source hashes are provenance only). A refused file is named with the reason and
never shown. Every entry's row says how far it was checked:

- ``hash-checked``: content hash and provenance match (anyone can recompute a hash, so this
  proves no more than that the file is internally consistent);
- ``rescored``: ``render --rescore`` re-ran the scorer on the recorded policy and got the
  same scores;
- ``verified``: rescored, and its private scores (on the maintainers' private seeds) were
  re-computed from a seed file with the recorded SHA-256 and matched.

The reference entries (random, fixed, greedy, PPO) must be present; they are the files the
reviewed manifest names (``circuit_gym/leaderboard/references.py``: scores and checkpoint digests), and
their names are reserved for them.

Result files with ``"track": "circuit"`` (``circuit_gym.leaderboard.circuit_scorer``) are
checked the same way against the circuit track's definition (``benchmark.circuit_definition``)
and its references (the manifest's ``circuit`` entries, required once any circuit entry is on
the board), and shown in their own "Circuit track" table. Their default place is
``leaderboard/results/circuit/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import circuit_gym
from circuit_gym import benchmark as B
from circuit_gym.leaderboard import paths as board_paths
from circuit_gym.leaderboard.charts import bar_chart, per_task_chart, radar
from circuit_gym.leaderboard.edge_benchmark import EDGE_TRACKS
from circuit_gym.leaderboard.edge_tables import (
    edge_markdown,
    edge_row,
    mib_export_is_current,
    rank_edge_rows,
    write_mib_export,
)
from circuit_gym.leaderboard.html_page import Figure, write_page
from circuit_gym.leaderboard.planted_scorer import PLANTED_BENCHMARKS
from circuit_gym.leaderboard.probing import probing_markdown
from circuit_gym.leaderboard.references import References, load_manifest
from circuit_gym.leaderboard.scoring import check_name
from circuit_gym.leaderboard.stamps import refresh
from circuit_gym.leaderboard.tables import (
    above_memoriser,
    circuit_about,
    circuit_markdown,
    circuit_row,
    failures_markdown,
    markdown,
    rank_circuit_rows,
    rank_rows,
    single_head_row,
)
from circuit_gym.leaderboard.tracks import IN_FORCE, TRACKS, in_board_order, retired
from circuit_gym.leaderboard.transfer_tables import (
    rank_transfer_rows,
    transfer_about,
    transfer_markdown,
    transfer_row,
)
from circuit_gym.leaderboard.verification import (  # noqa: F401 - RefusedResultError, rescore_matches: the board's API
    CIRCUIT,
    SINGLE_HEAD,
    TRANSFER_TRACKS,
    RefusedResultError,
    collect,
    missing_references,
    rescore_matches,
    track,
)
from circuit_gym.progress import stage

PLANTED_TRACKS = tuple(PLANTED_BENCHMARKS)  # every version of the Planted track (planted_scorer's rows)
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
    on its track when it does not (a retired benchmark, or one scored but not yet in force)."""
    status = retired(track_name)
    if not status or not section.strip():
        return section
    heading, _, rest = section.lstrip("\n").partition("\n")
    lead = section[: len(section) - len(section.lstrip("\n"))]
    return f"{lead}{heading}\n\n**Not ranking: {status}.**\n{rest}"


def draw(chart: Callable[[Any, Path], None], data: Any, path: Path) -> None:
    """``chart(data, path)``, unless ``path`` already holds that chart of that data (``stamps.py``)."""
    inputs = json.dumps([chart.__name__, data], sort_keys=True, default=repr, allow_nan=True).encode()
    refresh(path, inputs, lambda: chart(data, path))


def render(result_paths: list[Path] | None = None, out: Path | None = None, **kwargs: Any) -> dict:
    """:func:`build` (every argument), as a stage a person waits for: in a log a line at least every
    30 s while it verifies, rescores and draws (``circuit_gym.progress.stage``), a bar in a terminal."""
    n = len(result_paths) if result_paths else len(board_files())
    with stage(f"leaderboard render: {n} result files verified, tables and figures drawn"):
        return build(result_paths, out, **kwargs)


def build(result_paths: list[Path] | None = None, out: Path | None = None, model: str | None = None,
           model_path: str | None = None, rescore: bool = False, private_seeds: Path | None = None,
           require_isolation: bool = True, jobs: int = 1, references: References | None = None,
           private_model: Path | None = None) -> dict:  # fmt: skip
    """Verify results and write the Markdown table, HTML page, bar chart and radar charts.
    ``jobs`` (with ``rescore``): entries re-scored at once, each in its own process.
    ``references``: the reference manifest (default ``leaderboard/references.json``).

    ``private_seeds`` (with ``rescore``): the maintainers' private seed file, to re-compute the
    private scores of the entries scored on it (the same SHA-256) and call them verified.
    ``require_isolation`` (with ``rescore``): refuse to run a submission without complete isolation.
    ``private_model`` (with ``rescore`` and ``private_seeds``): the transfer tracks' private model,
    to verify their private scores (an entry scored on other weights is refused).
    """
    out = out or board_paths.BOARD_DIR
    paths = sorted(result_paths or board_files())
    if private_seeds is not None and not rescore:
        raise ValueError(
            "private_seeds only makes sense with rescore=True (the private scores are re-computed)"
        )
    weights = circuit_gym.load_model(model or B.MODEL, path=model_path).circuit_gym_info.weights_hash
    references = load_manifest() if references is None else references
    entries, refused, failed = collect(
        paths, weights, rescore, private_seeds, model_path, require_isolation, jobs, references, private_model
    )
    probed = probing_markdown([*entries, *failed])  # each private scoring's count (issue 44)
    # A failure is listed under its own track's table when the board shows one, else in the board's
    # own failures section (never under another, retired, track's heading).
    unlisted = list(failed)
    transfer = []  # (track, about, ranked rows) of each transfer track with entries
    for t in in_board_order(TRANSFER_TRACKS):
        t_entries = [e for e in entries if track(e) == t]
        if t_entries:
            missing_references(t_entries, references[t], refused, f"{t} track: ")
            status = f"Not ranking: {retired(t)}. " if retired(t) else ""  # the HTML page's note
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
    entries = [e for e in entries if track(e) not in (*TRANSFER_TRACKS, *PLANTED_TRACKS, *EDGE_TRACKS)]
    circuit_entries = [e for e in entries if track(e) == CIRCUIT]
    entries = [e for e in entries if track(e) != CIRCUIT]
    # The single-head (v5) references are required unless the board holds other tracks only.
    single = bool(entries) or not (circuit_entries or transfer)
    if single:
        missing_references(entries, references[SINGLE_HEAD], refused, "")
    if circuit_entries:
        missing_references(circuit_entries, references[CIRCUIT], refused, "circuit track: ")
    fixed = next((e for e in entries if e["board"]["reference"] == "fixed"), None)
    rows = rank_rows([{**single_head_row(e), **above_memoriser(e, fixed)} for e in entries])
    crows = rank_circuit_rows([circuit_row(e) for e in circuit_entries])
    table = markdown(rows, [], [])  # failures and refused files: their own section (below)
    out.mkdir(parents=True, exist_ok=True)
    radar_dir = out / "radar"
    figures = []
    if single:
        draw(bar_chart, rows, out / "board.png")
        draw(per_task_chart, rows, out / "per_task.png")
        radar_dir.mkdir(exist_ok=True)
        for r in rows:
            draw(radar, r, radar_dir / f"{check_name(r['name'])}.png")
        figures = [Figure("held-out best-of-5 recovery per entry (95% CI)", out / "board.png"),
                   Figure("best-of-5 recovery per held-out task; memoriser and chance as lines", out / "per_task.png")]  # fmt: skip
    readme = out / "README.md"
    text = readme.read_text() if readme.exists() else f"# Leaderboard\n\n{MARK_BEGIN}\n{MARK_END}\n"
    if MARK_BEGIN not in text:
        text += f"\n{MARK_BEGIN}\n{MARK_END}\n"
    head, rest = text.split(MARK_BEGIN, 1)
    tail = rest.split(MARK_END, 1)[1]
    body = ""
    for t, _, rows_t in transfer:
        mine = [f for f in unlisted if track(f) == t]
        unlisted = [f for f in unlisted if track(f) != t]
        body += with_status(transfer_markdown(rows_t, t) + "\n".join(failures_markdown(mine, [])), t) + "\n\n"
    planted = "".join(
        with_status(planted_markdown([Path(e["board"]["path"]) for e in t_entries], t), t)
        for t, t_entries in planted_by_track.items()
    )
    body += planted
    edge_text = "".join(f"{with_status(edge_markdown(rows_t, t), t)}\n" for t, rows_t in edges)
    body += edge_text
    if transfer and single:
        body += f"### Benchmark v5 (the held-out tasks on `toy`), {retired(B.SINGLE_HEAD)}\n\n"
    body += f"{table}\n\n![board](board.png)\n![per task](per_task.png)\n" if single else ""
    if crows:
        body += f"\n{circuit_markdown(crows)}\n"
    if unlisted or refused:
        body += (
            "\n### Failed submissions and refused result files\n"
            + "\n".join(failures_markdown(unlisted, refused, with_track=True))
            + "\n"
        )
    readme.write_text(f"{head}{MARK_BEGIN}\n{body}{probed}{MARK_END}{tail}")
    about = (f"Benchmark {IN_FORCE}, the one in force: its tracks' entries ranked on the maintainers' private "
             "material (the private model, the secret planted models), with the public quadrants anyone can "
             "reproduce. Check: hash-checked, rescored (render --rescore matched) or verified (rescored with "
             "private scores). Retired benchmarks: docs/archive.md; the sections marked 'Not ranking' are "
             f"retired ones still shown. {B.BENCHMARK_VERSION} (retired): held-out tasks "
             f"{', '.join(B.HELD_OUT_TASKS)} ({B.SPLIT} split), {len(B.EVAL_SEEDS)} seeds, {B.ABLATION} ablation, "
             f"lambda {B.LAM}; recovery: sum of chosen rewards / sum of oracle rewards over the episodes with a "
             "positive oracle; above memoriser: minus the fixed-head memoriser's on the same episodes.")  # fmt: skip
    write_page(out / "index.html", rows, {e["name"]: e for e in entries}, tasks=B.HELD_OUT_TASKS, about=about,
               failed=failed, refused=refused, radar={r["name"]: radar_dir / f"{check_name(r['name'])}.png" for r in rows},
               figures=figures, circuit_rows=crows, circuit_about=circuit_about() if crows else "",
               transfer=transfer, planted=planted, edges=edge_text)  # fmt: skip
    read: dict[str, int] = {}
    for path in paths:
        read[str(path.parent)] = read.get(str(path.parent), 0) + 1
    boards = {**{t: rows_t for t, _, rows_t in transfer},
              **{t: [{"name": e["name"], "check": e["board"]["check"]} for e in t_entries]
                 for t, t_entries in planted_by_track.items()},
              **{t: rows_t for t, rows_t in edges},
              B.SINGLE_HEAD: rows, B.CIRCUIT: crows}  # fmt: skip
    written = [readme, out / "index.html", *([out / "board.png", out / "per_task.png"] if single else [])]
    return {"rows": rows, "circuit_rows": crows, "refused": refused, "failed": [f["name"] for f in failed],
            "failures": [{"name": f["name"], "track": track(f)} for f in failed], "written": written,
            "transfer_rows": {t: rows_t for t, _, rows_t in transfer}, "read": read,
            "boards": {t: r for t, r in boards.items() if r}}  # fmt: skip
