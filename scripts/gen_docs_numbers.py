"""Fill the numbers in README.md and docs/*.md from the committed result files (one source).

The syntax of the markers is in :mod:`circuit_gym.docs_numbers.engine`'s docstring.

    python scripts/gen_docs_numbers.py            # rewrite the pages
    python scripts/gen_docs_numbers.py --check    # list stale numbers, exit 1 if any (a test runs this)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.docs_numbers.pages import regenerate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report stale numbers; exit 1 if any")
    parser.add_argument("only", nargs="*", metavar="PAGE", help="only these pages (default: every page)")
    args = parser.parse_args(argv)
    try:
        return regenerate(args.only, args.check)
    except ValueError as err:
        parser.error(str(err))


if __name__ == "__main__":
    sys.exit(main())
