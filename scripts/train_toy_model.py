"""Train circuit_gym's embedded model (or a zoo member): the options, then
:func:`circuit_gym.models.training.train` (its docstring, shown by ``--help``, has the recipe).

    python scripts/train_toy_model.py --out circuit_gym/models/toy --work runs/toy
    python scripts/train_toy_model.py --out /tmp/smoke --work /tmp/smoke-work --steps 3 --smoke  # CI
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from circuit_gym.models import training  # noqa: E402
from circuit_gym.models.training import RECIPES  # noqa: E402


def parse_args(argv: list[str] | None):
    p = argparse.ArgumentParser(
        description=training.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", type=Path, required=True, help="where the finished model is exported")
    p.add_argument("--work", type=Path, required=True, help="checkpoints and the training log (resumable)")
    p.add_argument("--steps", type=int, default=9000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--n-layers", type=int, default=12)
    p.add_argument("--n-heads", type=int, default=12)
    p.add_argument("--d-model", type=int, default=144)
    p.add_argument("--n-ctx", type=int, default=64)
    p.add_argument(
        "--d-mlp",
        type=int,
        default=0,
        help="MLP width of every layer (0: attention-only, every shipped model)",
    )
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--max-phase1-steps", type=int, default=3000)
    p.add_argument("--seed-layers", type=int, default=2, help="layers trained in phase 1 (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--recipe",
        choices=sorted(RECIPES),
        default="toy",
        help="data mixture and tasks: 'toy' (the embedded model's) or 'zoo' (adds capital, minimum)",
    )
    p.add_argument(
        "--identity-layers",
        type=int,
        default=0,
        help="hold the first N layers as exact identities (frozen, zero output) until "
        "--release-step, so the circuits form in layers N and up; phase 1's seed stack "
        "starts at layer N",
    )
    p.add_argument(
        "--release-step",
        type=int,
        default=None,
        help="step at which the identity layers start training (default: 75%% of --steps)",
    )
    p.add_argument(
        "--tokenizer",
        type=str,
        default=None,
        help="a tokenizer.json to use instead of training one (a zoo shares one tokenizer)",
    )
    p.add_argument(
        "--head-dropout",
        type=float,
        default=0.0,
        help="self-repair knob: in phase 2 each head is resample-ablated with this probability "
        "per batch, so the model keeps backups (0: off, the zoo v1 recipe)",
    )
    p.add_argument(
        "--top-head-dropout",
        type=float,
        default=0.0,
        help="targeted self-repair knob: in phase 2 each task's top head (attribution patching, "
        "refreshed every 50 steps) is resample-ablated with this probability per batch (0: off)",
    )
    p.add_argument(
        "--flood",
        type=float,
        default=0.0,
        help="per-token flooding level B in phase 2: a token's loss below B is pushed back up to B, "
        "so the model aims at confidence exp(-B) (0: off)",
    )
    p.add_argument(
        "--backup-weight",
        type=float,
        default=0.0,
        help="backup objective (zoo v3): per task, a dormant backup Q for its top head P, with this "
        "weight in the loss (0: off; circuit_gym.models.backup_objective)",
    )
    p.add_argument("--backup-carry", type=float, default=1.0, help="weight of 'task works with P ablated'")
    p.add_argument(
        "--backup-dormancy", type=float, default=1.0, help="weight of 'ablating Q alone changes nothing'"
    )
    p.add_argument(
        "--backup-pair", type=float, default=1.0, help="weight of 'P and Q ablated: the task fails'"
    )
    p.add_argument(
        "--backup-clean", type=float, default=1.0, help="weight of 'the clean metric stays where it was'"
    )
    p.add_argument("--backup-tasks-per-step", type=int, default=3, help="tasks whose pairs each step trains")
    p.add_argument("--backup-prompts", type=int, default=8, help="train-split prompts per task and step")
    p.add_argument(
        "--backup-from",
        type=int,
        default=None,
        help="first step of the objective (default: --release-step; 0 with --init-from)",
    )
    p.add_argument(
        "--backup-route",
        choices=("all", "backup"),
        default="all",
        help="where the carry and dormancy terms' gradients go: every weight, or the backup head's own",
    )
    p.add_argument(
        "--backup-choice",
        choices=("drawn", "conditional"),
        default="drawn",
        help="each primary's backup: drawn in a later layer, or the later head that matters most with P ablated",
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--save-every", type=int, default=250)
    p.add_argument("--stop-after", type=int, default=None, help="stop (resumably) after this step")
    p.add_argument("--smoke", action="store_true", help="tiny stdlib subset, for CI")
    p.add_argument("--init-from", type=str, default=None,
                   help="an exported model directory to start from (its weights hash is checked on resume); "
                        "skips phase 1 and trains the fine-tuning mixture")  # fmt: skip
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    training.train(parse_args(argv))


if __name__ == "__main__":
    main()
