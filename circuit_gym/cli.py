"""The ``circuit-gym`` command line: it only dispatches.

Each app registers its own subcommands: a module of :data:`APPS` has ``register(subparsers)``,
which adds its commands (each with ``func``, the handler). The core's own commands are
``circuit_gym/commands.py``; the baselines' and the leaderboard's live in their packages, so the
core imports neither app (the registry names them; they are imported when the parser is built).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# The registry of apps whose subcommands `circuit-gym` offers, in the order of its help.
APPS = ("circuit_gym.commands", "circuit_gym.baselines.commands", "circuit_gym.leaderboard.commands")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="circuit-gym", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--no-progress", action="store_true",
        help="no progress (bars in a terminal, lines in a log) or first-use notes (also: CIRCUIT_GYM_PROGRESS=0)",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    for app in APPS:
        importlib.import_module(app).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.no_progress:
        import os

        from circuit_gym.progress import PROGRESS_ENV_VAR

        os.environ[PROGRESS_ENV_VAR] = "0"  # read by every bar, here and in worker processes
    from circuit_gym.models import ModelNotAvailableError

    try:
        return int(args.func(args) or 0)
    except (ModelNotAvailableError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
