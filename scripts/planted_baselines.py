"""Planted models: how far observation features, shallow-first and ACDC get against the ground
truth (circuit_gym.baselines.planted_baselines: what is measured and how).

    python scripts/planted_baselines.py --out benchmarks/results/planted.json \\
        --select-seeds 0-9 --report-seeds 100-109

Resumable: measurements are appended to ``OUT.partial.jsonl`` as they finish; a second process
with ``--reverse`` shares the work (each skips what the file already holds).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from circuit_gym.baselines.planted_baselines import run


def seed_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="JSON file (summary + every measurement)")
    parser.add_argument(
        "--select-seeds", default="0-9", help="seeds that choose the feature column, e.g. 0-9"
    )
    parser.add_argument("--report-seeds", default="100-109", help="seeds the numbers are reported on")
    parser.add_argument("--reverse", action="store_true", help="work from the end (a second process)")
    args = parser.parse_args()
    select_seeds, report_seeds = seed_range(args.select_seeds), seed_range(args.report_seeds)
    command = (f"python scripts/planted_baselines.py --out {args.out} --select-seeds {args.select_seeds} "
               f"--report-seeds {args.report_seeds}")  # fmt: skip
    summary = run(args.out, select_seeds, report_seeds, reverse=args.reverse, command=command)
    if summary is not None:
        print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
