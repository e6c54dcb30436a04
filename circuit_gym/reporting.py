"""Result tables and plots shared by the main job and the leaderboard."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from circuit_gym.plots import _pyplot


def markdown_table(rows: Sequence[dict]) -> str:
    """Rows from ``circuit_gym.evaluation.summarize`` as a Markdown table."""
    lines = [
        "| solver | task | split | k | oracle recovery: ratio of sums (95% bootstrap CI) | top-1 hit (95% CI) | episodes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["split"] != "eval", r["task"], r["k"], r["solver"])):
        lo, hi = r["recovery_ci95"]
        tlo, thi = r["top1_ci95"]
        lines.append(
            f"| {r['solver']} | {r['task']} | {r['split']} | {r['k']} | {r['recovery']:.3f} "
            f"[{lo:.3f}, {hi:.3f}] | {r['top1_rate']:.2f} [{tlo:.2f}, {thi:.2f}] | {r['episodes']} |"
        )
    return "\n".join(lines)


def learning_curve(curve: Sequence[dict], oracle_mean: float | None, path: str | Path,
                   title: str = "PPO (train split)") -> Path:  # fmt: skip
    """Test return against environment steps, with the mean oracle reward as the ceiling."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.plot(
        [c["env_steps"] for c in curve],
        [c["test_return"] for c in curve],
        marker="o",
        label="PPO (test envs)",
    )
    if oracle_mean is not None:
        ax.axhline(oracle_mean, ls="--", c="gray", label="mean oracle reward (train split)")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean episode reward")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
