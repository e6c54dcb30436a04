"""The leaderboard's benchmark definition: what every entry is scored on.

Changing anything here changes the numbers, so it changes ``BENCHMARK_VERSION``; result
files scored under another version are refused by the board.
"""

from __future__ import annotations

# v2: recovery is a ratio of sums over episodes with a bootstrap interval (v1: mean of ratios).
BENCHMARK_VERSION = "circuit-gym-heldout-v2"
HELD_OUT_TASKS = ("docstring",)
SPLIT = "test"
# Version of the CircuitDiscovery-*-Multi environment IDs the episodes are built with.
ENV_VERSION = "v1"
# Published evaluation seeds: batch indices of the test-split pool (batch i uses seed i).
EVAL_SEEDS = tuple(range(48))
# Other seeds, used only to measure how reproducible a policy's recovery is.
REPRO_SEEDS = tuple(range(48, 96))
KS = (1, 5)
ABLATION = "resample"  # the embedded model's default (circuit_gym.ablation.default_ablation)
LAM = 1.0
PROMPTS_PER_EPISODE = 8
# Reference entries, recognised by provenance (policy spec, checkpoint and the hash of those
# files in this checkout; circuit_gym.leaderboard.scorer.reference_name), never by name alone.
# Checkpoints are relative to the repository root: score the references from there.
REFERENCE_POLICIES = {
    "random": ("circuit_gym.baselines.random_policy:make_policy", None),
    "fixed": ("circuit_gym.baselines.fixed_policy:make_policy", "docs/results/fixed_policy.json"),
    "greedy": ("builtin:greedy", None),
    "ppo": ("circuit_gym.baselines.ppo:load_policy", "docs/results/ppo"),
}
REFERENCE_ENTRIES = tuple(REFERENCE_POLICIES)

# Limits for a submitted policy, which runs in a child process.
CALL_TIMEOUT_S = 20.0  # per rank_heads call; importing and building the policy gets 3x this
MEMORY_LIMIT_MB = 4096  # RLIMIT_DATA of the child: private writable (virtual) memory, not RSS


def definition() -> dict:
    return {
        "benchmark_version": BENCHMARK_VERSION, "tasks": list(HELD_OUT_TASKS), "split": SPLIT,
        "seeds": list(EVAL_SEEDS), "repro_seeds": list(REPRO_SEEDS), "ks": list(KS), "ablation": ABLATION,
        "lam": LAM, "prompts_per_episode": PROMPTS_PER_EPISODE, "env_version": ENV_VERSION,
    }  # fmt: skip
