"""Numbers in README.md and docs/*.md come from the committed result files (one source), and no
page names a model run that does not ship. When a test here fails after a result file changed,
run `python scripts/gen_docs_numbers.py` and commit the pages."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from circuit_gym import benchmark as B
from circuit_gym.docs_numbers import engine as gen
from circuit_gym.docs_numbers import pages as docs_pages

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "stale numbers: run `python scripts/gen_docs_numbers.py` and commit the pages"


@pytest.mark.parametrize("page", docs_pages.pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_marked_number_matches_its_file(page):
    _, changes = docs_pages.fill(page.read_text(), str(page.relative_to(ROOT)))
    assert not changes, REGENERATE + "\n" + "\n".join(changes)


@pytest.mark.parametrize("page", docs_pages.pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_marker_hides_in_inline_code(page):
    """A marker inside `...` is shown as text and never filled; only CONTRIBUTING's syntax example
    may be there."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    hidden = [m.group(0) for m in re.finditer(r"`[^`\n]*<!--n [^`\n]*`", text)]
    assert [h for h in hidden if "SOURCE:PATH[:FORMAT]" not in h] == []


def test_a_changed_number_is_caught():
    text = (ROOT / "README.md").read_text()
    marker = re.search(  # the benchmark in force's PPO, on its private models
        rf"<!--n board/{B.IN_FORCE}/ppo:private\.scores\.overall\.k1\.recovery:\.3f-->(?P<v>[^<]*)<!--/n-->",
        text,
    )
    assert marker, "README's headline PPO number is not marked"
    tampered = text.replace(marker.group(0), marker.group(0).replace(marker["v"], "0.999"))
    filled, changes = docs_pages.fill(tampered, "README.md")
    assert len(changes) == 1 and "'0.999' should be" in changes[0]
    assert filled == text  # the generator writes the number back


def test_a_changed_table_is_caught():
    text = (ROOT / "README.md").read_text()
    row = re.search(r"^\| ppo \| (?P<v>-?\d\.\d{3}) ", text, re.M)
    assert row, "README's headline table has no ppo row"
    tampered = text.replace(row.group(0), row.group(0).replace(row["v"], "0.111"), 1)
    assert tampered != text
    _, changes = docs_pages.fill(tampered, "README.md")
    assert changes == [changes[0]] and "transfer-headline" in changes[0]


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
        ("<!--n py/no_such_module_here:X-->1<!--/n-->", "No module named"),
        ("<!--n py:X-->1<!--/n-->", "write py/NAME"),
        ("<!--n registry/tasks:tasks|len:d-->1<!--/n-->", "write registry"),
        ("<!--n weights/no_such_model:parameters-->1<!--/n-->", "no weight file"),
        ("<!--n card/toy:weights_hash-->1<!--/n-->", "not a number"),
        ("<!--n card/toy:suite.episodes:s-->1<!--/n-->", "not a string"),
        ("<!--n card/toy:suite.episodes.*|len:d-->1<!--/n-->", "'*' wants one list or dict"),
        ("<!--n card/toy:suite.tasks.*.*.accuracy|len:d-->1<!--/n-->", "'*' wants one list or dict"),
        ("<!--n docs/results/nothing*/x.json:a-->1<!--/n-->", "no result file matches"),
    ],
)
def test_a_bad_marker_is_a_clear_error(marker, error):
    with pytest.raises(gen.SpecError, match=re.escape(error)):
        docs_pages.fill(f"line one\n{marker}\n", "page.md")


@pytest.mark.parametrize(
    ("name", "tables", "sources"),
    [
        ("README.md", ("transfer-headline",),
         (f"board/{B.IN_FORCE}/", f"bench/main_job_{B.IN_FORCE}:", "timings:make_test")),
        ("docs/results.md", ("transfer-single-head-k1", "transfer-single-head-k5", "transfer-circuit-cpr",
                             "transfer-learned-agents", "pooled-recovery", "per-task-recovery", "circuit-track"),
         ("transfer:", "seeds:", "track:", "results:")),
    ],
)  # fmt: skip
def test_headline_numbers_are_marked(name, tables, sources):
    """README's headline results and the full results page come from the files, not typed in: their
    tables are generated and their targets are markers (so the check above covers them)."""
    text = (ROOT / name).read_text()
    for table in tables:
        assert f"<!--table {table}-->" in text
    for source in sources:
        assert f"<!--n {source}" in text


def _unmarked(text: str) -> str:
    """The text a reader sees that no marker, generated table or dated historical measurement
    produced (code blocks dropped)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = gen.BLOCK.sub("", text)
    text = gen.MEASURED.sub("", text)
    return gen.INLINE.sub("", text)


# Results on these pages: three-decimal values, intervals and thousands (times, passes).
RESULT_NUMBER = re.compile(r"\b\d\.\d{3}\b|\[-?\d+\.\d+, -?\d+\.\d+\]|\b\d{1,3},\d{3}\b")
# Measurements with a unit (seconds, minutes, sizes, nats, percentages) and speed-ups (x1.02, 3.6x).
MEASUREMENT = re.compile(
    r"\b\d[\d,]*(?:\.\d+)? ?(?:s|min|ms|MB|GB|nats|%)(?![\w/-])|\bx\d+\.\d+|\b\d+(?:\.\d+)?x\b"
)
# Pages whose every result comes from a shipped file (issue 33): the README's results, the full
# results, and the pages on circuit building, models, tasks, the leaderboard, the zoo, the planted
# models and circuit scoring, the engine, the baselines, environments and SB3, and the
# transfer pages (transfer, private model, memorisers).
CHECKED_PAGES = ("README.md", "docs/results.md", "docs/circuit_envs.md", "docs/models.md", "docs/tasks.md",
                 "docs/leaderboard.md", "docs/zoo.md", "docs/planted.md", "docs/circuits.md", "docs/engine-and-benchmarks.md",
                 "docs/baselines.md", "docs/environments.md", "docs/sb3.md", "docs/transfer.md",
                 "docs/private_model.md", "docs/transfer_baselines.md")  # fmt: skip


@pytest.mark.parametrize("name", CHECKED_PAGES)
def test_no_result_number_is_typed_in(name):
    text = _unmarked((ROOT / name).read_text())
    found = RESULT_NUMBER.findall(text) + [
        n for n in MEASUREMENT.findall(text) if n != "95%"
    ]  # 95%: CI level
    # 10,296 pairs = C(144, 2): arithmetic, not a result
    assert [n for n in found if n != "10,296"] == [], f"{name}: mark these numbers with their source file"


def test_the_typed_in_check_sees_what_a_reader_sees():
    assert RESULT_NUMBER.findall(_unmarked("PPO 0.737 [0.67, 0.80] in 1,301 s")) == [
        "0.737",
        "[0.67, 0.80]",
        "1,301",
    ]
    assert MEASUREMENT.findall(_unmarked("took 25.5 min, 711 s, 3.2 MB, 7.68 nats, 0.98%, x1.02, 3.6x")) == [
        "25.5 min", "711 s", "3.2 MB", "7.68 nats", "0.98%", "x1.02", "3.6x"]  # fmt: skip
    assert MEASUREMENT.findall("heads 1.2 and 0.10, 12 x 12, budget 16, v8, run D's 2-layer stack") == []
    marked = (
        "<!--n track:seconds:,.0f-->711<!--/n--> s; <!--measured-->7.4 min (2026-11-23, `x`)<!--/measured-->"
    )
    assert MEASUREMENT.findall(_unmarked(marked)) == []


DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


@pytest.mark.parametrize("page", docs_pages.pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_historical_measurement_says_when_and_how(page):
    """A number no shipped file holds is allowed only inside <!--measured--> with its date and its
    command (or the file or run it was computed from) in backticks."""
    for m in gen.MEASURED.finditer(page.read_text()):
        assert DATE.search(m["text"]) and re.search(r"`[^`]+`", m["text"]), (
            f"{page.relative_to(ROOT)}: a measured passage needs a date and a command: {m['text']!r}"
        )


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
    assert f"| PPO | 0.737 [0.67, 0.80] | {recovery:.3f} " in (ROOT / "docs/results.md").read_text()


def test_headline_table_agrees_with_the_board_files():
    """Independent check of README's headline table (the benchmark in force): each entry's best-of-1
    recovery on the held-out tasks of the public held-out models, recomputed from the episode records
    of its board result file (ratio of sums over positive oracles), and its private-model value read
    from the same file, not through the report that renders the table."""
    from circuit_gym import benchmark

    bench = benchmark.transfer_benchmark(benchmark.IN_FORCE)
    readme = (ROOT / "README.md").read_text()
    files = sorted((ROOT / "leaderboard/results" / bench.results_folder).glob("*.json"))
    assert len(files) >= 5
    for path in files:
        result = json.loads(path.read_text())
        episodes = [e for e in result["scores"]["episodes"] if e["model"] in bench.held_out_models
                    and e["task"] in bench.held_out_tasks and e["oracle_reward"] > 0]  # fmt: skip
        assert episodes, path.name
        recovery = sum(e["reward_k1"] for e in episodes) / sum(e["oracle_reward"] for e in episodes)
        private = result["private"]["scores"]["overall"]["k1"]["recovery"]
        row = re.search(
            rf"^\| {result['name']} \| (?P<private>-?[\d.]+) \[[^]]*\] \| (?P<unseen>-?[\d.]+) ", readme, re.M
        )
        assert row, f"README's headline table has no row {result['name']}"
        assert (row["private"], row["unseen"]) == (f"{private:.3f}", f"{recovery:.3f}"), result["name"]


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


# ---- sources beyond result files -----------------------------------------------------------


def test_weights_source_counts_what_torch_loads():
    from safetensors.torch import load_file

    tensors = load_file(str(ROOT / "circuit_gym/models/toy/model.safetensors"))
    assert gen.lookup("weights/toy", "parameters") == sum(t.numel() for t in tensors.values())
    size = (ROOT / "circuit_gym/models/toy/model.safetensors").stat().st_size
    assert gen.lookup("weights/toy", "megabytes") == size / 1e6


def test_prose_rows_are_what_reference_batch_can_cut():
    """The page's row count is the most rows of 48 that reference_batch cuts from the prose."""
    from types import SimpleNamespace

    from circuit_gym.models.random_checkpoint import gpt2_tokenizer
    from circuit_gym.tasks.reference import reference_batch

    rows = gen.lookup("prose", "rows_of_48")
    model = SimpleNamespace(tokenizer=gpt2_tokenizer(), cfg=SimpleNamespace(n_ctx=1024),
                            circuit_gym_info=SimpleNamespace(name="gpt2"))  # fmt: skip
    assert reference_batch(model, "prose", n_rows=rows).tokens.shape == (rows, 48)
    with pytest.raises(ValueError, match=f"has only {rows} rows"):
        reference_batch(model, "prose", n_rows=rows + 1)


def test_registry_and_module_sources_read_the_code():
    from circuit_gym import benchmark
    from circuit_gym.tasks import get_task, list_tasks

    # The package's suite, as registered on import: a test that made a Planted ID earlier in this
    # process has registered the planted tasks too, which the docs do not count.
    suite = [t for t in list_tasks() if get_task(t).family != "planted"]
    assert gen.lookup("registry", "tasks") == suite and "capital" in suite
    assert gen.lookup("registry", "tasks|len") == len(suite)
    assert gen.lookup("registry", "families") == sorted({get_task(t).family for t in suite})
    assert gen.lookup("py/circuit_gym.benchmark", "EVAL_SEEDS|max") == max(benchmark.EVAL_SEEDS)


def test_star_and_glob_map_over_elements():
    card = json.loads((ROOT / "circuit_gym/models/toy/card_metrics.json").read_text())
    accuracies = [t["accuracy"] for t in card["suite"]["tasks"].values()]
    assert gen.lookup("card/toy", "suite.tasks.*.accuracy|min") == min(accuracies)
    runs = sorted((ROOT / "docs/results/circuit").glob("ppo*/train_summary.json"))
    best = [json.loads(r.read_text())["best_selection_score"] for r in runs]
    assert gen.lookup("docs/results/circuit/ppo*/train_summary.json", "*.best_selection_score|max") == max(
        best
    )
    assert gen.fmt("fdf4913b74e4", ".8s") == "fdf4913b"


def test_the_board_numbers_follow_a_rescore(tmp_path, monkeypatch):
    """README's board numbers are read from leaderboard/results: a rescored file (here: the PPO
    reference of the single-head track in force, its private best-of-1 changed) changes the page
    when regenerated, at that marker only."""
    board = tmp_path / "results"
    shutil.copytree(ROOT / "leaderboard/results", board)
    path = board / B.transfer_benchmark(B.IN_FORCE).results_folder / "ppo.json"
    ppo = json.loads(path.read_text())
    ppo["private"]["scores"]["overall"]["k1"]["recovery"] = 0.5
    path.write_text(json.dumps(ppo))
    monkeypatch.setitem(gen.SOURCES, "board", str(board / "{}.json"))
    gen.load.cache_clear()
    try:
        filled, changes = docs_pages.fill((ROOT / "README.md").read_text(), "README.md")
    finally:
        gen.load.cache_clear()
    assert len(changes) == 1, changes
    assert f"<!--n board/{B.IN_FORCE}/ppo:private.scores.overall.k1.recovery:.3f-->0.500<!--/n-->" in filled


def test_naming_a_page_the_generator_does_not_fill_is_an_error():
    with pytest.raises(ValueError, match="no_such_page.md"):
        docs_pages.regenerate(["docs/no_such_page.md"], check=True)
    assert docs_pages.regenerate(["README.md"], check=True) == 0  # a page it fills is checked alone
