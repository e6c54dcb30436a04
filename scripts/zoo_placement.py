"""How far the zoo's circuits move between models: modal oracle heads and top-5 overlap
(circuit_gym.reporting.zoo_placement).

    python scripts/zoo_placement.py                       # toy + every trained zoo member
    python scripts/zoo_placement.py --models toy toy_d    # any embedded models with a card

Prints and writes (``--out``, JSON) per task the modal head of every model where the task passes
the gate, how many distinct modal heads there are, and the mean pairwise overlap of the top-5
heads; per model, how many gated tasks have their modal head in layers >= ``--deep-layer``.
Checks issue 35's placement targets on the zoo.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym.reporting.zoo_placement import default_models, placement_report, report_lines  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="*", default=None, help="default: toy and every zoo member with a card")
    p.add_argument("--deep-layer", type=int, default=4)
    p.add_argument("--out", type=Path, default=None, help="write the report here (JSON)")
    args = p.parse_args(argv)
    try:
        report = placement_report(args.models or default_models(), args.deep_layer)
    except FileNotFoundError as err:
        raise SystemExit(str(err)) from None
    print("\n".join(report_lines(report)))
    print(json.dumps(report["targets"], indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
