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


def learning_curve(curve: Sequence[dict], path: str | Path, title: str = "PPO (selection batches)") -> Path:
    """Checkpoint-selection recovery (best-of-1, best-of-5) against environment steps; the oracle is 1.

    The points are what the checkpoint was chosen on (``circuit_gym.baselines.ppo``'s held-back
    train-split batches), so the curve shows the quantity the kept checkpoint maximised.
    """
    steps = [c["env_steps"] for c in curve]
    lines = {f"PPO {label}": (steps, [c[key] for c in curve])
             for key, label in (("selection_k1", "best-of-1"), ("selection_k5", "best-of-5"))}  # fmt: skip
    return _curves(lines, path, title, "oracle recovery (ratio of sums)", "oracle")


def selection_curves(curves: dict[str, Sequence[dict]], path: str | Path, title: str) -> Path:
    """The circuit-building PPO runs' checkpoint-selection score (CPR over exact greedy search's
    on held-back training batches, ``circuit_gym.baselines.circuit_ppo.selection_cpr``) against
    environment steps, one line per run; greedy search is 1."""
    lines = {name: ([c["env_steps"] for c in curve], [c["selection_score"] for c in curve])
             for name, curve in curves.items()}  # fmt: skip
    return _curves(lines, path, title, "CPR / greedy search's CPR", "exact greedy search")


def _curves(lines: dict[str, tuple[list, list]], path: str | Path, title: str, ylabel: str,
            reference: str) -> Path:  # fmt: skip
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for label, (steps, values) in lines.items():
        ax.plot(steps, values, marker="o", ms=3, label=label)
    ax.axhline(1.0, ls="--", c="gray", label=reference)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (laid out, 120 dpi) and free it."""
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)
    return path


def design_curves(panels: dict[str, tuple[str, dict[str, Sequence[Sequence[dict]]], str]], path: str | Path,
                  title: str) -> Path:  # fmt: skip
    """One panel per target: ``{panel title: (curve key, {design: [one curve.json per seed]}, what 1
    is)}``.
    Each seed's checkpoint-selection value against environment steps (thin), the mean over a
    design's seeds at each step (thick); the oracle (or greedy search, for CPR ratios) is 1."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (panel, (key, designs, one)) in zip(axes[0], panels.items(), strict=True):
        for i, (design, curves) in enumerate(designs.items()):
            colour = f"C{i}"
            steps = sorted({c["env_steps"] for curve in curves for c in curve})
            for curve in curves:
                ax.plot([c["env_steps"] for c in curve], [c[key] for c in curve], c=colour, lw=0.6, alpha=0.4)
            means = [_mean_at(curves, key, s) for s in steps]
            ax.plot(steps, means, c=colour, lw=2, marker="o", ms=3, label=f"{design} (mean of {len(curves)})")
        ax.axhline(1.0, ls="--", c="gray", label=f"{one} = 1")
        ax.set_xlabel("environment steps")
        ax.set_title(panel, fontsize=9)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("selection batches (training models and tasks)")
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def _mean_at(curves: Sequence[Sequence[dict]], key: str, step: int) -> float:
    """The mean over the curves that have a point at ``step`` (a resumed run may lack one)."""
    values = [c[key] for curve in curves for c in curve if c["env_steps"] == step]
    return float(sum(values) / len(values))
