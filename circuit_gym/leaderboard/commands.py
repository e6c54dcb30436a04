"""The leaderboard's subcommands of ``circuit-gym leaderboard``: score, render, canary,
rescore-references.

Registered by :func:`register`, which ``circuit_gym/cli.py`` finds in its registry of apps. Every
track is a row of ``circuit_gym/leaderboard/tracks.py``: the choices, the default track (the
benchmark in force), where a result goes and how it is summarised come from there.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from circuit_gym.commands import add_model_args
from circuit_gym.envs.features import DEFAULT_FEATURES
from circuit_gym.leaderboard.paths import REPO_ROOT
from circuit_gym.leaderboard.tracks import (
    BENCHMARKS,
    DEFAULT_TRACK,
    TRACKS,
    Request,
    retired,
    score_reference,
    track,
)


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it (what users type)."""
    path = Path(path).resolve()
    return path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else str(path)


def default_out(track_name: str, name: str) -> Path:
    """Where ``score`` writes an entry unless told: its track's folder of the board, where
    ``render`` reads."""
    return track(track_name).results_dir / f"{name}.json"


def _reserved(track_name: str, out: Path) -> str | None:
    """The reference whose committed result file ``out`` is, or None."""
    from circuit_gym.leaderboard.references import load_manifest

    for reference in load_manifest()[track_name].values():
        if reference.result_path().resolve() == out.resolve():
            return reference.name
    return None


def _cmd_score(args: argparse.Namespace) -> int:
    from circuit_gym.leaderboard.estimate import estimate
    from circuit_gym.leaderboard.scoring import read_private_seeds, write_result

    name = args.name or args.builtin
    if name is None:
        print("error: --name is required with --policy (the entry's name on the board)", file=sys.stderr)
        return 2
    row = track(args.track)
    out = Path(args.out) if args.out else default_out(args.track, name)
    if args.out is None and _reserved(args.track, out):
        print(f"error: {_shown(out)} is the committed result of the reference entry {name!r}: give your entry "
              "another --name", file=sys.stderr)  # fmt: skip
        return 2
    # As `python -m` does: a policy module in the current directory is found (the console
    # script's own folder, not the working directory, heads sys.path).
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    n_private = len(read_private_seeds(args.private_seeds)[0]) if args.private_seeds else 0
    print(estimate(args.track, args.builtin, n_private), file=sys.stderr)
    if retired(args.track):
        print(f"note: the {args.track} track is {retired(args.track)}; the board ranks on {DEFAULT_TRACK} "
              f"(the default of --track)", file=sys.stderr)  # fmt: skip
    request = Request(policy_spec=args.policy, builtin=args.builtin, checkpoint=args.checkpoint,
                      private_seeds=args.private_seeds, private_model=args.private_model,
                      require_isolation=args.require_isolation, features=args.features,
                      model=args.model, model_path=args.model_path)  # fmt: skip
    try:
        result = score_reference(args.track, name, request)
    except ModuleNotFoundError as err:
        print(f"error: {err}. The scorer looks for the policy's module on sys.path, which holds the current "
              f"directory ({os.getcwd()}): run from the folder that contains the module's top-level package, "
              "or add that folder to PYTHONPATH", file=sys.stderr)  # fmt: skip
        return 2
    except (OSError, RuntimeError) as err:  # RuntimeError: IsolationUnavailableError
        print(f"error: {err}", file=sys.stderr)
        return 2
    path = write_result(result, out)
    if result["status"] == "failed":
        print(f"policy failed: {result['failure']['type']}: {result['failure']['reason']}", file=sys.stderr)
        print(f"failure record written to {_shown(path)}", file=sys.stderr)
        return 1
    for line in row.headline(result):
        print(f"{name}: {line}")
    print(f"result written to {_shown(path)}")
    if path.resolve().parent != row.results_dir.resolve():
        print(f"note: `circuit-gym leaderboard render` reads {_shown(row.results_dir)}/*.json for the {args.track} "
              f"track; this file is shown only with --results {_shown(path)}", file=sys.stderr)  # fmt: skip
    return 0


def _cmd_render(args: argparse.Namespace) -> int:
    from circuit_gym.leaderboard.board import render

    paths = [Path(p) for p in args.results] if args.results else None
    summary = render(paths, Path(args.out) if args.out else None, model=args.model, model_path=args.model_path,
                     rescore=args.rescore, private_seeds=Path(args.private_seeds) if args.private_seeds else None,
                     require_isolation=args.require_isolation, jobs=args.jobs,
                     private_model=Path(args.private_model) if args.private_model else None)  # fmt: skip
    for folder, n in summary["read"].items():
        print(f"read {n} result file{'s' * (n != 1)} from {_shown(Path(folder))}")
    for message in summary["refused"]:
        print(f"refused: {message}", file=sys.stderr)
    for t, rows in summary["boards"].items():
        listed = ", ".join(f"{r['name']}: {r['check']}" for r in rows)
        note = f" ({retired(t)})" if retired(t) else ""
        print(f"{t}: {len(rows)} entries{note}: {listed}")
    print(
        f"board: {sum(len(r) for r in summary['boards'].values())} entries, {len(summary['refused'])} refused"
    )
    return 0


def _cmd_canary(args: argparse.Namespace) -> int:
    from circuit_gym.leaderboard.canary import run_canary

    found = run_canary(tracks=(args.track,) if args.track else tuple(TRACKS))
    for reference, differences in found.items():
        print(f"{reference}: {'ok' if not differences else 'MOVED'}")
        for line in differences:
            print(f"  {line}")
    moved = [r for r, d in found.items() if d]
    if moved:
        print(f"canary: {len(moved)} reference(s) moved: {', '.join(moved)}. If the change of numbers is meant, "
              "rescore them: circuit-gym leaderboard rescore-references", file=sys.stderr)  # fmt: skip
        return 1
    return 0


def _cmd_rescore_references(args: argparse.Namespace) -> int:
    from circuit_gym.leaderboard.rescore import rescore_references

    lines = rescore_references(tuple([args.track] if args.track else TRACKS),
                               Path(args.private_seeds) if args.private_seeds else None, args.jobs,
                               args.require_isolation, private_model=Path(args.private_model) if args.private_model else None,
                               names=tuple(args.names) if args.names else None)  # fmt: skip
    print("\n".join(lines))
    print("wrote leaderboard/references.json; review its diff, then run `circuit-gym leaderboard render`")
    return 0


def _track_help() -> str:
    by_benchmark = {b: [t.name for t in TRACKS.values() if t.benchmark == b] for b in BENCHMARKS}
    listed = "; ".join(f"{b}{' (' + why.split(':')[0] + ')' if why else ''}: {', '.join(names)}"
                       for b, why in BENCHMARKS.items() if (names := by_benchmark[b]))  # fmt: skip
    return (
        f"default: {DEFAULT_TRACK}, the benchmark in force. Tracks by benchmark: {listed}. Single head: "
        "rank_heads(observation); circuit: act(observation, action_mask) and rank_heads (docs/leaderboard.md)"
    )


def _add_private_args(p: argparse.ArgumentParser, when: str, isolation: bool | None, **why: str) -> None:
    """The maintainers' private evaluation (``--private-model``, ``--private-seeds``) and the
    sandbox's ``--require-isolation``, shared by every subcommand that scores: ``when`` heads each
    help, ``why[dest]`` ends it, ``isolation`` is the default (None: on with --private-seeds)."""
    p.add_argument(
        "--private-model", metavar="DIR",
        help=f"{when}the transfer tracks' private evaluation model's directory (never committed; needs "
        f"--private-seeds){why.get('private_model', '')}",
    )  # fmt: skip
    p.add_argument(
        "--private-seeds", metavar="FILE",
        help=f"{when}the maintainers' private seed file (JSON list of ints, or one int per line){why.get('private_seeds', '')}",
    )  # fmt: skip
    default = (
        "on with --private-seeds, off otherwise" if isolation is None else ("on" if isolation else "off")
    )
    p.add_argument(
        "--require-isolation", action=argparse.BooleanOptionalAction, default=isolation,
        help=f"{when}refuse to run a policy without complete isolation (circuit_gym/leaderboard/isolation.py; "
        f"default: {default}){why.get('require_isolation', '')}",
    )  # fmt: skip


def _add_jobs_arg(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--jobs", type=int, default=1, help=f"{what} at once (one process each)")


def _add_track_filter(p: argparse.ArgumentParser) -> None:
    p.add_argument("--track", choices=tuple(TRACKS), help="one track only (default: all)")


def register(sub: argparse._SubParsersAction) -> None:
    """``leaderboard`` and its subcommands."""
    lb = sub.add_parser(
        "leaderboard", help="score a policy on held-out tasks and models, or render the board"
    )
    lb_sub = lb.add_subparsers(dest="lb_command", required=True)
    p = lb_sub.add_parser("score", help="score a policy (sandboxed) and write a verifiable result file")
    add_model_args(p, default=None)
    p.add_argument("--name", help="the entry's name on the board (default with --builtin: the builtin's)")
    p.add_argument("--track", choices=tuple(TRACKS), default=DEFAULT_TRACK, help=_track_help())
    p.add_argument(
        "--features", default=DEFAULT_FEATURES,
        help=f"transfer tracks: the observation the policy is given, the environments' features argument "
        f"({DEFAULT_FEATURES}, the default; causal: attribution and EAP-IG columns, whose passes count as the "
        "policy's compute; single-head also prediction)",
    )  # fmt: skip
    p.add_argument(
        "--policy",
        help="package.module:factory returning an object with rank_heads(observation) (and, on the circuit "
        "tracks, act(observation, action_mask))",
    )
    p.add_argument("--checkpoint", help="passed to the factory (e.g. a PPO checkpoint directory)")
    p.add_argument(
        "--builtin", metavar="NAME",
        help="a reference solver run in-process (circuit_gym/solvers/white_box.py): greedy (single-head "
        "tracks); greedy_search or attribution (circuit tracks); acdc or eap_ig (both); the planted track's rules",
    )  # fmt: skip
    p.add_argument(
        "--out",
        help="the result file (default: the track's folder of the board, leaderboard/results/.../NAME.json, "
        "where `render` reads)",
    )
    _add_private_args(
        p, "maintainers only: ", None, private_model="; the result keeps its weights hash",
        private_seeds="; the policy is also scored on those test-pool batch seeds, and the result keeps those "
        "scores and the file's SHA-256, never the seeds",
        require_isolation="; without it the result records what was missing",
    )  # fmt: skip
    p.set_defaults(func=_cmd_score)
    p = lb_sub.add_parser("render", help="verify result files and build the board")
    add_model_args(p)
    folders = ", ".join(f"{_shown(t.results_dir)}/*.json" for t in TRACKS.values())
    p.add_argument("--results", nargs="*", help=f"result files of any track (default: {folders})")
    p.add_argument("--out", help="output directory (default: leaderboard/)")
    p.add_argument(
        "--rescore", action="store_true", help="re-run the scorer on every entry and refuse mismatches"
    )
    _add_jobs_arg(p, "with --rescore: entries re-scored")
    _add_private_args(
        p, "with --rescore: ", True,
        private_model=", to verify their private scores (refused when the entry was scored on other weights)",
        private_seeds=", to re-compute the private scores of the entries scored on it (same SHA-256); only "
        "those entries are called verified",
    )  # fmt: skip
    p.set_defaults(func=_cmd_render)
    p = lb_sub.add_parser(
        "canary",
        help="re-score the first episodes of every reference and compare them with the committed rows",
    )
    _add_track_filter(p)
    p.set_defaults(func=_cmd_canary)
    p = lb_sub.add_parser(
        "rescore-references",
        help="score every reference of leaderboard/references.json again; write its result files and the manifest",
    )
    _add_track_filter(p)
    p.add_argument("--names", nargs="*", help="only these references (default: every one of the tracks)")
    _add_jobs_arg(p, "references scored")
    _add_private_args(p, "", None, private_seeds=": the references' private scores are computed on it")
    p.set_defaults(func=_cmd_rescore_references)
