"""What one observation column is worth: rank heads by a single feature, fairly and unfairly.

    python scripts/feature_ceiling.py --out docs/results/feature_ceiling   # toy, benchmark tasks

Every (column, sign) of the observation is a policy with no learning: it ranks heads by
``sign * obs[:, column]``. Two choices of that policy are reported (issue 35, item 6):

- **fair**: the (column, sign) with the best pooled best-of-1 recovery on the *training* tasks'
  eval split, then scored on the held-out tasks (what a submitter may legitimately do);
- **ceiling**: the (column, sign) with the best pooled best-of-1 recovery on the *held-out* tasks
  themselves (what a reader who picks a feature after reading the held-out task names can
  reach). It is chosen on the test episodes on purpose, as a ceiling for hand-picked priors,
  and is never used for anything else.

Recovery is the benchmark's (``circuit_gym.evaluation.recovery_summary``); best-of-k takes the
best single-head reward among the top-k heads of the ranking, read from the episode's
single-head table (what ``best_of_k`` computes on an episode where nothing is ablated yet).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import circuit_gym  # noqa: E402, F401  (registers the IDs)
from circuit_gym import benchmark as B  # noqa: E402
from circuit_gym.envs.features import FEATURE_SETS  # noqa: E402
from circuit_gym.evaluation import recovery_summary  # noqa: E402
from circuit_gym.progress import progress_iter  # noqa: E402

STATE_COLUMNS = ("ablated", "step_fraction")  # the env's episode state, the same for every head


def column_tables(env, tasks, episodes, columns: list[int]) -> dict:
    """Per (task, episode): the observation's ``columns`` and the single-head reward table."""
    out = {}
    for task, index in progress_iter([(t, i) for t in tasks for i in episodes], "episodes", unit="episode"):
        obs, _ = env.reset(options={"task": task, "batch_index": int(index)})
        out[(task, int(index))] = (np.asarray(obs)[:, columns], env.unwrapped.episode.table.reward.copy())
    return out


def score_rules(tables: dict, names: list[str], ks=(1, 5)) -> dict:
    """Pooled recovery of every (column, sign) rule at each k, over the given episodes; ``names[j]``
    names column ``j`` of the tables."""
    rows = {}
    for j, name in enumerate(names):
        for sign in (1, -1):
            rule = f"{'+' if sign > 0 else '-'}{name}"
            rows[rule] = {}
            for k in ks:
                rewards, oracles, hits = [], [], []
                for obs, reward in tables.values():
                    top = np.argsort(-sign * obs[:, j], kind="stable")[:k]
                    best = top[int(np.argmax(reward[top]))]
                    rewards.append(float(reward[best]))
                    oracles.append(float(reward.max()))
                    hits.append(bool(best == int(np.argmax(reward))))
                s = recovery_summary(rewards, oracles, hits)
                rows[rule][f"best_of_{k}"] = {"recovery": s["recovery"], "ci95": s["recovery_ci95"]}
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=B.MODEL)
    p.add_argument("--train-episodes", type=int, default=16, help="eval-split batches per training task")
    p.add_argument("--features", default="attention", choices=sorted(FEATURE_SETS))
    p.add_argument("--out", type=Path, default=None, help="folder for feature_ceiling_<model>.json / .md")
    args = p.parse_args(argv)
    columns = [c for c, name in enumerate(FEATURE_SETS[args.features]) if name not in STATE_COLUMNS]
    names = [FEATURE_SETS[args.features][c] for c in columns]
    kwargs = dict(model=args.model, pool_size=max(max(B.EVAL_SEEDS) + 1, args.train_episodes),
                  batch_size=B.PROMPTS_PER_EPISODE, ablation=B.ABLATION, lam=B.LAM, features=args.features)  # fmt: skip
    train_env = gym.make(B.multi_env_id(args.model), split="eval", **kwargs)
    test_env = gym.make(B.multi_env_id(args.model), split=B.SPLIT, **kwargs)
    train = score_rules(column_tables(train_env, B.TRAIN_TASKS, range(args.train_episodes), columns), names)
    held = score_rules(column_tables(test_env, B.HELD_OUT_TASKS, B.EVAL_SEEDS, columns), names)
    fair = max(train, key=lambda r: train[r]["best_of_1"]["recovery"])
    ceiling = max(held, key=lambda r: held[r]["best_of_1"]["recovery"])
    report = {
        "model": args.model, "benchmark_version": B.BENCHMARK_VERSION, "features": args.features,
        "train_tasks": list(B.TRAIN_TASKS), "held_out_tasks": list(B.HELD_OUT_TASKS),
        "train_episodes": args.train_episodes, "held_out_episodes": len(B.EVAL_SEEDS),
        "fair_rule": fair, "fair_train": train[fair], "fair_held_out": held[fair],
        "ceiling_rule": ceiling, "ceiling_held_out": held[ceiling], "ceiling_train": train[ceiling],
        "rules_train": train, "rules_held_out": held,
    }  # fmt: skip
    for label, rule in (
        ("fair (chosen on training tasks)", fair),
        ("ceiling (chosen on held-out tasks)", ceiling),
    ):
        h = held[rule]
        print(f"{label}: {rule}: held-out best-of-1 {h['best_of_1']['recovery']:.3f}, "
              f"best-of-5 {h['best_of_5']['recovery']:.3f}")  # fmt: skip
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"feature_ceiling_{args.model}.json").write_text(json.dumps(report, indent=1) + "\n")
        lines = [f"# Single-column rules on `{args.model}` ({B.BENCHMARK_VERSION})", "",
                 "Generated by `scripts/feature_ceiling.py`. Pooled recovery [95% CI].", "",
                 "| rule | chosen on | held-out best-of-1 | held-out best-of-5 | training (eval) best-of-1 |",
                 "|---|---|---|---|---|"]  # fmt: skip
        for label, rule in (("training tasks (fair)", fair), ("held-out tasks (ceiling)", ceiling)):
            h, t = held[rule], train[rule]

            def cell(x: dict) -> str:
                lo, hi = x["ci95"]
                return f"{x['recovery']:.3f} [{lo:.2f}, {hi:.2f}]"

            lines.append(f"| `{rule}` | {label} | {cell(h['best_of_1'])} | {cell(h['best_of_5'])} | "
                         f"{cell(t['best_of_1'])} |")  # fmt: skip
        (args.out / f"feature_ceiling_{args.model}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
