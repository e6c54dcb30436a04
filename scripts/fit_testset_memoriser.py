"""Fit the test-set memoriser (issue 35 item 5) on the public test split's unscored batches.

    python scripts/fit_testset_memoriser.py --out-dir docs/results/transfer

Reads, on every public zoo member and every task of a transfer benchmark (``--version``, the one in force by
default) that the member serves, test-split batches 8..31
(the board scores 0..7 on the public models: ``benchmark.TRANSFER_SEEDS``, which the fit refuses).
The signature (``"mean"`` over heads or every ``"heads"``') is the one that recognises the task
best on the second half of those batches when fitted on the first half; then both checkpoints of
``circuit_gym.baselines.testset_memoriser`` are fitted on all of them:

- ``testset_memoriser.json``: it recognises the task and ranks heads by the task's mean
  single-head reward over the four public models (``"pooled"``);
- ``testset_memoriser_per_model.json``: ranks by the recognised public model's own table for the
  task (``"per_model"``, the sharper attack).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym import benchmark as B  # noqa: E402
from circuit_gym.baselines.testset_memoriser import SIGNATURES, collect, fit, recognition_accuracy  # noqa: E402
from circuit_gym.baselines.transfer_training import docs_dir  # noqa: E402


def batch_range(text: str) -> tuple[int, ...]:
    """``"8-31"`` -> (8, ..., 31); ``"8,9,12"`` -> (8, 9, 12)."""
    if "-" in text:
        lo, hi = (int(x) for x in text.split("-"))
        return tuple(range(lo, hi + 1))
    return tuple(int(x) for x in text.split(","))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--batches", type=batch_range, default=tuple(range(8, 32)), help="test-split batches, e.g. 8-31"
    )
    p.add_argument("--version", choices=tuple(B.TRANSFER_BENCHMARKS), default=B.IN_FORCE,
                   help="the transfer benchmark whose public models and tasks are read")  # fmt: skip
    p.add_argument("--out-dir", type=Path, help="default: the version's docs folder (docs/results/VERSION)")
    args = p.parse_args(argv)
    bench = B.transfer_benchmark(args.version)
    out_dir = args.out_dir or docs_dir(args.version, ROOT / "docs" / "results")
    models, tasks = bench.public_models(), bench.all_tasks()
    episodes = collect(models, tasks, args.batches, tasks_of=bench.tasks_of)  # each member: its gated tasks
    half = args.batches[len(args.batches) // 2]
    first, second = (
        [e for e in episodes if e.batch_index < half],
        [e for e in episodes if e.batch_index >= half],
    )
    split_accuracy = {
        kind: recognition_accuracy(fit(first, signature_kind=kind), second) for kind in SIGNATURES
    }
    kind = max(SIGNATURES, key=lambda k: split_accuracy[k]["task"])  # "mean" on a tie (listed first)
    for k, acc in split_accuracy.items():
        print(f"signature {k!r}: fitted on batches < {half}, recognises the task of {acc['task']:.3f} "
              f"and the model of {acc['model']:.3f} of the {acc['episodes']} later episodes")  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    for head_scores, stem in (("pooled", "testset_memoriser"), ("per_model", "testset_memoriser_per_model")):
        memoriser = fit(episodes, head_scores=head_scores, signature_kind=kind)
        accuracy = recognition_accuracy(memoriser, episodes)
        about = {
            "about": "Attack entry, not a fair one: fitted on the public test split of the public zoo models "
            "(issue 35 item 5). Written by scripts/fit_testset_memoriser.py.",
            "head_scores": head_scores,
            "fitted_on": {"models": list(models), "tasks": list(tasks), "split": B.SPLIT, "batches": list(args.batches),
                          "benchmark_version": bench.benchmark_version(B.SINGLE_HEAD)},
            "signature_choice": {"chosen": kind, "split_at_batch": half, "accuracy_on_later_batches": split_accuracy},
            "recognition_on_fitting_episodes": accuracy,
        }  # fmt: skip
        memoriser.save(out_dir / f"{stem}.json", about)
        print(f"{stem}: signature {kind!r}, {len(memoriser.labels)} centroids, on its {accuracy['episodes']} "
              f"fitting episodes recognises the task of {accuracy['task']:.3f}, the model of {accuracy['model']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
