"""How many reference rows does the general damage need? Its spread against the row count.

General damage (the rise of next-token loss when a head is ablated) is a mean over the
rows of the reference batch. This measures, for a model, the per-row damages of every
head on a large reference batch (``--max-rows``), then for R rows (the rows
``reference_batch(n_rows=R)`` takes):

- ``se_median``: the median over heads of the standard error of the mean damage
  (per-row standard deviation / sqrt(R));
- ``rank_spearman``: Spearman correlation over heads between the R-row damages and the
  full batch's;
- ``top5_overlap``: how many of the 5 most damaging heads at R rows are among the full
  batch's 5.

    python benchmarks/bench_reference_rows.py --model toy
    python benchmarks/bench_reference_rows.py --model gpt2 --model-path DIR --reference prose
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def spread_by_rows(model, reference: str | None, ablation: str, max_rows: int, row_counts: list[int]) -> dict:
    from scipy.stats import sem, spearmanr

    from circuit_gym.ablation.engine import AblationEngine, Evaluation
    from circuit_gym.models.loading import model_device
    from circuit_gym.tasks.reference import reference_batch

    ref = reference_batch(model, reference, n_rows=max_rows)
    engine = AblationEngine(model, Evaluation.for_reference(ref, model_device(model)), ablation)
    damage = engine.clean_rows.double().cpu().numpy()[None, :] - engine.sweep_rows()  # [heads, rows]
    full = damage.mean(1)
    out = {"reference": ref.name, "ablation": ablation, "max_rows": max_rows,
           "full_damage_median_abs": float(np.median(np.abs(full))),
           "full_damage_spread_across_heads": float(full.std()), "by_rows": {}}  # fmt: skip
    top_full = set(np.argsort(-full)[:5].tolist())
    index = {tuple(row.tolist()): i for i, row in enumerate(ref.tokens)}
    for r in row_counts:
        # the rows reference_batch(n_rows=r) takes (combinations take equal shares of each part)
        rows = [index[tuple(row.tolist())] for row in reference_batch(model, reference, n_rows=r).tokens]
        part = damage[:, rows]
        mean = part.mean(1)
        se = sem(part, axis=1)
        out["by_rows"][r] = {
            "se_median": float(np.median(se)),
            "se_max": float(se.max()),
            "rank_spearman": float(spearmanr(mean, full).statistic),
            "top5_overlap": len(top_full & set(np.argsort(-mean)[:5].tolist())),
        }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="toy")
    p.add_argument("--model-path", default=None)
    p.add_argument("--reference", default=None)
    p.add_argument("--ablation", default=None)
    p.add_argument("--max-rows", type=int, default=64)
    p.add_argument("--rows", type=int, nargs="+", default=[8, 16, 32])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from circuit_gym.ablation import default_ablation
    from circuit_gym.models import load_model

    model = load_model(args.model, path=args.model_path)
    result = spread_by_rows(model, args.reference, args.ablation or default_ablation(args.model), args.max_rows,
                            args.rows)  # fmt: skip
    result["model"] = args.model
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
