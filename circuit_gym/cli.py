"""The ``circuit-gym`` command line."""

from __future__ import annotations

import argparse
import sys


def _cmd_info(args: argparse.Namespace) -> int:
    from circuit_gym.models import load_model

    model = load_model(args.model, path=args.model_path)
    info = model.circuit_gym_info
    print(
        f"model {info.name} ({info.source}): {info.n_layers} layers x {info.n_heads} heads = "
        f"{info.n_heads_total} actions, d_model {model.cfg.d_model}, vocab {model.cfg.d_vocab}, "
        f"weights {info.weights_hash}"
    )
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    # Placeholder until the baselines exist (issue: reference solvers and the main job).
    print("circuit-gym run: the PPO/greedy/random pipeline is not built yet; loading the model only.")
    return _cmd_info(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="circuit-gym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def add_model_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--model", default="toy", help="toy (default, embedded), gpt2, or a transformer_lens name"
        )
        p.add_argument("--model-path", default=None, help="local checkpoint directory for the model")

    p = sub.add_parser("info", help="load a model and print its shape")
    add_model_args(p)
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("run", help="the main job: train and evaluate the reference solvers")
    add_model_args(p)
    p.add_argument("--out", default="results", help="output directory")
    p.set_defaults(func=_cmd_run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from circuit_gym.models import ModelNotAvailableError

    try:
        return int(args.func(args) or 0)
    except ModelNotAvailableError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
