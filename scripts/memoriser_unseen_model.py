"""What the test-set memoriser is worth on a model it has never seen: leave one public model out.

    python scripts/memoriser_unseen_model.py --out docs/results/transfer/memoriser_unseen_model.json

The board ranks on a private model that nobody outside the maintainers can fit on; the public zoo
can only estimate what a memoriser gets there. For each public model M, the memoriser is fitted
exactly as ``scripts/fit_testset_memoriser.py`` fits it (test split, unscored batches 8..31,
every task) on the *other three* models, and scored on M's held-out tasks at the board's seeds
(``benchmark.TRANSFER_SEEDS``), in process: best-of-1 and best-of-5 recovery pooled over M's
held-out tasks, and how often it recognises the task.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym import benchmark as B  # noqa: E402
from circuit_gym.baselines.testset_memoriser import HEAD_SCORES, collect, fit  # noqa: E402
from circuit_gym.baselines.transfer_envs import transfer_env  # noqa: E402
from circuit_gym.evaluation import evaluate, results_summary  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--signature", default=None, help="default: the one the shipped checkpoint uses")
    p.add_argument(
        "--out", type=Path, default=ROOT / "docs" / "results" / "transfer" / "memoriser_unseen_model.json"
    )
    args = p.parse_args(argv)
    shipped = json.loads((ROOT / "docs" / "results" / "transfer" / "testset_memoriser.json").read_text())
    kind = args.signature or shipped["signature"]
    batches = tuple(shipped["fitted_on"]["batches"])
    models = B.TRAIN_MODELS + B.HELD_OUT_MODELS
    tasks = B.TRANSFER_TRAIN_TASKS + B.TRANSFER_HELD_OUT_TASKS
    episodes = collect(models, tasks, batches)
    report: dict = {"benchmark_version": B.TRANSFER_BENCHMARK_VERSION, "signature": kind, "fit_batches": list(batches),
                    "seeds": list(B.TRANSFER_SEEDS), "tasks": list(B.TRANSFER_HELD_OUT_TASKS), "left_out": {}}  # fmt: skip
    for left_out in models:
        env = transfer_env(left_out, B.TRANSFER_HELD_OUT_TASKS, B.SPLIT, max(B.TRANSFER_SEEDS) + 1)
        row: dict = {}
        for head_scores in HEAD_SCORES:
            memoriser = fit(
                [e for e in episodes if e.model != left_out], head_scores=head_scores, signature_kind=kind
            )
            found: list[bool] = []

            def rank(obs, env, memoriser=memoriser, found=found):
                found.append(memoriser.recognise(obs)[0] == env.unwrapped.episode.pool.task.name)
                return memoriser.rank_heads(obs)

            results = evaluate(env, rank, head_scores, B.TRANSFER_HELD_OUT_TASKS, B.TRANSFER_SEEDS)
            row[head_scores] = {"task_recognised": sum(found) / len(found)}
            for k in B.KS:
                rs = [r for r in results if r.k == k]
                s = results_summary(rs)
                row[head_scores][f"best_of_{k}"] = {"recovery": s["recovery"], "ci95": s["recovery_ci95"]}
            print(f"{left_out} left out, {head_scores}: best-of-1 {row[head_scores]['best_of_1']['recovery']:.3f}, "
                  f"best-of-5 {row[head_scores]['best_of_5']['recovery']:.3f}, "
                  f"task recognised {row[head_scores]['task_recognised']:.3f}")  # fmt: skip
        report["left_out"][left_out] = row
        env.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
