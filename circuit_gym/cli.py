"""The ``circuit-gym`` command line."""

from __future__ import annotations

import argparse
import sys

# The leaderboard's tracks (circuit_gym.leaderboard.references.TRACKS), written out so that building
# the parser imports nothing heavy; a test keeps the two equal.
BOARD_TRACKS = ("single-head", "circuit", "transfer-single-head", "transfer-circuit")


def _cmd_info(args: argparse.Namespace) -> int:
    from circuit_gym.models import load_model

    model = load_model(args.model, path=args.model_path, device=args.device, threads=args.threads)
    info = model.circuit_gym_info
    print(
        f"model {info.name} ({info.source}): {info.n_layers} layers x {info.n_heads} heads = "
        f"{info.n_heads_total} actions, d_model {model.cfg.d_model}, vocab {model.cfg.d_vocab}, "
        f"weights {info.weights_hash}"
    )
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from pathlib import Path

    from circuit_gym.baselines.ppo import PPOConfig
    from circuit_gym.baselines.run_all import run

    config, circuit_ppo = PPOConfig(), None
    if args.quick:  # a smoke run of the whole pipeline, for tests
        config = replace(config, epochs=1, steps_per_epoch=256, pool_size=8, n_envs=2, batch_size_prompts=4)
        circuit_ppo = dict(epochs=1, budget=4, steps_per_epoch=64, steps_per_collect=32, pool_size=2, selection_episodes=1,
                           n_envs=2, batch_size_prompts=4, minibatch=16, repeat=1)  # fmt: skip
    run(Path(args.out), model=args.model, model_path=args.model_path,
        eval_episodes=4 if args.quick else args.eval_episodes, ppo=config, seed=args.seed, device=args.device,
        workers=args.workers, circuit_episodes=1 if args.quick else args.circuit_episodes,
        circuit_build_episodes=1 if args.quick else args.circuit_build_episodes, circuit_ppo=circuit_ppo)  # fmt: skip
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from circuit_gym.ablation import default_ablation
    from circuit_gym.ablation.cache import SweepCache
    from circuit_gym.ablation.tables import sweep_table
    from circuit_gym.heads import head_name
    from circuit_gym.models import load_model
    from circuit_gym.plots import head_heatmap
    from circuit_gym.tasks import get_task
    from circuit_gym.tasks.reference import reference_batch

    model = load_model(args.model, path=args.model_path, device=args.device, threads=args.threads)
    args.ablation = args.ablation or default_ablation(args.model)
    task = get_task(args.task)
    batch = task.batch(model, args.split, args.batch_size, args.seed)
    reference = reference_batch(model, args.reference)
    table = sweep_table(model, task, batch, reference, ablation=args.ablation, lam=args.lam,
                        cache=None if args.no_cache else SweepCache(), progress=True)  # fmt: skip
    print(f"{args.model} / {task.name} ({args.split}, seed {args.seed}, {args.batch_size} prompts), "
          f"{args.ablation} ablation, lam {args.lam}, reference {reference.name}")  # fmt: skip
    print(f"clean task metric {table.clean_metric:.3f}, clean reference loss {table.clean_general_loss:.3f}")
    print(f"{'head':>6} {'reward':>9} {'task dmg':>9} {'gen dmg':>9}")
    for h in table.reward.argsort()[::-1][: args.top]:
        print(f"{head_name(h, table.n_heads):>6} {table.reward[h]:9.3f} "
              f"{table.task_damage[h]:9.3f} {table.general_damage[h]:9.3f}")  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"sweep_{args.model}_{task.name}_{args.split}_s{args.seed}_{args.ablation}"
    (out / f"{stem}.json").write_text(json.dumps(table.to_dict(), indent=1))
    (out / f"{stem}.csv").write_text(table.to_csv())
    head_heatmap(table.reward, table.n_layers, table.n_heads,
                 f"{args.model} {task.name}: contrastive reward ({args.ablation}, lam {args.lam})",
                 out / f"{stem}.png", mark=table.oracle_head)  # fmt: skip
    print(f"wrote {out / stem}.json/.csv/.png")
    return 0


def _cmd_precompute(args: argparse.Namespace) -> int:
    from circuit_gym.precompute import precompute

    summary = precompute(args.model, args.tasks, args.splits, args.pool_size, model_path=args.model_path,
                         batch_size=args.batch_size, ablation=args.ablation, reference=args.reference,
                         device=args.device, threads=args.threads, use_ray=args.ray,
                         ray_workers=args.ray_workers, workers=args.workers)  # fmt: skip
    print(f"{summary['computed']} sweeps computed, {summary['cached_before']} already cached, "
          f"in {summary['seconds']} s -> {summary['cache']}")  # fmt: skip
    return 0


def _cmd_suite(args: argparse.Namespace) -> int:
    from pathlib import Path

    from circuit_gym.ablation.cache import SweepCache
    from circuit_gym.models import load_model
    from circuit_gym.suite import suite_report, write_report

    model = load_model(args.model, path=args.model_path, device=args.device, threads=args.threads)
    report = suite_report(model, tasks=args.tasks, split=args.split, episodes=args.episodes,
                          cache=None if args.no_cache else SweepCache())  # fmt: skip
    paths = write_report(
        report, Path(args.out), model.circuit_gym_info.n_layers, model.circuit_gym_info.n_heads
    )
    for name, row in report["tasks"].items():
        if "error" in row:
            print(f"{name:14s} excluded: {row['error'][:100]}")
            continue
        failed = [k for k, ok in row["checks"].items() if not ok]
        print(f"{name:14s} {'included' if row['included'] else 'EXCLUDED':9s} accuracy {row['accuracy']:.2f}  "
              f"oracle>0 {row['oracle_positive_share']:.2f}  mode {row['modal_head_name']} "
              f"({row['modal_share']:.2f}) {'failed: ' + ', '.join(failed) if failed else ''}")  # fmt: skip
    s = report["structure_included"]
    if s:
        print(f"included {len(report['included'])} tasks in {len(report['families_included'])} families; "
              f"{s['distinct_modal_heads']} distinct modal heads; modal head outside the others' top "
              f"{report['rule']['others_top']}: {s['tasks_with_modal_head_outside_others_top']}")  # fmt: skip
    choice = report["held_out_choice"]
    if "error" in choice:
        print(f"held-out choice: none ({choice['error']})")
    else:
        print(f"held-out choice ({report['split']} split): {choice['held_out']}; training: {choice['train']}")
        for task, reason in choice["reasons"].items():
            print(f"  {task}: {reason}")
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def _cmd_lb_score(args: argparse.Namespace) -> int:
    import os

    from circuit_gym.leaderboard.circuit_scorer import score_circuit
    from circuit_gym.leaderboard.estimate import estimate
    from circuit_gym.leaderboard.scorer import score
    from circuit_gym.leaderboard.scoring import read_private_seeds, write_result
    from circuit_gym.solvers.white_box import builtins

    circuit = args.track.endswith("circuit")
    transfer = args.track.startswith("transfer-")
    available = builtins(args.track.removeprefix("transfer-"))
    if args.builtin is not None and args.builtin not in available:
        print(f"error: --builtin on the {args.track} track is one of {sorted(available)}", file=sys.stderr)
        return 2
    # As `python -m` does: a policy module in the current directory is found (the console
    # script's own folder, not the working directory, heads sys.path).
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    n_private = len(read_private_seeds(args.private_seeds)[0]) if args.private_seeds else 0
    print(estimate(args.track, args.builtin, n_private), file=sys.stderr)
    if args.features != "attention" and not transfer:
        print("error: --features belongs to the transfer tracks (--track transfer-single-head or "
              "transfer-circuit)", file=sys.stderr)  # fmt: skip
        return 2
    if args.private_model and not transfer:
        print("error: --private-model belongs to the transfer tracks (--track transfer-single-head or "
              "transfer-circuit)", file=sys.stderr)  # fmt: skip
        return 2
    scorer = score_circuit if circuit else score
    try:
        if transfer:
            from circuit_gym.leaderboard.transfer_scorer import score_transfer

            result = score_transfer(args.name, args.track.removeprefix("transfer-"), policy_spec=args.policy,
                                    checkpoint=args.checkpoint, builtin=args.builtin,
                                    private_model=args.private_model, private_seeds=args.private_seeds,
                                    require_isolation=args.require_isolation, features=args.features)  # fmt: skip
        else:
            result = scorer(args.name, policy_spec=args.policy, checkpoint=args.checkpoint, builtin=args.builtin,
                            model=args.model, model_path=args.model_path, private_seeds=args.private_seeds,
                            require_isolation=args.require_isolation)  # fmt: skip
    except ModuleNotFoundError as err:
        print(f"error: {err}. The scorer looks for the policy's module on sys.path, which holds the current "
              f"directory ({os.getcwd()}): run from the folder that contains the module's top-level package, "
              "or add that folder to PYTHONPATH", file=sys.stderr)  # fmt: skip
        return 2
    except (OSError, RuntimeError) as err:  # RuntimeError: IsolationUnavailableError
        print(f"error: {err}", file=sys.stderr)
        return 2
    path = write_result(result, args.out)
    if result["status"] == "failed":
        print(f"policy failed: {result['failure']['type']}: {result['failure']['reason']}", file=sys.stderr)
        print(f"failure record written to {path}", file=sys.stderr)
        return 1
    if transfer:
        return _print_transfer_result(args.name, result, path)
    if circuit:
        return _print_circuit_result(args.name, result, path)
    k5 = result["scores"]["overall"]["k5"]
    k1 = result["scores"]["overall"]["k1"]
    passes = result["scores"]["compute"]

    def num(v) -> str:  # NaN is stored as None
        return "nan" if v is None else f"{v:.3f}"

    def ci(c: list) -> str:
        return f"[{num(c[0])}, {num(c[1])}]"

    print(f"{args.name}: held-out best-of-5 recovery {num(k5['recovery'])} {ci(k5['recovery_ci95'])}, "
          f"best-of-1 {num(k1['recovery'])}, top-1 {k1['top1_rate']:.2f} ({k5['episodes']} episodes, "
          f"{k5['episodes_without_positive_oracle']} without a positive oracle); LM passes per episode: "
          f"{passes['forward_passes_per_episode']:g} forward, {passes['partial_passes_per_episode']:g} partial, "
          f"{passes['backward_passes_per_episode']:g} backward -> {path}")  # fmt: skip
    if result.get("private"):
        pk5, pk1 = (result["private"]["scores"]["overall"][k] for k in ("k5", "k1"))
        print(f"private seeds ({result['private']['n_seeds']}, file sha256 {result['private']['seed_file_sha256'][:12]}): "
              f"best-of-5 {num(pk5['recovery'])} {ci(pk5['recovery_ci95'])}, best-of-1 {num(pk1['recovery'])}")  # fmt: skip
    return 0


def _print_circuit_result(name: str, result: dict, path) -> int:
    def num(v) -> str:  # NaN is stored as None
        return "nan" if v is None else f"{v:.3f}"

    def line(s: dict) -> str:
        return (f"CPR {num(s['cpr'])} [{num(s['cpr_ci95'][0])}, {num(s['cpr_ci95'][1])}], CMD {num(s['cmd'])} "
                f"[{num(s['cmd_ci95'][0])}, {num(s['cmd_ci95'][1])}], faithfulness {num(s['faithfulness'])}, "
                f"circuit size {num(s['circuit_size'])}, {s['forward_passes']:g} forward passes per episode "
                f"({s['episodes']} episodes)")  # fmt: skip

    print(f"{name} (circuit track): {line(result['scores']['summary']['all'])} -> {path}")
    if result.get("private"):
        private = result["private"]
        print(f"private seeds ({private['n_seeds']}, file sha256 {private['seed_file_sha256'][:12]}): "
              f"{line(private['scores']['summary']['all'])}")  # fmt: skip
    return 0


def _print_transfer_result(name: str, result: dict, path) -> int:
    from circuit_gym.leaderboard.transfer_scorer import headline

    for line in headline(result):
        print(f"{name}: {line}")
    print(f"result written to {path}")
    return 0


def _cmd_lb_render(args: argparse.Namespace) -> int:
    from pathlib import Path

    from circuit_gym.leaderboard.board import render

    paths = [Path(p) for p in args.results] if args.results else None
    summary = render(paths, Path(args.out) if args.out else None, model=args.model, model_path=args.model_path,
                     rescore=args.rescore, private_seeds=Path(args.private_seeds) if args.private_seeds else None,
                     require_isolation=args.require_isolation, jobs=args.jobs,
                     private_model=Path(args.private_model) if args.private_model else None)  # fmt: skip
    for message in summary["refused"]:
        print(f"refused: {message}", file=sys.stderr)
    checks = ", ".join(f"{r['name']}: {r['check']}" for r in summary["rows"])
    print(f"board: {len(summary['rows'])} entries ({checks}), {len(summary['refused'])} refused")
    for t, rows in summary.get("transfer_rows", {}).items():
        listed = ", ".join(f"{r['name']}: {r['check']}" for r in rows)
        print(f"{t}: {len(rows)} entries ({listed})")
    return 0


def _cmd_lb_canary(args: argparse.Namespace) -> int:
    from circuit_gym.leaderboard.canary import run_canary

    tracks = (args.track,) if args.track else BOARD_TRACKS
    found = run_canary(tracks=tracks)
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


def _cmd_lb_rescore_references(args: argparse.Namespace) -> int:
    from pathlib import Path

    from circuit_gym.leaderboard.rescore import rescore_references

    tracks = (args.track,) if args.track else BOARD_TRACKS
    lines = rescore_references(tracks, Path(args.private_seeds) if args.private_seeds else None, args.jobs,
                               args.require_isolation, private_model=Path(args.private_model) if args.private_model else None,
                               names=tuple(args.names) if args.names else None)  # fmt: skip
    print("\n".join(lines))
    print("wrote leaderboard/references.json; review its diff, then run `circuit-gym leaderboard render`")
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from circuit_gym.play import PlayerQuitError, play

    kwargs = {"episode_length": args.steps, "split": args.split}
    if args.model_path:
        kwargs["model_path"] = args.model_path
    env = gym.make(args.env, device=args.device, **kwargs)
    try:
        play(env, seed=args.seed)
    except PlayerQuitError:
        print("\nquit")
    return 0


def _cmd_circuits(args: argparse.Namespace) -> int:
    import json

    from circuit_gym.baselines.circuit_export import export, score_file
    from circuit_gym.models import load_model

    model = load_model(args.model, path=args.model_path, device=args.device, threads=args.threads)
    batches = range(args.episodes)
    if args.circuits_command == "export":
        paths = export(model, args.solver, args.task, args.split, batches, args.out, size=args.size)
        print(f"wrote {len(paths)} MIB circuit files to {args.out}")
    else:
        print(json.dumps(score_file(model, args.file, args.task, args.split, batches), indent=1))
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    import json

    from circuit_gym.doctor import format_report, report

    r = report()
    print(json.dumps(r, indent=1) if args.json else format_report(r))
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from circuit_gym.envs.registration import FAMILIES, entries, version_notes

    listed = [e for e in entries() if (e.current or args.all) and args.family in (None, e.family.name)]
    table = [("ID", "model", "tasks", "status")]
    for e in listed:
        status = (
            "current" if e.current else f"{'superseded: builds' if e.superseded else 'older: use'} {e.use}"
        )
        table.append((e.id, e.model, ", ".join(e.tasks), status))
    if not args.all:  # every row is current
        table = [row[:3] for row in table]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    current = [e for e in listed if e.current]
    counts = ", ".join(f"{sum(e.family.name == name for e in current)} {family.title}"
                       for name, family in FAMILIES.items() if args.family in (None, name))  # fmt: skip
    older = f"{len(listed) - len(current)} older" if args.all else "--all adds the older versions"
    print(f"{len(current)} current IDs ({counts}); {older}")
    if args.notes:
        for family, version in sorted({(e.family.name, e.line.version) for e in listed}):
            print(f"{family} v{version}: {version_notes(family, version)}")
    return 0


def _default_play_id() -> str:
    from circuit_gym.envs.registration import env_ids

    return next(i for i in env_ids(family="single-head") if i.startswith("CircuitDiscovery-Toy-IOI-"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="circuit-gym", description=__doc__)
    parser.add_argument(
        "--no-progress", action="store_true",
        help="no progress bars or first-use notes (also: CIRCUIT_GYM_PROGRESS=0; off anyway when not a terminal)",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)

    def add_model_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--model", default="toy", help="toy (default, embedded), gpt2, or a transformer_lens name"
        )
        p.add_argument("--model-path", default=None, help="local checkpoint directory for the model")
        p.add_argument("--device", default="cpu", help="torch device: cpu (default), cuda, cuda:1, mps")
        p.add_argument(
            "--threads", type=int, default=None,
            help="torch threads (default: $CIRCUIT_GYM_THREADS, else 1; see README for when more help)",
        )  # fmt: skip

    circuits = sub.add_parser(
        "circuits", help="MIB circuit files: export a solver's circuits, or score a file"
    )
    circuits_sub = circuits.add_subparsers(dest="circuits_command", required=True)
    p = circuits_sub.add_parser("export", help="write a reference solver's circuit of each batch as MIB JSON")
    add_model_args(p)
    p.add_argument("--solver", choices=["acdc", "eap_ig", "attribution"], default="eap_ig")
    p.add_argument("--size", type=int, default=None, help="heads in each circuit (default: 10%% of them)")
    p.add_argument("--out", required=True, help="output directory")
    p2 = circuits_sub.add_parser("score", help="faithfulness of the head circuit in a MIB circuit file")
    add_model_args(p2)
    p2.add_argument("file", help="a MIB circuit JSON file (nodes a{layer}.h{head} with in_graph)")
    for q in (p, p2):
        q.add_argument("--task", default="ioi")
        q.add_argument("--split", default="test")
        q.add_argument(
            "--episodes", type=int, default=8, help="prompt batches (seeds 0..N-1), 8 prompts each"
        )
        q.set_defaults(func=_cmd_circuits)

    p = sub.add_parser("info", help="load a model and print its shape")
    add_model_args(p)
    p.set_defaults(func=_cmd_info)

    from circuit_gym.ablation import ABLATIONS
    from circuit_gym.tasks.reference import REFERENCE_CHOICES

    p = sub.add_parser("sweep", help="exhaustive single-head sweep of one prompt batch")
    add_model_args(p)
    p.add_argument("--task", required=True, help="induction, ioi, docstring or a registered task")
    p.add_argument("--split", default="train", choices=["train", "eval", "test"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--ablation", default=None, choices=ABLATIONS, help="default: resample (toy), zero (gpt2)")
    p.add_argument("--lam", type=float, default=1.0)
    p.add_argument("--reference", default=None, choices=REFERENCE_CHOICES, help="general-damage text")
    p.add_argument("--top", type=int, default=5)
    p.add_argument("--out", default="results/sweeps")
    p.add_argument("--no-cache", action="store_true", help="recompute instead of reading the disk cache")
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser("precompute", help="fill the sweep cache for whole episode pools (optionally on Ray)")
    add_model_args(p)
    p.add_argument("--tasks", nargs="+", required=True, help="registered task names")
    p.add_argument("--splits", nargs="+", default=["train"], choices=["train", "eval", "test"])
    p.add_argument(
        "--pool-size", type=int, default=32, help="episodes per task and split (batch seeds 0..N-1)"
    )
    p.add_argument(
        "--batch-size", type=int, default=8, help="prompts per episode (the environments' default)"
    )
    p.add_argument("--ablation", default=None, choices=ABLATIONS, help="default: the model's default")
    p.add_argument("--reference", default=None, choices=REFERENCE_CHOICES, help="general-damage text")
    p.add_argument(
        "--ray", action="store_true", help="run each sweep as a Ray task (pip install circuit-gym[ray])"
    )
    p.add_argument("--ray-workers", type=int, default=None, help="Ray actors (default: the cluster's CPUs)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (without --ray)")
    p.set_defaults(func=_cmd_precompute)

    p = sub.add_parser("suite", help="inclusion gate and oracle-head structure of the task suite")
    add_model_args(p)
    p.add_argument("--tasks", nargs="*", default=None, help="default: every registered task")
    p.add_argument("--split", default="test", choices=["train", "eval", "test"])
    p.add_argument("--episodes", type=int, default=48, help="pool episodes per task (batch seeds 0..N-1)")
    p.add_argument("--out", default="docs/suite")
    p.add_argument("--no-cache", action="store_true")
    p.set_defaults(func=_cmd_suite)

    lb = sub.add_parser("leaderboard", help="score a policy on held-out tasks, or render the board")
    lb_sub = lb.add_subparsers(dest="lb_command", required=True)
    p = lb_sub.add_parser("score", help="score a policy (sandboxed) and write a verifiable result file")
    add_model_args(p)
    p.add_argument("--name", required=True)
    p.add_argument(
        "--track", choices=BOARD_TRACKS,
        default="single-head",
        help="single-head (default): rank_heads(observation) on the held-out episodes; circuit: a "
        "circuit-building policy (act(observation, action_mask) and rank_heads) plays the circuit-building "
        "environment, scored by CPR / CMD (circuit_gym/leaderboard/circuit_scorer.py); transfer-*: benchmark v6, the "
        "same on every public zoo model in four quadrants (seen / unseen task x model), "
        "circuit_gym/leaderboard/transfer_scorer.py",
    )  # fmt: skip
    p.add_argument(
        "--private-model", metavar="DIR",
        help="maintainers only, transfer tracks: the private evaluation model's directory (never committed); "
        "needs --private-seeds; the result keeps its weights hash",
    )  # fmt: skip
    p.add_argument(
        "--features", default="attention",
        help="transfer tracks: the observation the policy is given, the environments' features argument "
        "(attention, the default; causal: attribution and EAP-IG columns, whose passes count as the "
        "policy's compute; single-head also prediction)",
    )  # fmt: skip
    p.add_argument(
        "--policy",
        help="package.module:factory returning an object with rank_heads(observation) (and, on the circuit "
        "track, act(observation, action_mask))",
    )
    p.add_argument("--checkpoint", help="passed to the factory (e.g. a PPO checkpoint directory)")
    p.add_argument(
        "--builtin", metavar="NAME",
        help="a white-box reference solver run in-process (circuit_gym/solvers/white_box.py): greedy "
        "(single-head track); greedy_search or attribution (circuit track); acdc or eap_ig (both tracks)",
    )  # fmt: skip
    p.add_argument("--out", required=True)
    p.add_argument(
        "--private-seeds", metavar="FILE",
        help="maintainers only: a private seed file (JSON list of ints, or one int per line); the policy is "
        "also scored on those test-pool batch seeds, and the result keeps those scores and the file's "
        "SHA-256, never the seeds",
    )  # fmt: skip
    p.add_argument(
        "--require-isolation", action=argparse.BooleanOptionalAction, default=None,
        help="refuse to run the policy without complete isolation (circuit_gym/leaderboard/isolation.py); default: on "
        "with --private-seeds, off otherwise (the result then records what was missing)",
    )  # fmt: skip
    p.set_defaults(func=_cmd_lb_score)
    p = lb_sub.add_parser("render", help="verify result files and build the board")
    add_model_args(p)
    p.add_argument(
        "--results", nargs="*",
        help="result files of either track (default: leaderboard/results/*.json and leaderboard/results/circuit/*.json)",
    )  # fmt: skip
    p.add_argument("--out", help="output directory (default: leaderboard/)")
    p.add_argument(
        "--private-model", metavar="DIR",
        help="with --rescore and --private-seeds: the private evaluation model, to verify the transfer tracks' "
        "private scores (refused when the entry was scored on other weights)",
    )  # fmt: skip
    p.add_argument(
        "--rescore", action="store_true", help="re-run the scorer on every entry and refuse mismatches"
    )
    p.add_argument(
        "--jobs", type=int, default=1, help="with --rescore: entries re-scored at once (one process each)"
    )
    p.add_argument(
        "--private-seeds", metavar="FILE",
        help="with --rescore: the private seed file, to re-compute the private scores of the entries scored "
        "on it (same SHA-256); only those entries are called verified",
    )  # fmt: skip
    p.add_argument(
        "--require-isolation", action=argparse.BooleanOptionalAction, default=True,
        help="with --rescore: refuse to run a submitted policy without complete isolation (default: on)",
    )  # fmt: skip
    p.set_defaults(func=_cmd_lb_render)
    p = lb_sub.add_parser(
        "canary",
        help="re-score the first episodes of every reference and compare them with the committed rows",
    )
    p.add_argument("--track", choices=BOARD_TRACKS,
                   help="one track only (default: all)")  # fmt: skip
    p.set_defaults(func=_cmd_lb_canary)
    p = lb_sub.add_parser(
        "rescore-references",
        help="score every reference of leaderboard/references.json again; write its result files and the manifest",
    )
    p.add_argument("--track", choices=BOARD_TRACKS,
                   help="one track only (default: all)")  # fmt: skip
    p.add_argument("--names", nargs="*", help="only these references (default: every one of the tracks)")
    p.add_argument(
        "--private-model", metavar="DIR",
        help="the transfer tracks' private evaluation model (with --private-seeds; never committed)",
    )  # fmt: skip
    p.add_argument("--jobs", type=int, default=1, help="references scored at once (one process each)")
    p.add_argument(
        "--private-seeds", metavar="FILE",
        help="the maintainers' private seed file: the references' private scores are computed on it",
    )  # fmt: skip
    p.add_argument(
        "--require-isolation", action=argparse.BooleanOptionalAction, default=None,
        help="refuse to run a sandboxed reference without complete isolation (default: on with --private-seeds)",
    )  # fmt: skip
    p.set_defaults(func=_cmd_lb_rescore_references)

    p = sub.add_parser("play", help="be the policy: pick heads for an episode in the terminal")
    p.add_argument("--env", default=_default_play_id(), help="environment ID (default: %(default)s)")
    p.add_argument("--model-path", default=None, help="local checkpoint directory (GPT2 IDs)")
    p.add_argument("--device", default="cpu", help="torch device: cpu (default), cuda, mps")
    p.add_argument("--steps", type=int, default=3, help="heads to ablate in the episode (default 3)")
    p.add_argument("--split", default="train", choices=["train", "eval", "test"])
    p.add_argument("--seed", type=int, default=None, help="reset seed (default: a random episode)")
    p.set_defaults(func=_cmd_play)

    p = sub.add_parser("list", help="the environment IDs: model and tasks, one line each (loads no model)")
    p.add_argument("--all", action="store_true", help="older and superseded versions too, with the ID to use")
    from circuit_gym.envs.registration import FAMILIES  # a table of dataclasses: loads no model

    p.add_argument("--family", choices=list(FAMILIES), default=None, help="one family only")
    p.add_argument("--notes", action="store_true", help="what each listed version changed")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser(
        "doctor", help="print versions, device, model files and cache location (for bug reports)"
    )
    p.add_argument("--json", action="store_true", help="the same as JSON")
    p.set_defaults(func=_cmd_doctor)

    p = sub.add_parser("run", help="the main job: train and evaluate the reference solvers")
    add_model_args(p)
    p.add_argument("--out", default="results", help="output directory")
    p.add_argument("--eval-episodes", type=int, default=48, help="evaluation episodes per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="tiny settings: checks the wiring in a minute")
    p.add_argument("--workers", type=int, default=2, help="processes that sweep the pools before training")
    p.add_argument(
        "--circuit-episodes",
        type=int,
        default=8,
        help="held-out episodes per task for the circuit scores (CPR/CMD, with ACDC and EAP-IG)",
    )
    p.add_argument(
        "--circuit-build-episodes",
        type=int,
        default=2,
        help="held-out episodes per task for the circuit-building solvers (greedy search: ~2,000 passes each)",
    )
    p.set_defaults(func=_cmd_run)
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
