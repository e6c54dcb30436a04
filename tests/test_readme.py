"""README's code runs as shown: the quick start prints exactly the output pasted under it (it is
seeded), and the example policy satisfies the protocol the scorer checks."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import gymnasium as gym
import numpy as np

from circuit_gym.policy import check_scores

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def test_quick_start_prints_what_readme_shows(tmp_path, monkeypatch):
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))  # from an empty cache, as a new user
    code, shown = re.search(r"```python\n(.*?)```\n.*?```\n(.*?)```", _section("Quick start"), re.S).groups()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == shown


def test_policy_example_follows_the_protocol():
    section = _section("Write a policy, get on the leaderboard")
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    env = gym.make("CircuitDiscovery-Toy-IOI-v1", pool_size=1, batch_size=4)
    obs, _ = env.reset(seed=0)
    scores = check_scores(scope["make_policy"]().rank_heads(obs), obs.shape[0])
    assert scores.shape == (obs.shape[0],) and np.all(np.isfinite(scores))
    assert "--policy myteam.policy:make_policy" in section  # the command names the example's module


def test_readme_leads_with_what_a_newcomer_needs_and_keeps_long_results_in_docs():
    """Issue 33: install, quick start, the IDs, headline results and the glossary, in that order; the
    full result tables live in docs/results.md, so README's results hold one generated table."""
    order = ["Install", "Quick start", "Environments", "Results", "Glossary"]
    positions = [README.index(f"\n## {title}\n") for title in order]
    assert positions == sorted(positions)
    results = _section("Results")
    assert re.findall(r"<!--table ([\w-]+)-->", results) == ["transfer-headline"]
    assert "](docs/results.md" in results
    full = (ROOT / "docs/results.md").read_text()
    for table in ("transfer-single-head-k1", "transfer-circuit-cpr", "pooled-recovery", "circuit-track"):
        assert f"<!--table {table}-->" in full and f"<!--table {table}-->" not in README


RETIRED = re.compile(r"\b(v5|v6|v7)\b|zoo v1|\bzoo[1-4]\b|first Planted|`Zoo` IDs")


def test_readme_describes_the_benchmark_in_force_and_only_links_the_retired_ones():
    """Issue 56: README names a retired benchmark (v5, v6, v7, zoo v1, the first Planted track) only in
    the sentence that links the archive page, and the results it shows are the in-force board's."""
    sentences = re.split(r"(?<=\.)\s+", README)
    naming = [s for s in sentences if RETIRED.search(s)]
    assert naming and all("](docs/archive.md)" in s for s in naming), naming
    from circuit_gym import benchmark

    bench = benchmark.transfer_benchmark(benchmark.IN_FORCE)
    assert f"**Benchmark {bench.version}, the board in force" in _section("Results")


def test_the_docs_index_links_every_page_of_docs():
    """docs/README.md is the index of docs/: a page it does not link is a page nobody finds."""
    index = (ROOT / "docs" / "README.md").read_text()
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]*)?\)", index))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages and pages <= linked, sorted(pages - linked)
