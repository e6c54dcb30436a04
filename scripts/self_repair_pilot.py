"""Issue 41's self-repair pilot (circuit_gym.reporting.self_repair_pilot): per model and per task
that passes its gate on the train split, the self-repair, redundancy and agreement measures on an
eval-split batch. Adds the models it measures to the report (same settings) and prints the tables
docs/zoo.md's "Self-repair pilot" section shows (``python scripts/gen_docs_numbers.py`` fills them).

    nice -n 10 python scripts/self_repair_pilot.py                        # zoo1-zoo4 + pilot members present
    nice -n 10 python scripts/self_repair_pilot.py --models pilot_p10 pilot_p30
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym.reporting import self_repair_pilot as pilot  # noqa: E402

OUT = ROOT / "docs" / "results" / "zoo" / "self_repair.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--models",
        nargs="*",
        help="names among the defaults (the shipped zoo, docs/results/zoo/models/*, runs/zoo_pilot/models/*)",
    )
    p.add_argument("--tasks", nargs="*", help="default: every task of the model's suite")
    p.add_argument("--episodes", type=int, default=12, help="gate: train-split episodes (8 prompts each)")
    p.add_argument("--prompts", type=int, default=32, help="measures: eval-split prompts (one batch)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--fresh", action="store_true", help="replace the report instead of adding to it")
    args = p.parse_args(argv)
    available = pilot.default_models(ROOT)
    unknown = sorted(set(args.models or []) - set(available))
    if unknown:
        p.error(f"unknown models {unknown}; available: {sorted(available)}")
    models = {m: available[m] for m in (args.models or available)}
    report = pilot.update_report(
        args.out, models, fresh=args.fresh, tasks=args.tasks, episodes=args.episodes, prompts=args.prompts
    )
    print(pilot.summary_table(report), pilot.pilot_table(report), sep="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
