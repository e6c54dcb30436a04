"""Measure the embedded model and write its model card (numbers, not claims).

    python scripts/model_card.py [--model-dir circuit_gym/models/toy] [--episodes 8]

Reads the training log written by ``scripts/train_toy_model.py`` and measures, on
held-out templates and fillers: induction (loss on the repeated half vs the first half,
head scores), IOI accuracy, docstring accuracy, and the per-task top-5 heads by
contrastive reward under every reference batch and ablation kind.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym.ablation import ABLATIONS, head_name  # noqa: E402
from circuit_gym.ablation.tables import sweep_table  # noqa: E402
from circuit_gym.models import load_model  # noqa: E402
from circuit_gym.models.behaviour import docstring_metrics, induction_metrics, ioi_metrics  # noqa: E402
from circuit_gym.tasks import get_task  # noqa: E402
from circuit_gym.tasks.reference import REFERENCE_CHOICES, reference_batch  # noqa: E402

TASKS = ("induction", "ioi", "docstring")


def top_heads(model, episodes: int) -> dict:
    """Mean contrastive reward over eval-split batches -> top-5 heads, per reference x ablation x task."""
    out = {}
    for ref_name in ("stdlib", "stdlib+taskstyle", "prose+taskstyle"):
        if ref_name not in REFERENCE_CHOICES:
            continue
        ref = reference_batch(model, ref_name)
        for kind in ABLATIONS:
            for name in TASKS:
                task = get_task(name)
                tables = [sweep_table(model, task, task.batch(model, "eval", 16, s), ref, ablation=kind)
                          for s in range(episodes)]  # fmt: skip
                reward = np.mean([t.reward for t in tables], 0)
                oracle_counts = np.bincount([t.oracle_head for t in tables], minlength=len(reward))
                order = np.argsort(-reward)[:5]
                out[f"{ref_name}|{kind}|{name}"] = {
                    "top5": [
                        (head_name(int(h), model.cfg.n_heads), round(float(reward[h]), 3)) for h in order
                    ],
                    "most_frequent_oracle": head_name(int(np.argmax(oracle_counts)), model.cfg.n_heads),
                    "oracle_frequency": float(oracle_counts.max() / len(tables)),
                }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=ROOT / "circuit_gym" / "models" / "toy")
    parser.add_argument("--episodes", type=int, default=8)
    args = parser.parse_args()
    model = load_model("toy", path=args.model_dir)
    metrics = {}
    for split in ("eval", "test"):
        metrics[split] = {
            "induction": induction_metrics(model, split), "ioi": ioi_metrics(model, split),
            "docstring": docstring_metrics(model, split),
        }  # fmt: skip
    heads = top_heads(model, args.episodes)
    log = json.loads((args.model_dir / "training_log.json").read_text())
    result = {"weights_hash": model.circuit_gym_info.weights_hash, "behaviour": metrics, "top_heads": heads}
    (args.model_dir / "card_metrics.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "top_heads"}, indent=1)[:3000])
    for key, v in heads.items():
        print(
            f"{key:>40}: {v['top5']}  oracle mode {v['most_frequent_oracle']} ({v['oracle_frequency']:.2f})"
        )
    last = log["log"][-1]
    print(
        f"training: {last['step']} steps, {last['minutes']} min, phase switch at {log['phase_switch_step']}"
    )


if __name__ == "__main__":
    main()
