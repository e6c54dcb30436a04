"""The backup objective's report (circuit_gym.reporting.backup_pairs): per model trained with
``--backup-weight`` and per recorded pair, redundancy, the primary's self-repair and the backup's
rank under each method, on an eval-split batch. Adds the models to the report and prints the table
docs/zoo.md's "Backup objective" section shows.

    nice -n 10 python scripts/backup_pilot.py --models runs/zoo_pilot/models/bk_w1 runs/zoo_pilot/models/bk_lr3
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym.reporting import backup_pairs  # noqa: E402
from circuit_gym.reporting.self_repair_pilot import merge  # noqa: E402

OUT = ROOT / "docs" / "results" / "zoo" / "backup_pilot.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", type=Path, required=True, help="exported model directories")
    p.add_argument("--prompts", type=int, default=32, help="eval-split prompts per pair (one batch)")
    p.add_argument("--tasks", nargs="*", default=None, help="measure only these tasks' pairs (default: all)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument(
        "--from-cards",
        action="store_true",
        help="read the measures from each model's card_metrics.json (scripts/model_card.py) instead",
    )
    args = p.parse_args(argv)
    missing = [str(d) for d in args.models if not (d / "model.safetensors").is_file()]
    if missing:
        p.error(f"no exported model in {missing}")
    models = {d.name: d for d in args.models}
    if args.from_cards:
        from circuit_gym.card_measurement import BACKUP_PROMPTS

        new = backup_pairs.report_from_cards(models, prompts=BACKUP_PROMPTS)
    else:
        new = backup_pairs.report(models, prompts=args.prompts, tasks=args.tasks)
    old = json.loads(args.out.read_text()) if args.out.is_file() else None
    try:
        merged = merge(old, new)
    except ValueError as err:
        p.error(f"{args.out}: {err}; use another --out")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(merged, indent=1) + "\n")
    print(backup_pairs.pairs_table(merged))
    for name, entry in merged["models"].items():
        print(name, "all:", entry["summary_all"], "training tasks:", entry["summary_training_tasks"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
