"""PPO trained across the training models of a transfer benchmark (the one in force by default), seeds 0-4, both
tracks (circuit_gym.baselines.transfer_training: what and how).

    python scripts/train_transfer_ppo.py                       # every track and seed, one at a time
    python scripts/train_transfer_ppo.py --workers 10          # ten trainings at once (one core each)
    python scripts/train_transfer_ppo.py --tracks ppo --seeds 0 1
    python scripts/train_transfer_ppo.py --copy-only           # copy finished runs to the docs only
    python scripts/train_transfer_ppo.py --design causal       # issue 34's design: causal observation
    python scripts/train_transfer_ppo.py --version v8 --design causal   # v8's training models
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym.baselines import transfer_training as training  # noqa: E402
from circuit_gym.baselines.ppo_designs import DESIGNS  # noqa: E402
from circuit_gym.benchmark import IN_FORCE, TRANSFER_BENCHMARKS  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tracks", nargs="+", choices=tuple(training.ENV_IDS), default=list(training.ENV_IDS)
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--design", choices=tuple(DESIGNS), default="reference",
                        help="which recipe (DESIGNS): the reference, or issue 34's causal observation")  # fmt: skip
    parser.add_argument("--version", choices=tuple(TRANSFER_BENCHMARKS), default=IN_FORCE,
                        help="the transfer benchmark whose training models are trained on")  # fmt: skip
    parser.add_argument("--out", type=Path, help="runs (default: runs/transfer_VERSION)")
    parser.add_argument("--docs", type=Path, help="finished runs (default: docs/results/VERSION)")
    parser.add_argument(
        "--workers", type=int, default=1, help="trainings at once, one process (and core) each"
    )
    parser.add_argument("--device", default="cpu", help="of the language model")
    parser.add_argument("--machine", default=f"{platform.node()} ({os.cpu_count()} cores)",
                        help="where the runs ran, for training.json")  # fmt: skip
    parser.add_argument(
        "--copy-only", action="store_true", help="copy finished runs to the docs, train nothing"
    )
    parser.add_argument("--stop-after", type=float, default=None, metavar="SECONDS",
                        help="stop every training after this long (each resumes from its last finished "
                             "epoch when the command runs again): for machines lent for a while")  # fmt: skip
    parser.add_argument("--job", nargs=2, metavar=("TRACK", "SEED"), help=argparse.SUPPRESS)  # one training
    args = parser.parse_args(argv)
    args.out = args.out or ROOT / "runs" / f"transfer_{args.version}"
    args.docs = args.docs or training.docs_dir(args.version, ROOT / "docs" / "results")
    try:
        training.check_train_set(args.version)
    except ValueError as err:
        raise SystemExit(str(err)) from None
    if args.job:
        print(
            training.train_one(
                args.job[0], int(args.job[1]), args.out, args.device, args.design, args.version
            ),
            flush=True,
        )
        return
    jobs = [(t, s) for t in args.tracks for s in args.seeds]  # single-head first, seeds in order
    if not args.copy_only:

        def command(track: str, seed: int) -> list[str]:  # this script again, for one training
            return [sys.executable, __file__, "--job", track, str(seed), "--out", str(args.out),
                    "--device", args.device, "--design", args.design, "--version", args.version]  # fmt: skip

        training.run_jobs(jobs, command, args.out, args.design, args.workers, args.stop_after)
    print(
        "\n".join(
            training.copy_and_record(jobs, args.out, args.docs, args.machine, args.design, args.version)
        )
    )


if __name__ == "__main__":
    main()
