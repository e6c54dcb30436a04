"""Leave-one-training-task-out cross-validation of the reference PPO (circuit_gym.baselines.loo_cv:
what and how): for every training task, PPO trained on the others and scored on its eval split.

    python scripts/loo_cv.py --out runs/loo --features attention prediction --seeds 0 1

Writes ``OUT/loo_cv.json`` / ``OUT/loo_cv.md``; resumable.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.baselines.loo_cv import run  # noqa: E402
from circuit_gym.envs.features import FEATURE_SETS  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("runs/loo"))
    parser.add_argument(
        "--features", nargs="+", default=["attention", "prediction"], choices=sorted(FEATURE_SETS)
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--episodes", type=int, default=48)
    args = parser.parse_args(argv)
    try:
        run(args.out, args.features, args.seeds, args.episodes)
    except ValueError as err:
        raise SystemExit(str(err)) from None
    print((args.out / "loo_cv.md").read_text())


if __name__ == "__main__":
    main()
