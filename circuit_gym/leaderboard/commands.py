"""The leaderboard's subcommands of ``circuit-gym leaderboard``: score, render, canary,
rescore-references, adopt-references, seal-private.

Registered by :func:`register`, which ``circuit_gym/cli.py`` finds in its registry of apps. Every
track is a row of ``circuit_gym/leaderboard/tracks.py``: the choices, the default track (the
benchmark in force), where a result goes and how it is summarised come from there.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from circuit_gym.envs.features import DEFAULT_FEATURES
from circuit_gym.leaderboard.paths import REPO_ROOT
from circuit_gym.leaderboard.private_models import PrivateModel, PrivateModelArg
from circuit_gym.leaderboard.tracks import (
    BENCHMARKS,
    DEFAULT_TRACK,
    TRACKS,
    Request,
    not_ranking,
    score_reference,
    track,
)


def _shown(path: Path) -> str:
    """``path`` as the user can use it where they run: relative to the working directory when it
    lies below it, else absolute (never relative to the repository from elsewhere: issue 59)."""
    path, here = Path(path).resolve(), Path.cwd().resolve()
    return path.relative_to(here).as_posix() if path.is_relative_to(here) else str(path)


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


@contextmanager
def _private_material(args: argparse.Namespace) -> Iterator[tuple[PrivateModelArg, str | None]]:
    """``(private model, private seed file)`` of a command: as given, or, where a
    ``--private-model`` is a sealed file (``circuit_gym/leaderboard/custody.py``), decrypted with
    ``--key`` into a private temporary directory for the command's duration (its seed file is
    used unless ``--private-seeds`` names another). One ``--private-model``: its directory and the
    seed file; several (v8 ranks on two): a tuple of ``PrivateModel``, each with its
    seed file, and the first's seed file (the run's: its ledgers, the secret planted models)."""
    from circuit_gym.leaderboard import custody

    given = list(args.private_model or ())
    if not given:
        yield None, args.private_seeds
        return
    if len(given) == 1 and not custody.is_sealed(given[0]):
        yield given[0], args.private_seeds
        return
    key = Path(args.key) if args.key else REPO_ROOT / custody.DEFAULT_KEY
    with ExitStack() as stack:
        models = []
        for path in given:
            if custody.is_sealed(path):
                opened = stack.enter_context(custody.open_private(path, key))
                seeds = Path(args.private_seeds) if args.private_seeds else opened.seeds
                models.append(PrivateModel(opened.model_dir, seeds))
            elif args.private_seeds is None:
                raise ValueError(
                    f"--private-model {path} is a directory: give --private-seeds too (its seed file)"
                )
            else:
                models.append(PrivateModel(Path(path), Path(args.private_seeds)))
        if len(models) == 1:
            yield str(models[0].directory), str(models[0].seeds)
        else:
            yield tuple(models), str(models[0].seeds)


def _private_count_refusal(track_name: str, given: list[str] | None) -> str | None:
    """Why the ``--private-model`` files or directories ``given`` are not ``track_name``'s count of
    private models (v8: two), or None; said before anything is decrypted or scored."""
    from circuit_gym.leaderboard.private_models import required

    wanted = required(track_name)
    if not given or not wanted or len(given) == wanted:
        return None
    return (
        f"the {track_name} track ranks on {wanted} private model{'s' * (wanted != 1)} (docs/private_model.md), "
        f"--private-model gave {len(given)}: give {'it' if wanted == 1 else f'all {wanted}'} after one --private-model"
    )


def _cmd_score(args: argparse.Namespace) -> int:
    from circuit_gym.leaderboard.custody import CustodyError

    why = _private_count_refusal(args.track, args.private_model)
    if why is not None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    try:
        with _private_material(args) as (args.private_model, args.private_seeds):
            return _score(args)
    except CustodyError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _score(args: argparse.Namespace) -> int:
    import datetime as dt

    from circuit_gym.leaderboard.estimate import estimate
    from circuit_gym.leaderboard.private_ledger import LEDGER, append_scoring, load_ledger, week_refusal
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
    seeds = read_private_seeds(args.private_seeds) if args.private_seeds else None
    # The weekly rule (circuit_gym/leaderboard/private_ledger.py): on a seed file the committed ledger
    # governs, a non-reference entry's third private scoring within 7 days is refused before it runs.
    ledger_path = Path(args.ledger) if args.ledger else LEDGER
    ledger = load_ledger(ledger_path)
    counted = seeds is not None and ledger.governs(seeds[1]) and not _reserved(args.track, out)
    if counted:
        why = week_refusal(ledger, name, dt.datetime.now(dt.UTC).date())
        if why is not None:
            print(f"error: refused: {why}", file=sys.stderr)
            return 2
    print(estimate(args.track, args.builtin, len(seeds[0]) if seeds else 0), file=sys.stderr)
    if not_ranking(args.track):
        print(f"note: the board does not rank on the {args.track} track yet ({not_ranking(args.track)}); it ranks on {DEFAULT_TRACK} "
              f"(the default of --track)", file=sys.stderr)  # fmt: skip
    request = Request(policy_spec=args.policy, builtin=args.builtin, checkpoint=args.checkpoint,
                      private_seeds=args.private_seeds, private_model=args.private_model,
                      require_isolation=args.require_isolation, features=args.features)  # fmt: skip
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
    if counted:
        assert seeds is not None
        append_scoring(result, seeds[1], ledger_path)
        print(
            f"private scoring recorded in {_shown(ledger_path)}: commit it with the result", file=sys.stderr
        )
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
    from circuit_gym.leaderboard.custody import CustodyError

    paths = [Path(p) for p in args.results] if args.results else None
    try:
        with _private_material(args) as (private_model, private_seeds):
            summary = render(paths, Path(args.out) if args.out else None, rescore=args.rescore,
                             private_seeds=Path(private_seeds) if private_seeds else None,
                             require_isolation=args.require_isolation, jobs=args.jobs,
                             private_model=_as_path(private_model))  # fmt: skip
    except CustodyError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for folder, n in summary["read"].items():
        print(f"read {n} result file{'s' * (n != 1)} from {_shown(Path(folder))}")
    for message in summary["refused"]:
        print(f"refused: {message}", file=sys.stderr)
    for t, rows in summary["boards"].items():
        listed = ", ".join(f"{r['name']}: {r['check']}" for r in rows)
        note = f" (not ranking: {not_ranking(t)})" if not_ranking(t) else ""
        print(f"{t}: {len(rows)} entries{note}: {listed}")
    for f in summary["failures"]:
        print(f"failed: {f['name']} ({f['track']}): listed as a failure, not an entry", file=sys.stderr)
    print(
        f"board: {sum(len(r) for r in summary['boards'].values())} entries, {len(summary['failures'])} failed, "
        f"{len(summary['refused'])} refused"
    )
    print("wrote " + ", ".join(_shown(p) for p in summary["written"]))
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


def _as_path(private_model: PrivateModelArg) -> PrivateModelArg:
    """One private model's directory as a Path; several unchanged."""
    return Path(private_model) if isinstance(private_model, str) else private_model


def _cmd_rescore_references(args: argparse.Namespace) -> int:
    from circuit_gym.leaderboard.rescore import rescore_references

    why = _private_count_refusal(args.track, args.private_model) if args.track else None
    if why is not None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    with _private_material(args) as (private_model, private_seeds):
        lines = rescore_references(tuple([args.track] if args.track else TRACKS),
                                   Path(private_seeds) if private_seeds else None, args.jobs,
                                   args.require_isolation, private_model=_as_path(private_model),
                                   names=tuple(args.names) if args.names else None)  # fmt: skip
    print("\n".join(lines))
    from circuit_gym.leaderboard.references import MANIFEST

    print(f"wrote {_shown(MANIFEST)}; review its diff, then run `circuit-gym leaderboard render`")
    return 0


def _cmd_adopt_references(args: argparse.Namespace) -> int:
    from circuit_gym.leaderboard.references import MANIFEST
    from circuit_gym.leaderboard.rescore import adopt_references

    try:
        lines = adopt_references([Path(p) for p in args.results])
    except ValueError as err:
        print(f"error: {err}; nothing written", file=sys.stderr)
        return 2
    print("\n".join(lines))
    print(f"wrote {_shown(MANIFEST)}; review its diff, then run `circuit-gym leaderboard render`")
    return 0


def _cmd_seal_private(args: argparse.Namespace) -> int:
    from circuit_gym.leaderboard.custody import CustodyError, seal_private

    try:
        header = seal_private(args.model, args.seeds, args.key, args.out)
    except (CustodyError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"sealed {len(header['model_files'])} model files and the seed file into {_shown(Path(args.out))}: "
          f"weights hash {header['weights_hash']}, seed file sha256 {header['seed_file_sha256'][:12]}, "
          f"key id {header['key_id']}; commit it (never the key, never the plain model)")  # fmt: skip
    return 0


def _track_help() -> str:
    by_benchmark = {b: [t.name for t in TRACKS.values() if t.benchmark == b] for b in BENCHMARKS}
    listed = "; ".join(f"{b}{' (not ranking yet)' if BENCHMARKS[b].not_ranking else ''}: {', '.join(names)}"
                       for b, names in by_benchmark.items() if names)  # fmt: skip
    return (
        f"default: {DEFAULT_TRACK}, the benchmark in force. Tracks by benchmark: {listed}. Single head: "
        "rank_heads(observation); circuit: act(observation, action_mask) and rank_heads (docs/leaderboard.md)"
    )


def _add_private_args(p: argparse.ArgumentParser, when: str, isolation: bool | None, **why: str) -> None:
    """The maintainers' private evaluation (``--private-model``, ``--private-seeds``) and the
    sandbox's ``--require-isolation``, shared by every subcommand that scores: ``when`` heads each
    help, ``why[dest]`` ends it, ``isolation`` is the default (None: on with --private-seeds)."""
    p.add_argument(
        "--private-model", metavar="DIR|FILE.enc", nargs="+",
        help=f"{when}the transfer tracks' private evaluation model's directory (never committed; needs "
        f"--private-seeds), or the committed file `seal-private` wrote (decrypted with --key; its seed file "
        f"serves unless --private-seeds is given); as many as the track's benchmark ranks on (v8: "
        f"two, e.g. leaderboard/private/zoo_v3_private_a.enc leaderboard/private/zoo_v3_private_b.enc; "
        f"docs/private_model.md){why.get('private_model', '')}",
    )  # fmt: skip
    p.add_argument(
        "--key", metavar="FILE",
        help=f"{when}the maintainers' key, to open a sealed --private-model (default: ../shared/private/board.key "
        "from the repository root; never printed, never given to a policy)",
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


def _track_name(name: str) -> str:
    """``--track``'s value: a board track; a retired one is refused naming the version in force
    (``tracks.track``'s message), never replaced by another."""
    try:
        return track(name).name
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_track_filter(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--track", type=_track_name, metavar="TRACK", help=f"one track only of {list(TRACKS)} (default: all)"
    )


def register(sub: argparse._SubParsersAction) -> None:
    """``leaderboard`` and its subcommands."""
    lb = sub.add_parser(
        "leaderboard", help="score a policy on held-out tasks and models, or render the board"
    )
    lb_sub = lb.add_subparsers(dest="lb_command", required=True)
    p = lb_sub.add_parser("score", help="score a policy (sandboxed) and write a verifiable result file")
    p.add_argument("--name", help="the entry's name on the board (default with --builtin: the builtin's)")
    p.add_argument("--track", type=_track_name, metavar="TRACK", default=DEFAULT_TRACK, help=_track_help())
    p.add_argument(
        "--features", default=DEFAULT_FEATURES,
        help=f"transfer tracks: the observation the policy is given, the environments' features argument "
        f"({DEFAULT_FEATURES}, the default; causal: attribution and EAP-IG columns, whose passes count as the "
        "policy's compute; single-head also prediction); knock-out tracks: the per-head scores the policy reads "
        "and pays for (attribution+eap_ig, the default, or attribution)",
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
    p.add_argument(
        "--ledger", metavar="FILE",
        help="maintainers only: the committed ledger of private scorings (default: leaderboard/private_ledger.json); "
        "on a seed file it governs, a third private scoring of one name within 7 days is refused",
    )  # fmt: skip
    _add_private_args(
        p, "maintainers only: ", None, private_model="; the result keeps its weights hash",
        private_seeds="; the policy is also scored on those test-pool batch seeds, and the result keeps those "
        "scores and the file's SHA-256, never the seeds",
        require_isolation="; without it the result records what was missing",
    )  # fmt: skip
    p.set_defaults(func=_cmd_score)
    p = lb_sub.add_parser("render", help="verify result files and build the board")
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
    p = lb_sub.add_parser(
        "adopt-references",
        help="maintainers: list result files already scored (e.g. a new version's references) as reference "
        "entries, each verified, without playing them again",
    )
    p.add_argument(
        "results", nargs="+", metavar="FILE", help="scored result files, each in its track's folder"
    )
    p.set_defaults(func=_cmd_adopt_references)
    p = lb_sub.add_parser(
        "seal-private",
        help="maintainers only: encrypt the private model's directory and seed file into one file to commit",
    )
    p.add_argument(
        "--model", required=True, metavar="DIR", help="the private model's directory (weights, card)"
    )
    p.add_argument("--seeds", required=True, metavar="FILE", help="the private seed file")
    p.add_argument(
        "--key", required=True, metavar="FILE", help="the maintainers' key (../shared/private/board.key)"
    )
    p.add_argument("--out", required=True, metavar="FILE.enc", help="the sealed file to write (and commit)")
    p.set_defaults(func=_cmd_seal_private)
