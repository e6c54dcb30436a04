"""The leaderboard's benchmark definition: what every entry is scored on.

Changing anything here changes the numbers, so it changes ``BENCHMARK_VERSION``; result
files scored under another version are refused by the board.
"""

from __future__ import annotations

BENCHMARK_VERSION = "circuit-gym-heldout-v1"
HELD_OUT_TASKS = ("docstring",)
SPLIT = "test"
# Published evaluation seeds: batch indices of the test-split pool (batch i uses seed i).
EVAL_SEEDS = tuple(range(48))
# Other seeds, used only to measure how reproducible a policy's recovery is.
REPRO_SEEDS = tuple(range(48, 96))
KS = (1, 5)
ABLATION = "resample"  # the embedded model's default (circuit_gym.ablation.default_ablation)
LAM = 1.0
PROMPTS_PER_EPISODE = 8
REFERENCE_ENTRIES = ("random", "fixed", "greedy", "ppo")

# Limits for a submitted policy, which runs in a child process.
CALL_TIMEOUT_S = 20.0  # per rank_heads call (the first call includes the import)
MEMORY_LIMIT_MB = 4096


def definition() -> dict:
    return {
        "benchmark_version": BENCHMARK_VERSION, "tasks": list(HELD_OUT_TASKS), "split": SPLIT,
        "seeds": list(EVAL_SEEDS), "repro_seeds": list(REPRO_SEEDS), "ks": list(KS), "ablation": ABLATION,
        "lam": LAM, "prompts_per_episode": PROMPTS_PER_EPISODE,
    }  # fmt: skip
