"""Multi-agent baselines and the pairwise redundancy report.

- random joint policy: every layer agent picks a uniformly random action (a head or none);
- greedy joint policy: every agent ablates its layer's best single head if that head's
  single-head reward is positive (reads the oracle table: an upper-bound reference);
- redundancy report: for every pair of heads, the joint reward of ablating both against
  the sum of their single-head rewards, averaged over episodes with a 95% interval.
  A pair whose interval lies above zero does more together than single ablations show.

    python -m baselines.multiagent --task ioi --episodes 16 --out results/redundancy_ioi.json
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np

from circuit_gym.ablation import head_name
from circuit_gym.evaluation import mean_ci95
from circuit_gym.multiagent import parallel_env


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
        joint.append(
            info["joint_reward"] / info["oracle_reward"] if info["oracle_reward"] > 0 else float("nan")
        )
        redundancy.append(info["redundancy"])
    return {"joint_over_oracle": mean_ci95(joint), "redundancy": mean_ci95(redundancy)}


def pair_redundancy(par, episodes: int, top: int = 5) -> dict:
    n = par.n_layers * par.n_heads
    pairs = list(itertools.combinations(range(n), 2))
    values = np.zeros((episodes, len(pairs)))
    for e in range(episodes):
        par.reset(options={"batch_index": e})
        ep = par._episode
        single = ep.table.reward
        for j, (a, b) in enumerate(pairs):
            td, gd = ep.damages(frozenset((a, b)), use_cache=True)
            values[e, j] = td - par.lam * gd - single[a] - single[b]
    stats = [(pairs[j], *mean_ci95(values[:, j])) for j in range(len(pairs))]
    stats.sort(key=lambda s: -s[1])
    fmt = lambda s: {"pair": [head_name(s[0][0], par.n_heads), head_name(s[0][1], par.n_heads)],  # noqa: E731
                     "redundancy_mean": s[1], "ci95": s[2]}  # fmt: skip
    significant = [fmt(s) for s in stats if s[2][0] > 0]
    return {"pairs": len(pairs), "episodes": episodes, "top": [fmt(s) for s in stats[:top]],
            "most_negative": [fmt(s) for s in stats[-top:]], "significantly_positive": significant}  # fmt: skip


def report(
    task: str, episodes: int, model: str = "toy", model_path: str | None = None, seed: int = 0
) -> dict:
    par = parallel_env(model=model, model_path=model_path, task=task, split="eval", pool_size=episodes)
    rng = np.random.default_rng(seed)
    return {
        "task": task, "model": par.model.circuit_gym_info.name,
        "random_joint": evaluate_joint(par, lambda p: random_joint(p, rng), episodes),
        "greedy_joint": evaluate_joint(par, greedy_joint, episodes),
        "pair_redundancy": pair_redundancy(par, episodes),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", default="ioi")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = report(args.task, args.episodes)
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    pr = result["pair_redundancy"]
    print(
        f"{args.task}: {len(pr['significantly_positive'])} of {pr['pairs']} head pairs show significant redundancy"
    )
    for row in pr["top"]:
        print(f"  {row['pair']}: joint - sum of singles = {row['redundancy_mean']:.3f} {row['ci95']}")


if __name__ == "__main__":
    main()
