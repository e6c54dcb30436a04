"""Write one documentation page per registered environment ID, with its picture
(:mod:`circuit_gym.env_pages`, whose docstring says what a page holds).

    python scripts/gen_env_docs.py            # pages and images -> docs/envs/
    python scripts/gen_env_docs.py --check    # exit 1 if a committed page differs (no images)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym import env_pages  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare the pages with docs/envs/ (no images)")
    parser.add_argument("--no-images", action="store_true", help="write the pages only")
    args = parser.parse_args(argv)
    if args.check:
        stale = env_pages.stale()
        for name in stale:
            print(f"stale: docs/envs/{name}")
        return 1 if stale else 0
    env_pages.write(images=not args.no_images)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
