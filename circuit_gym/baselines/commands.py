"""The baselines' subcommands of ``circuit-gym``: ``run`` (the main job on the benchmark in force,
``circuit_gym.baselines.main_job``) and ``circuits`` (MIB circuit files of the reference solvers).

Registered by :func:`register`, which ``circuit_gym/cli.py`` finds in its registry of apps.
"""

from __future__ import annotations

import argparse

from circuit_gym.benchmark import IN_FORCE
from circuit_gym.commands import add_model_args


def _cmd_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from circuit_gym.baselines.main_job import BUDGET, QUICK, run

    run(Path(args.out), QUICK if args.quick else BUDGET, seed=args.seed, device=args.device)
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
    elif _score_level(model, args) == "edges":
        from circuit_gym.edges.mib_files import score_circuit_file

        result = score_circuit_file(
            args.file, model, args.task, split=args.split, batch_size=8, seeds=batches
        )
        print(json.dumps({"level": "edges", **result}, indent=1))
    else:
        print(
            json.dumps(
                {"level": "heads", **score_file(model, args.file, args.task, args.split, batches)}, indent=1
            )
        )
    return 0


def _score_level(model, args: argparse.Namespace) -> str:
    """The level a file is scored at: ``--level``, or (``auto``) edges for a circuit chosen edge by edge
    (a node circuit scores the same at both levels; GPT-2's MLP edges are not patched, so heads there)."""
    if args.level != "auto":
        return args.level
    from circuit_gym.edges.graph import EdgeGraph
    from circuit_gym.edges.mib_files import circuit_level

    graph = EdgeGraph.of_model(model)
    return "heads" if graph.has_mlp else circuit_level(args.file, graph)


def register(sub: argparse._SubParsersAction) -> None:
    """``run`` and ``circuits``."""
    circuits = sub.add_parser(
        "circuits", help="MIB circuit files: export a solver's circuits, or score a file"
    )
    circuits_sub = circuits.add_subparsers(dest="circuits_command", required=True)
    p = circuits_sub.add_parser("export", help="write a reference solver's circuit of each batch as MIB JSON")
    add_model_args(p)
    p.add_argument("--solver", choices=["acdc", "eap_ig", "attribution"], default="eap_ig")
    p.add_argument("--size", type=int, default=None, help="heads in each circuit (default: 10%% of them)")
    p.add_argument("--out", required=True, help="output directory")
    p2 = circuits_sub.add_parser(
        "score", help="faithfulness of the circuit in a MIB circuit file (edges or heads)"
    )
    add_model_args(p2)
    p2.add_argument("file", help="a MIB circuit JSON file (edges with in_graph, or nodes a{layer}.h{head})")
    p2.add_argument(
        "--level", choices=["auto", "edges", "heads"], default="auto",
        help="edges: the in-graph edges (exact edge patching); heads: the in-graph head nodes; auto: heads "
        "when the in-graph edges are exactly those the in-graph nodes induce, else edges",
    )  # fmt: skip
    for q in (p, p2):
        q.add_argument("--task", default="ioi")
        q.add_argument("--split", default="test")
        q.add_argument(
            "--episodes", type=int, default=8, help="prompt batches (seeds 0..N-1), 8 prompts each"
        )
        q.set_defaults(func=_cmd_circuits)

    p = sub.add_parser(
        "run",
        help="the main job: train the reference agent and score it with the cheap references on the benchmark in force",
        description=f"Benchmark {IN_FORCE} (in force; the board's transfer track): PPO trained on the training models' "
        "training tasks, then PPO, greedy, EAP-IG, random and the memorisers on the public zoo's four quadrants, "
        "written as the board's table.",
    )
    p.add_argument("--out", default="results", help="output directory")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="tiny settings: checks the wiring")
    p.add_argument("--device", default="cpu", help="torch device: cpu (default), cuda, cuda:1, mps")
    p.set_defaults(func=_cmd_run)
