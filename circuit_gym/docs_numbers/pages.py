"""The pages whose numbers and tables are generated, filled by the engine with the docs' tables:
what ``scripts/gen_docs_numbers.py`` runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from circuit_gym.docs_numbers import engine
from circuit_gym.docs_numbers.engine import ROOT, pages
from circuit_gym.docs_numbers.tables import TABLES


def fill(text: str, where: str = "") -> tuple[str, list[str]]:
    """``text`` with every marked number and table regenerated (:func:`engine.fill` with
    :data:`TABLES`), and what changed."""
    return engine.fill(text, TABLES, where)


def regenerate(only: Sequence[str | Path] = (), check: bool = False) -> int:
    """Fill every page (or the pages ``only`` names, relative to the repository): rewrite the stale
    ones, or with ``check`` only list what is stale; 1 if ``check`` found a stale number, else 0.
    ValueError for a page this does not fill."""
    chosen = {(ROOT / p).resolve() for p in only}
    unknown = sorted(str(p) for p in chosen - {page.resolve() for page in pages()})
    if unknown:
        raise ValueError(f"not a page this script fills (README.md, CONTRIBUTING.md, docs/*.md): {unknown}")
    stale = []
    for page in pages():
        if chosen and page.resolve() not in chosen:
            continue
        text = page.read_text()
        new, changes = fill(text, str(page.relative_to(ROOT)))
        stale += changes
        if changes and not check:
            page.write_text(new)
    for change in stale:
        print(change)
    if check and stale:
        print(f"{len(stale)} stale: run python scripts/gen_docs_numbers.py", file=sys.stderr)
        return 1
    return 0
