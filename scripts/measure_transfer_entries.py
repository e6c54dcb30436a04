"""Benchmark v6's reference baselines of issue 35 items 5 and 6, measured in the four quadrants
(circuit_gym.baselines.transfer_entries: what and how); writes ``entries.json`` / ``entries.md``.

    python scripts/measure_transfer_entries.py --out-dir docs/results/transfer
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.baselines.transfer_entries import CEILING_REPORT, TRANSFER, markdown, run  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transfer-dir", type=Path, default=TRANSFER, help="where the checkpoints are")
    p.add_argument("--ceiling-report", type=Path, default=CEILING_REPORT)
    p.add_argument("--out-dir", type=Path, default=TRANSFER)
    args = p.parse_args(argv)
    print(markdown(run(args.transfer_dir, args.ceiling_report, args.out_dir)))


if __name__ == "__main__":
    main()
