"""Every relative link of the user-facing Markdown resolves: the file exists and, for ``#anchor``,
the target has that heading under GitHub's slug rule (or an HTML ``id`` / ``name``). README once
linked ``docs/models.md#threads``, a heading that did not exist."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted({ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "leaderboard" / "README.md",
                *(ROOT / "docs").rglob("*.md")})  # fmt: skip

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the text may hold one level of brackets (a badge)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_TARGET = re.compile(r"""<[^>]+\s(?:href|src)=["']([^"']+)["']""")
HTML_ANCHOR = re.compile(r"""<[^>]+\s(?:id|name)=["']([^"']+)["']""")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, inline code spans blanked (links there are examples)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: the rendered text (markup and link targets gone),
    lower-cased, every character but letters, digits, spaces, hyphens and underscores dropped,
    spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = INLINE_CODE.sub(lambda m: m.group(2), text)
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)  # emphasis markers (not snake_case)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every anchor ``page`` defines: its headings' slugs (a repeated one gets -1, -2, ... as on
    GitHub) and HTML ``id`` / ``name`` attributes."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(page.read_text()):
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if heading:
            slug = github_slug(heading.group(2))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return frozenset(found)


def links(page: Path) -> list[str]:
    out = []
    for line in prose_lines(page.read_text()):
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            out.append(definition.group(1))
            continue
        line = INLINE_CODE.sub("", line)
        out += INLINE_LINK.findall(line) + HTML_TARGET.findall(line)
    return out


def broken(page: Path) -> list[str]:
    """``page``'s relative links that do not resolve, each with the reason."""
    out = []
    for target in links(page):
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            continue  # a web address (http:, mailto:...) is not checked here
        path, _, anchor = target.partition("#")
        resolved = (page.parent / unquote(path)).resolve() if path else page
        if not resolved.exists():
            out.append(
                f"{target}: no such file {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved}"
            )
        elif anchor and resolved.suffix == ".md" and unquote(anchor).lower() not in anchors(resolved):
            out.append(f"{target}: {resolved.relative_to(ROOT)} has no heading with the anchor #{anchor}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    assert broken(page) == []


def test_github_slugs():
    """GitHub's rule, on headings as they appear here (its documented examples and ours)."""
    assert github_slug("Threads and speed") == "threads-and-speed"
    assert github_slug("Builtin white-box solvers") == "builtin-white-box-solvers"
    assert github_slug("What `CIRCUIT_GYM_THREADS` does (1.0)") == "what-circuit_gym_threads-does-10"
    assert (
        github_slug("**Benchmark v8**: the [transfer](transfer.md) tracks")
        == "benchmark-v8-the-transfer-tracks"
    )
    assert github_slug("Zoo, Planted & Toy") == "zoo-planted--toy"


def test_the_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Threads and speed\n\nbody\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#threads-and-speed) [self](#local) [gone](c.md) [bad](a.md#threads)\n"
        "## Local\n```\n[not a link](nowhere.md)\n```\n`[inline](nowhere.md)` [web](https://example.org/x#y)\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = broken(page)
    finally:
        ROOT = saved
    assert len(found) == 2 and found[0].startswith("c.md: no such file") and "#threads" in found[1]
