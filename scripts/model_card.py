"""Measure the embedded model and write its model card (numbers, not claims): the options, then
:func:`circuit_gym.card_measurement.write_card` (the card itself: :mod:`circuit_gym.models.cards`).

    python scripts/model_card.py [--model toy] [--episodes 48]
    python scripts/model_card.py --model toy --render-only   # rewrite the card from card_metrics.json

Reads the training log written by ``scripts/train_toy_model.py`` and measures, on the
held-out splits: every task's clean accuracy and metric, induction head scores, the
inclusion gate and the per-episode oracle structure (``circuit_gym.suite``, the same
code as ``circuit-gym suite``), and per-task top-5 heads by mean contrastive reward.
Writes ``MODEL_CARD.md``, ``card_metrics.json`` and ``oracle_heads.png`` into the
model's directory. (The 4 x 4 ``tiny`` model's card was written by this script's
predecessor at commit 9827f71 and is kept as it was.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.card_measurement import write_card  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="toy")
    parser.add_argument(
        "--path",
        type=Path,
        default=None,
        help="a model directory outside the package (the private model): its card is written there",
    )
    parser.add_argument("--episodes", type=int, default=48, help="pool episodes per task for the gate")
    parser.add_argument("--top-episodes", type=int, default=8, help="batches of 16 for the top-5 table")
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="measure nothing: rewrite MODEL_CARD.md from the committed card_metrics.json and training log",
    )
    parser.add_argument(
        "--ablation",
        choices=("zero", "mean", "resample"),
        default=None,
        help="override the model's default ablation (a private zoo model: resample)",
    )
    parser.add_argument(
        "--reference",
        default=None,
        help="override the model's default reference batch (a private zoo model: stdlib+taskstyle)",
    )
    args = parser.parse_args()
    write_card(
        args.model,
        args.path,
        args.episodes,
        args.top_episodes,
        args.render_only,
        args.ablation,
        args.reference,
    )


if __name__ == "__main__":
    main()
