"""Run the main job on real GPT-2 small and compare the found heads with the literature.

Needs GPT-2 small's weights (internet, the Hugging Face cache, or a local directory):

    python scripts/reproduce_gpt2.py --out results/gpt2 [--model-path /path/to/gpt2]

Writes everything ``circuit-gym run`` writes, plus ``published_comparison.json``: for
IOI and induction, the top-10 heads by PPO preference and by mean oracle reward, and how
many are in the published circuit (GPT-2 IOI heads of Wang et al. 2023; induction heads).
``--tiny`` runs minute-sized settings (used by the test on a random GPT-2 checkpoint).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from circuit_gym.ablation import head_name  # noqa: E402
from circuit_gym.baselines.ppo import PPOConfig, PPOPolicy  # noqa: E402
from circuit_gym.baselines.run_all import run  # noqa: E402
from circuit_gym.published import published_sets  # noqa: E402


def compare(out: Path, model_path: str | None, episodes: int, top: int = 10) -> dict:
    policy = PPOPolicy.load(out / "ppo")
    kwargs = {"model_path": model_path} if model_path else {}
    env = gym.make("CircuitDiscovery-GPT2-Multi-v1", split="eval", pool_size=episodes, **kwargs)
    n_heads = env.unwrapped.n_heads
    published = published_sets(n_heads)
    report = {}
    for task, heads in published.items():
        prefs, rewards = [], []
        for i in range(episodes):
            obs, _ = env.reset(options={"task": task, "batch_index": i})
            prefs.append(policy.rank_heads(obs))
            rewards.append(env.unwrapped.episode.table.reward)
        by_policy = np.argsort(-np.mean(prefs, 0))[:top]
        by_oracle = np.argsort(-np.mean(rewards, 0))[:top]
        report[task] = {
            "published": sorted(head_name(h, n_heads) for h in heads),
            "policy_top": [head_name(int(h), n_heads) for h in by_policy],
            "oracle_top": [head_name(int(h), n_heads) for h in by_oracle],
            "policy_top_in_published": int(sum(int(h) in heads for h in by_policy)),
            "oracle_top_in_published": int(sum(int(h) in heads for h in by_oracle)),
            "chance_expected": top * len(heads) / env.unwrapped.n_total,
        }
    (out / "published_comparison.json").write_text(json.dumps(report, indent=1))
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("results/gpt2"))
    parser.add_argument("--model-path", default=None)
    parser.add_argument("--eval-episodes", type=int, default=48)
    parser.add_argument("--tiny", action="store_true", help="minute-sized settings to check the wiring")
    args = parser.parse_args(argv)
    config, circuit_ppo = PPOConfig(), None
    episodes = args.eval_episodes
    if args.tiny:
        config = replace(config, epochs=1, steps_per_epoch=64, steps_per_collect=32, pool_size=2, n_envs=2,
                         batch_size_prompts=2)  # fmt: skip
        episodes = 2
        # Greedy search runs one GPT-2 pass per head per step: two steps here.
        circuit_ppo = dict(epochs=1, budget=2, steps_per_epoch=32, steps_per_collect=16, pool_size=2,
                           selection_episodes=1, n_envs=2, batch_size_prompts=2, minibatch=8, repeat=1)  # fmt: skip
    run(args.out, model="gpt2", model_path=args.model_path, eval_episodes=episodes, ppo=config,
        circuit_build_episodes=1 if args.tiny else 2, circuit_ppo=circuit_ppo)  # fmt: skip
    report = compare(args.out, args.model_path, episodes)
    for task, r in report.items():
        print(f"{task}: PPO top-10 {r['policy_top']} -> {r['policy_top_in_published']} published "
              f"(oracle top-10: {r['oracle_top_in_published']}; chance {r['chance_expected']:.1f})")  # fmt: skip


if __name__ == "__main__":
    main()
