"""Numbers in README.md and docs/*.md come from the committed result files (one source), and no
page names a model run that does not ship. When a test here fails after a result file changed,
run `python scripts/gen_docs_numbers.py` and commit the pages."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "stale numbers: run `python scripts/gen_docs_numbers.py` and commit the pages"


def _load_generator():
    spec = importlib.util.spec_from_file_location(
        "gen_docs_numbers", ROOT / "scripts" / "gen_docs_numbers.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


@pytest.mark.parametrize("page", gen.pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_marked_number_matches_its_file(page):
    _, changes = gen.fill(page.read_text(), str(page.relative_to(ROOT)))
    assert not changes, REGENERATE + "\n" + "\n".join(changes)


def test_a_changed_number_is_caught():
    text = (ROOT / "README.md").read_text()
    marker = re.search(r"<!--n seeds:ppo_held_out_k5\.mean-->(?P<v>[^<]*)<!--/n-->", text)
    assert marker, "README's headline PPO number is not marked"
    tampered = text.replace(marker.group(0), marker.group(0).replace(marker["v"], "0.999"))
    filled, changes = gen.fill(tampered, "README.md")
    assert len(changes) == 1 and "'0.999' should be" in changes[0]
    assert filled == text  # the generator writes the number back


def test_a_changed_table_is_caught():
    text = (ROOT / "README.md").read_text()
    tampered = text.replace("| PPO | 0.7", "| PPO | 0.6", 1)
    assert tampered != text
    _, changes = gen.fill(tampered, "README.md")
    assert changes == [changes[0]] and "pooled-recovery" in changes[0]


@pytest.mark.parametrize(
    ("marker", "error"),
    [
        ("<!--n nowhere:a.b-->1<!--/n-->", "unknown source"),
        ("<!--n seeds:no_such_key-->1<!--/n-->", "no such key"),
        ("<!--n seeds:ppo_held_out_k1.values.99-->1<!--/n-->", "no such key or index"),
        ("<!--n track:rows[solver=ppo].cpr-->1<!--/n-->", "matches 4 elements, not 1"),  # 3 tasks and "all"
        ("<!--n track:command-->1<!--/n-->", "not a number"),
        ("<!--n board:scores-->1<!--/n-->", "write board/NAME"),
        ("<!--n seeds-->1<!--/n-->", "want SOURCE:PATH"),
        ("<!--n board/no_such_entry:scores-->1<!--/n-->", "no result file"),
        ("<!--n seeds:ppo_held_out_k1.values|median-->1<!--/n-->", "unknown reducer"),
        ("<!--table no-such-table-->\n<!--/table-->", "unknown table"),
    ],
)
def test_a_bad_marker_is_a_clear_error(marker, error):
    with pytest.raises(gen.SpecError, match=re.escape(error)):
        gen.fill(f"line one\n{marker}\n", "page.md")


def test_headline_numbers_are_marked():
    """The README's results come from the files, not typed in: its tables are generated and its
    targets are markers (so the check above covers them)."""
    text = (ROOT / "README.md").read_text()
    for table in ("pooled-recovery", "circuit-track", "env-ids"):
        assert f"<!--table {table}-->" in text
    for source in ("seeds:", "track:", "results:wall_seconds", "timings:make_test"):
        assert f"<!--n {source}" in text


def _unmarked(text: str) -> str:
    """The text a reader sees that no marker or generated table produced (code blocks dropped)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = gen.BLOCK.sub("", text)
    return gen.INLINE.sub("", text)


# Results on these pages: three-decimal values, intervals and thousands (times, passes).
RESULT_NUMBER = re.compile(r"\b\d\.\d{3}\b|\[-?\d+\.\d+, -?\d+\.\d+\]|\b\d{1,3},\d{3}\b")


@pytest.mark.parametrize("name", ["README.md", "docs/results.md"])
def test_no_result_number_is_typed_in(name):
    found = RESULT_NUMBER.findall(_unmarked((ROOT / name).read_text()))
    # 10,296 pairs = C(144, 2): arithmetic, not a result
    assert [n for n in found if n != "10,296"] == [], f"{name}: mark these numbers with their source file"


def test_pooled_recovery_agrees_with_the_episodes():
    """Independent check of the README's headline number: seed 0's held-out best-of-5 recovery of
    PPO recomputed from results.json's episode records (ratio of sums over positive oracles)."""
    results = json.loads((ROOT / "docs/results/results.json").read_text())
    episodes = [
        e for e in results["episodes"] if e["solver"] == "ppo" and e["k"] == 5 and e["split"] == "test"
    ]
    positive = [e for e in episodes if e["oracle_reward"] > 0]
    assert len(episodes) == 144
    recovery = sum(e["reward"] for e in positive) / sum(e["oracle_reward"] for e in positive)
    assert f"| PPO | 0.737 [0.67, 0.80] | {recovery:.3f} " in (ROOT / "README.md").read_text()


# ---- model runs ---------------------------------------------------------------------------

SHIPPED_RUNS = {"D", "F"}  # toy_d = run D, toy = run F (tiny is named, not lettered)
RUN_NAMES = re.compile(r"\b[Rr]uns?[ -]((?:[A-Z]\b)(?:(?:, | and | ?- ?|-)[A-Z]\b)*)")
# Pages about the models and environments a user gets. The training history
# (docs/training/README.md, the model cards' "what was tried") names the runs that were tried.
RUN_PAGES = ("README.md", "CONTRIBUTING.md", "docs/*.md", "docs/envs/*.md", "leaderboard/README.md")


def unshipped_runs(text: str) -> set[str]:
    named = set()
    for m in RUN_NAMES.finditer(text):
        letters = re.findall(r"[A-Z]", m.group(1))
        if "-" in m.group(1) and len(letters) == 2:  # a range: runs A-E
            letters = [chr(c) for c in range(ord(letters[0]), ord(letters[1]) + 1)]
        named |= set(letters)
    return named - SHIPPED_RUNS


def test_the_run_check_reads_names_as_a_reader_does():
    assert unshipped_runs("the shipped toy is run F, toy_d is run D") == set()
    assert unshipped_runs("the v4 model is run E") == {"E"}
    assert unshipped_runs("runs A, B and C failed; Runs A-E; the run-E recipe") == {"A", "B", "C", "E"}
    assert unshipped_runs("a run D was kept. Run Docs") == set()


@pytest.mark.parametrize(
    "page",
    sorted({p for pattern in RUN_PAGES for p in ROOT.glob(pattern)}),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_page_names_a_run_that_does_not_ship(page):
    assert unshipped_runs(page.read_text()) == set(), (
        f"{page.relative_to(ROOT)} names a run that does not ship"
    )
