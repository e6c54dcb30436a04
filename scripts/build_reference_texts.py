"""Write circuit_gym/data/stdlib_heldout.json: standard-library code the toy model never saw.

The general-damage reference must be the same on every machine, but the standard library
differs between Python versions, so the held-out snippets are extracted once (from the
files ``circuit_gym.tasks.corpus.stdlib_files`` holds out of training) and shipped.

    python scripts/build_reference_texts.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym.tasks.corpus import stdlib_files  # noqa: E402

N_SNIPPETS, SNIPPET_CHARS = 24, 1500


def main() -> None:
    _, held = stdlib_files()
    big = [t for t in held if len(t) > 3 * SNIPPET_CHARS]
    step = max(1, len(big) // N_SNIPPETS)
    snippets = []
    for text in big[::step][:N_SNIPPETS]:
        start = text.index("\n", len(text) // 2) + 1  # the middle: code, not license headers
        snippets.append(text[start : start + SNIPPET_CHARS])
    out = ROOT / "circuit_gym" / "data" / "stdlib_heldout.json"
    out.write_text(json.dumps({"python": sys.version.split()[0], "snippets": snippets}, indent=1))
    print(f"wrote {len(snippets)} snippets to {out}")


if __name__ == "__main__":
    main()
