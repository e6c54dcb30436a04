"""PPO against the benchmark's transfer targets, over training seeds (default 0-4): trains and
evaluates every seed not yet done, pools every solver's episodes per seed and writes
``OUT/seeds.json`` and ``OUT/seeds.md`` (circuit_gym.baselines.ppo_seeds: what and how).

    python scripts/ppo_seeds.py --out docs/results/seeds --first-dir docs/results [--seeds 0 1 2 3 4]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.baselines.ppo_seeds import markdown, run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument(
        "--first-dir", type=Path, default=None, help="the main job's output for the first seed"
    )
    args = parser.parse_args()
    try:
        summary = run(args.out, args.seeds, args.first_dir)
    except (FileNotFoundError, ValueError) as err:
        raise SystemExit(str(err)) from None
    print(markdown(summary))


if __name__ == "__main__":
    main()
