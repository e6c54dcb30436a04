"""What one observation column is worth: rank heads by a single feature, fairly (chosen on the
training tasks) and unfairly (the ceiling, chosen on the held-out tasks); circuit_gym.baselines
.feature_ceiling says how.

    python scripts/feature_ceiling.py --benchmark v5 --out docs/results/feature_ceiling   # v5: toy, benchmark tasks
    python scripts/feature_ceiling.py --benchmark v6 --out docs/results/feature_ceiling   # v6: the zoo
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym import benchmark as B  # noqa: E402
from circuit_gym.baselines.feature_ceiling import BENCHMARKS, run  # noqa: E402
from circuit_gym.envs.features import FEATURE_SETS  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--benchmark", required=True, choices=BENCHMARKS,  # both retired: named, never a default
                   help="v5: one model (--model), v6: the zoo's training and held-out models")  # fmt: skip
    p.add_argument("--model", default=B.MODEL, help="v5 only")
    p.add_argument(
        "--train-episodes", type=int, default=16, help="eval-split batches per training task (and model)"
    )
    p.add_argument("--features", default="attention", choices=sorted(FEATURE_SETS))
    p.add_argument("--out", type=Path, default=None,
                   help="folder for feature_ceiling_<model>.json / .md (v5) or v6.json / .md")  # fmt: skip
    args = p.parse_args(argv)
    report = run(args.benchmark, model=args.model, train_episodes=args.train_episodes, features=args.features,
                 out=args.out)  # fmt: skip
    for label, key in (
        ("fair (chosen on training tasks)", "fair"),
        ("ceiling (chosen on held-out tasks)", "ceiling"),
    ):
        h = report[f"{key}_held_out"]
        print(f"{label}: {report[key + '_rule']}: held-out best-of-1 {h['best_of_1']['recovery']:.3f}, "
              f"best-of-5 {h['best_of_5']['recovery']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
