"""The core's own subcommands of ``circuit-gym`` (models, sweeps, the task suite, the
environments), and the arguments every app's commands share (:func:`add_model_args`).

Registered by :func:`register`, which ``circuit_gym/cli.py`` finds in its registry of apps.
"""

from __future__ import annotations

import argparse


def add_model_args(p: argparse.ArgumentParser, default: str | None = "toy") -> None:
    """--model, --model-path, --device and --threads (``default``: the model when none is named)."""
    what = f"{default} (default, embedded)" if default else "none unless named"
    p.add_argument("--model", default=default, help=f"{what}, gpt2, or a transformer_lens name")
    p.add_argument("--model-path", default=None, help="local checkpoint directory for the model")
    p.add_argument("--device", default="cpu", help="torch device: cpu (default), cuda, cuda:1, mps")
    p.add_argument(
        "--threads", type=int, default=None,
        help="torch threads (default: $CIRCUIT_GYM_THREADS, else 1; see README for when more help)",
    )  # fmt: skip


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


def _cmd_doctor(args: argparse.Namespace) -> int:
    import json

    from circuit_gym.doctor import format_report, report

    r = report()
    print(json.dumps(r, indent=1) if args.json else format_report(r))
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from circuit_gym.envs.registration import FAMILIES, entries, version_notes

    listed = [e for e in entries() if (e.current or args.all) and args.family in (None, e.family.name)]
    table: list[tuple[str, ...]] = [("ID", "model", "tasks", "status")]
    for e in listed:
        status = (
            "current"
            if e.current
            else f"{'refused (cannot be reproduced): use' if e.superseded else 'older: use'} {e.use}"
        )
        table.append((e.id, e.model, ", ".join(e.tasks), status))
    if not args.all:  # every row is current
        table = [row[:3] for row in table]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    current = [e for e in listed if e.current]
    per_family = {name: sum(e.family.name == name for e in current) for name in FAMILIES}
    # a family with no current ID (an inner family only others build on) is not listed
    counts = ", ".join(f"{per_family[name]} {family.title}" for name, family in FAMILIES.items()
                       if args.family in (None, name) and (per_family[name] or args.family == name))  # fmt: skip
    older = f"{len(listed) - len(current)} older" if args.all else "--all adds the older versions"
    print(f"{len(current)} current IDs ({counts}); {older}")
    if args.notes:
        for family, version in sorted({(e.family.name, e.line.version) for e in listed}):
            print(f"{family} v{version}: {version_notes(family, version)}")
    return 0


def _default_play_id() -> str:
    from circuit_gym.envs.registration import env_ids

    return next(i for i in env_ids(family="single-head") if i.startswith("CircuitDiscovery-Toy-IOI-"))


def register(sub: argparse._SubParsersAction) -> None:
    """The core's subcommands: info, sweep, precompute, suite, play, list, doctor."""
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
