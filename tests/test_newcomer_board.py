"""Issue 59: an entry without private scores is shown for what it is (placed on its public scores,
marked as awaiting the maintainers' private score, never below entries it beats on every column it
has); failure records are listed as failures in their own track's section and counted; paths are
printed as the user can use them from where they run."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from test_newcomer_progress import INTERVAL, SLACK, _TimedLog, longest_silence  # noqa: E402

from circuit_gym import benchmark as B
from circuit_gym import progress
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.transfer_tables import (
    AWAITING,
    rank_transfer_rows,
    transfer_markdown,
    transfer_row,
)

ROOT = Path(__file__).resolve().parents[1]
IN_FORCE = B.transfer_benchmark(B.IN_FORCE)
RESULTS = ROOT / "leaderboard" / "results" / IN_FORCE.results_folder
TRACK = IN_FORCE.track(B.SINGLE_HEAD)
# A newcomer's public scores (best-of-1 and best-of-5 per quadrant) above random's and fixed's on
# every public column of the committed results in force (checked below, from the files), no private score.
NEWCOMER = {1: {"seen_task_seen_model": 0.40, "unseen_task_seen_model": 0.35, "seen_task_unseen_model": 0.20,
                "unseen_task_unseen_model": 0.15},
            5: {"seen_task_seen_model": 0.90, "unseen_task_seen_model": 0.80, "seen_task_unseen_model": 0.30,
                "unseen_task_unseen_model": 0.25}}  # fmt: skip
PUBLIC = [f"{q}_k{k}" for q in B.QUADRANTS for k in B.KS]


def _committed(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def newcomer_result(name: str = "newcomer") -> dict:
    """The committed random entry as a newcomer's result: its own name and policy, the public
    scores of NEWCOMER, no private part, its content hash recomputed (what `score` writes)."""
    r = _committed("random")
    r["name"], r["provenance"]["policy"] = name, "newcomer_policy:make"
    for k, values in NEWCOMER.items():
        for q, value in values.items():
            r["scores"]["quadrants"][q][f"k{k}"].update(
                recovery=value, recovery_ci95=[value - 0.05, value + 0.05]
            )
    r.pop("private", None)
    r["content_hash"] = content_hash(r)
    return r


def failure_result(name: str = "crashed") -> dict:
    """A failure record of the single-head track in force, as the scorer writes one (status failed, no scores)."""
    r = _committed("random")
    r["name"], r["provenance"]["policy"], r["status"] = name, "crashing_policy:make", "failed"
    for key in ("scores", "private"):
        r.pop(key, None)
    r["failure"] = {"type": "PolicyError", "reason": "time limit of 20 s exceeded while ranking heads"}
    r["content_hash"] = content_hash(r)
    return r


def _row(result: dict) -> dict:
    return transfer_row({**result, "board": {"check": "hash-checked", "reference": None}})


def _beats_on_every_column(a: dict, b: dict) -> bool:
    shared = [c for c in PUBLIC if a.get(c) is not None and b.get(c) is not None]
    return bool(shared) and all(a[c] > b[c] for c in shared)


def test_a_public_only_newcomer_that_beats_random_and_fixed_is_not_ranked_below_them():
    rows = {n: _row(_committed(n)) for n in ("random", "fixed", "ppo", "testset_memoriser", "gim")}
    rows["newcomer"] = _row(newcomer_result())
    for reference in ("random", "fixed"):  # the premise, from the committed files
        assert _beats_on_every_column(rows["newcomer"], rows[reference]), reference
    ranked = rank_transfer_rows(list(rows.values()))
    names = [r["name"] for r in ranked]
    assert names.index("newcomer") < names.index("random") and names.index("newcomer") < names.index("fixed")
    # the property itself: nothing above the newcomer is beaten by it on every column it has
    assert not any(
        _beats_on_every_column(rows["newcomer"], rows[n]) for n in names[: names.index("newcomer")]
    )
    assert [r["awaiting"] for r in ranked] == [n == "newcomer" for n in names]
    line = next(line for line in transfer_markdown(ranked, TRACK).splitlines() if "newcomer" in line)
    assert AWAITING in line and "0.150" in line  # its public number is shown with the marker
    assert "awaiting" not in rows["newcomer"]  # the input rows are not changed


def test_entries_with_private_scores_keep_their_order():
    rows = [_row(_committed(n)) for n in ("random", "fixed", "ppo", "gim")]
    private = [r["name"] for r in sorted(rows, key=lambda r: -r["private_k1"])]
    assert [r["name"] for r in rank_transfer_rows(rows)] == private


def test_a_newcomer_below_every_entry_goes_last_and_one_above_all_goes_first():
    rows = [_row(_committed(n)) for n in ("random", "fixed", "ppo")]
    low = {**_row(newcomer_result("low")), "unseen_task_unseen_model_k1": -0.5}
    high = {**_row(newcomer_result("high")), "unseen_task_unseen_model_k1": 0.99}
    private = [r["name"] for r in sorted(rows, key=lambda r: -r["private_k1"])]  # from the files
    assert [r["name"] for r in rank_transfer_rows([*rows, low, high])] == ["high", *private, "low"]


def test_the_board_shows_policy_cpu_per_episode_from_the_result():
    ppo = _committed("ppo")
    cpu = ppo["diagnostics"]["policy_cpu"]
    by_hand = cpu["calls_s"] / sum(q["k1"]["episodes"] for q in ppo["scores"]["quadrants"].values())
    assert _row(ppo)["policy_cpu"] == pytest.approx(by_hand)
    assert _row(_committed("gim"))["policy_cpu"] is None  # a white-box builtin runs in the scorer: no measure
    table = transfer_markdown([_row(ppo)], TRACK)
    assert "policy CPU s / episode" in table.splitlines()[4] and f"{by_hand:.2g} |" in table


@pytest.mark.slow
def test_render_lists_failures_in_their_track_section_and_counts_them(tmp_path, monkeypatch, capsys):
    from circuit_gym.cli import main

    results = tmp_path / "results"
    results.mkdir()
    (results / "newcomer.json").write_text(json.dumps(newcomer_result()))
    (results / "crashed.json").write_text(json.dumps(failure_result()))
    files = [*sorted(RESULTS.glob("*.json")), results / "newcomer.json", results / "crashed.json"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a user running from outside the clone
    monkeypatch.setenv(progress.INTERVAL_ENV_VAR, str(INTERVAL))  # and watching its log
    monkeypatch.delenv(progress.PROGRESS_ENV_VAR, raising=False)
    log = _TimedLog()
    monkeypatch.setattr(sys, "stderr", log)
    start = time.monotonic()
    assert main(["leaderboard", "render", "--out", "board", "--results", *map(str, files)]) == 0
    end = time.monotonic()
    out = capsys.readouterr().out
    err = "\n".join(text for _, text in log.lines)
    assert "1 failed" in out and "0 failed" not in out and "failed: crashed" in err
    assert longest_silence([t for t, _ in log.lines], start, end) <= SLACK * INTERVAL, log.lines
    written = out.split("wrote ", 1)[1].split(", ")
    assert all((elsewhere / w.strip()).exists() for w in written)  # relative to where the user runs
    board = (elsewhere / "board" / "README.md").read_text()
    sections = board.split("\n### ")
    own = next(s for s in sections if s.startswith(f"Benchmark {B.IN_FORCE}, transfer track, single head"))
    assert "crashed" in own and "Failed submissions (1, no score)" in own
    newcomer = next(line for line in own.splitlines() if line.startswith("|") and "newcomer" in line)
    assert AWAITING in newcomer
    table = [line for line in own.splitlines() if line.startswith("| ") and line[2].isdigit()]
    order = [line.split("|")[2].strip(" *").split(" ")[0] for line in table]
    assert order.index("newcomer") < order.index("random") and "crashed" not in order
    # listed under its own track's section only
    assert not any("crashed" in s for s in sections if s != own)


def test_every_entry_name_of_the_board_in_force_is_defined_in_readmes_glossary():
    text = (ROOT / "README.md").read_text()
    glossary = text[text.index("- **ablation**") :]
    names = {json.loads(p.read_text())["name"] for p in RESULTS.rglob("*.json")}  # every track in force
    assert "gim" in names
    assert not sorted(n for n in names if f"`{n}`" not in glossary)


def test_the_main_jobs_results_explain_themselves(tmp_path):
    from circuit_gym.baselines import main_job as M

    entries = {}
    for n in ("ppo", "random", "testset_memoriser", "greedy"):
        e = _committed(n)
        e.pop("private", None)
        entries[n] = {**e, "board": {"check": "this run", "reference": True}}
    png = M.quadrant_plot(entries, tmp_path / "results.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    config = M.ppo_config(M.BUDGET, 0)
    text = M.results_markdown(entries, M.BUDGET, config)
    assert all(M.SHORT[q] in text.split("## Reading the table")[1] for q in B.QUADRANTS)
    assert "test-set memoriser" in text and "private model" in text
    # the job's budget against the recipe's, with the numbers
    assert (
        f"{config.epochs * config.steps_per_epoch:,} steps" in text and f"{config.pool_size} training" in text
    )
