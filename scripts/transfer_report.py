"""Benchmark v6's results in one report (:mod:`circuit_gym.baselines.transfer_report`, whose
docstring says what it reads; nothing here chooses anything).

    python scripts/transfer_report.py      # -> docs/results/transfer/report.json and report.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.baselines import transfer_report  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(
        description=transfer_report.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)
    transfer_report.write_report()


if __name__ == "__main__":
    main()
