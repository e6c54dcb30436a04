"""Multi-agent baselines and the pairwise redundancy report.

- random joint policy: every layer agent picks a uniformly random action (a head or none);
- greedy joint policy: every agent ablates its layer's best single head if that head's
  single-head reward is positive (reads the oracle table: an upper-bound reference);
- redundancy report: for every pair of heads, the joint reward of ablating both against
  the sum of their single-head rewards, averaged over episodes with a 95% interval and a
  two-sided one-sample t-test of mean 0. With 120 pairs (16 heads) or 10,296 (GPT-2's 144)
  some 5% of null pairs would pass an uncorrected 95% test, so the p-values are adjusted
  across all pairs (Benjamini-Hochberg by default) and a pair counts as significant only
  when its *adjusted* p-value is at most alpha; raw and adjusted p-values are reported.
  Above 16 heads every pair costs too much (10,296 pairs at 144 heads, each a joint ablation
  per episode), so the pairs are those among the ``--heads`` candidate heads with the highest
  mean single-head reward on the *train* split; the test then runs on the eval split, so the
  heads are not chosen on the data that tests them. The correction covers the tested pairs.

    python -m circuit_gym.baselines.multiagent --task ioi --episodes 16 --out results/redundancy_ioi.json
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np

from circuit_gym.ablation import head_name
from circuit_gym.ablation.contrastive import contrastive_reward
from circuit_gym.evaluation import oracle_recovery
from circuit_gym.multiagent import parallel_env
from circuit_gym.stats import ADJUSTMENTS, mean_ci95, t_tests_against_zero


def random_joint(par, rng: np.random.Generator) -> dict[str, int]:
    return {a: int(rng.integers(par.action_space(a).n)) for a in par.agents}


def greedy_joint(par) -> dict[str, int]:
    reward = par._episode.table.reward.reshape(par.n_layers, par.n_heads)
    return {a: (int(np.argmax(reward[i])) if reward[i].max() > 0 else par.n_heads)
            for i, a in enumerate(par.possible_agents)}  # fmt: skip


def evaluate_joint(par, policy, episodes: int) -> dict:
    joint, redundancy = [], []
    for i in range(episodes):
        par.reset(options={"batch_index": i})
        _, _, _, _, infos = par.step(policy(par))
        info = next(iter(infos.values()))
        joint.append(oracle_recovery(info["joint_reward"], info["oracle_reward"]))
        redundancy.append(info["redundancy"])
    return {"joint_over_oracle": mean_ci95(joint), "redundancy": mean_ci95(redundancy)}


def candidate_heads(model: str, model_path: str | None, task: str, heads: int, episodes: int) -> list[int]:
    """The ``heads`` heads with the highest mean single-head reward on ``task``'s train split."""
    par = parallel_env(model=model, model_path=model_path, task=task, split="train", pool_size=episodes)
    mean = np.zeros(par.n_layers * par.n_heads)
    for e in range(episodes):
        par.reset(options={"batch_index": e})
        mean += par._episode.table.reward / episodes
    return sorted(int(h) for h in np.argsort(-mean, kind="stable")[:heads])


def pair_redundancy_values(
    par, episodes: int, heads: list[int] | None = None
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Head pairs (all, or those among ``heads``) and their redundancy per episode,
    ``[episodes, pairs]``: the contrastive reward of ablating both heads together minus the
    sum of their single-head rewards."""
    n = par.n_layers * par.n_heads
    pairs = list(itertools.combinations(range(n) if heads is None else heads, 2))
    a, b = np.array(pairs, dtype=np.int64).reshape(-1, 2).T
    task = np.zeros((episodes, len(pairs)))
    general = np.zeros((episodes, len(pairs)))
    single = np.zeros((episodes, n))
    for e in range(episodes):
        par.reset(options={"batch_index": e})
        ep = par._episode
        single[e] = ep.table.reward
        for j, pair in enumerate(pairs):  # the engine runs one joint ablation per pair
            task[e, j], general[e, j] = ep.damages(frozenset(pair), use_cache=True)
    return pairs, contrastive_reward(task, general, par.lam) - single[:, a] - single[:, b]


def pair_redundancy(par, episodes: int, top: int = 5, alpha: float = 0.05, method: str = "bh",
                    heads: list[int] | None = None) -> dict:  # fmt: skip
    """The redundancy of every head pair (among ``heads``) with raw and adjusted p-values."""
    pairs, values = pair_redundancy_values(par, episodes, heads)
    return redundancy_summary(pairs, values, par.n_heads, top=top, alpha=alpha, method=method)


def redundancy_summary(pairs: list[tuple[int, int]], values: np.ndarray, n_heads: int, top: int = 5,
                       alpha: float = 0.05, method: str = "bh") -> dict:  # fmt: skip
    """Test every column of ``values`` ([episodes, pairs]) against 0, all pairs at once."""
    t = t_tests_against_zero(values, alpha=alpha, method=method)
    rows = [
        {"pair": [head_name(x, n_heads), head_name(y, n_heads)], "redundancy_mean": float(t.mean[j]),
         "ci95": [float(t.ci_low[j]), float(t.ci_high[j])], "p_value": float(t.p_value[j]),
         "p_adjusted": float(t.p_adjusted[j])}
        for j, (x, y) in enumerate(pairs)
    ]  # fmt: skip
    order = np.argsort(-t.mean, kind="stable")
    positive, negative = t.significant & (t.mean > 0), t.significant & (t.mean < 0)
    return {
        "pairs": len(pairs), "episodes": int(t.n),
        "test": "two-sided one-sample t-test of mean redundancy == 0, per pair",
        "correction": {"method": method, "description": ADJUSTMENTS[method], "alpha": alpha,
                       "significant_by": "p_adjusted <= alpha", "ci95": "per pair, not simultaneous"},
        "significant_raw": int(t.significant_raw.sum()), "significant_adjusted": int(t.significant.sum()),
        "top": [rows[j] for j in order[:top]], "most_negative": [rows[j] for j in order[::-1][:top]],  # most negative first
        "significantly_positive": [rows[j] for j in order if positive[j]],
        "significantly_negative": [rows[j] for j in order[::-1] if negative[j]],
        "per_pair": rows,
    }  # fmt: skip


ALL_PAIRS_UP_TO = 16  # heads; above this, pairs among candidate heads (see the module docstring)


def report(task: str, episodes: int, model: str = "toy", model_path: str | None = None, seed: int = 0,
           alpha: float = 0.05, method: str = "bh", heads: int = 12) -> dict:  # fmt: skip
    par = parallel_env(model=model, model_path=model_path, task=task, split="eval", pool_size=episodes)
    rng = np.random.default_rng(seed)
    n = par.n_layers * par.n_heads
    chosen = None if n <= ALL_PAIRS_UP_TO else candidate_heads(model, model_path, task, heads, episodes)
    return {
        "task": task, "model": par.model.circuit_gym_info.name,
        "candidate_heads": "all" if chosen is None else [head_name(h, par.n_heads) for h in chosen],
        "random_joint": evaluate_joint(par, lambda p: random_joint(p, rng), episodes),
        "greedy_joint": evaluate_joint(par, greedy_joint, episodes),
        "pair_redundancy": pair_redundancy(par, episodes, alpha=alpha, method=method, heads=chosen),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", default="ioi")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--model", default="toy")
    parser.add_argument("--model-path", default=None)
    parser.add_argument(
        "--heads", type=int, default=12, help=f"candidate heads above {ALL_PAIRS_UP_TO} heads"
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--alpha", type=float, default=0.05, help="level for the adjusted p-values")
    parser.add_argument("--method", choices=sorted(ADJUSTMENTS), default="bh",
                        help="multiple-comparison adjustment: bh (Benjamini-Hochberg) or by (Benjamini-Yekutieli)")  # fmt: skip
    args = parser.parse_args(argv)
    result = report(args.task, args.episodes, args.model, args.model_path, alpha=args.alpha, method=args.method,
                    heads=args.heads)  # fmt: skip
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    pr = result["pair_redundancy"]
    c = pr["correction"]
    print(
        f"{args.task}: {len(pr['significantly_positive'])} of {pr['pairs']} head pairs show significant "
        f"positive redundancy ({c['method']}-adjusted p <= {c['alpha']}; {pr['significant_raw']} pairs "
        f"in either direction before adjustment, {pr['significant_adjusted']} after)"
    )
    for row in pr["top"]:
        print(
            f"  {row['pair']}: joint - sum of singles = {row['redundancy_mean']:.3f} "
            f"[{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}], "
            f"p {row['p_value']:.2g}, adjusted {row['p_adjusted']:.2g}"
        )


if __name__ == "__main__":
    main()
