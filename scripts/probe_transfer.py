"""A partial scoring of a builtin on a transfer benchmark's named public models (not a board entry:
``partial`` results are refused by the board), e.g. issue 41's first target early:

    nice -n 5 python scripts/probe_transfer.py greedy --models zoo10 zoo12 --out /tmp/v8_probe
"""

from __future__ import annotations

import argparse
from pathlib import Path

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.scoring import write_result
from circuit_gym.leaderboard.transfer_scorer import score_transfer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("builtin")
    p.add_argument("--version", default=B.IN_FORCE)
    p.add_argument("--track", default="single-head")
    p.add_argument("--models", nargs="+", required=True)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    result = score_transfer(f"{args.builtin}_{args.version}_probe", args.track, builtin=args.builtin,
                            models=tuple(args.models), version=args.version)  # fmt: skip
    write_result(result, args.out / f"{args.builtin}.json")
    for quadrant, s in result["scores"]["quadrants"].items():
        if s:
            print(
                f"{args.builtin} {quadrant}: best-of-1 {s['k1']['recovery']:.3f} ({s['k1']['episodes']} episodes)"
            )


if __name__ == "__main__":
    main()
