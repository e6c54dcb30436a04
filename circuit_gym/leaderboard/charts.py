"""The board's figures: best-of-5 recovery per entry, per held-out task, and one radar per entry."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from circuit_gym import benchmark as B
from circuit_gym.plots import _pyplot


def bar_chart(rows: list[dict], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * len(rows)))
    names = [r["name"] for r in rows][::-1]
    vals = [r["k5"] for r in rows][::-1]
    errs = np.array([[r["k5"] - r["k5_ci"][0], r["k5_ci"][1] - r["k5"]] for r in rows][::-1]).T
    errs = np.clip(np.nan_to_num(errs), 0, None)  # a bootstrap interval need not contain the estimate
    ax.barh(
        names,
        np.nan_to_num(vals),
        xerr=errs,
        color=["#c44" if r["white_box"] else "#48a" for r in rows][::-1],
    )
    ax.axvline(0.96, ls="--", c="gray", lw=1)
    ax.set_xlabel("held-out best-of-5 oracle recovery")
    ax.set_title(B.BENCHMARK_VERSION, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def per_task_chart(rows: list[dict], path: Path) -> None:
    """Best-of-5 recovery per held-out task and entry; the memoriser and random as lines."""
    plt = _pyplot()
    tasks = list(B.HELD_OUT_TASKS)
    ref = {r["reference"]: r for r in rows if r["reference"] in ("fixed", "random")}
    entries = [r for r in rows if r["reference"] not in ("fixed", "random")]
    fig, ax = plt.subplots(figsize=(1.6 + 2.2 * len(tasks), 3.6))
    width = 0.8 / max(1, len(entries))
    for j, r in enumerate(entries):
        x = np.arange(len(tasks)) - 0.4 + width * (j + 0.5)
        ax.bar(x, [np.nan_to_num(r["per_task_k5"][t]) for t in tasks], width, label=r["name"],
               color="#c44" if r["white_box"] else None)  # fmt: skip
    for name, style in (("fixed", "--"), ("random", ":")):
        if name in ref:
            for i, t in enumerate(tasks):
                ax.hlines(ref[name]["per_task_k5"][t], i - 0.45, i + 0.45, colors="k", linestyles=style,
                          label=f"{name} ({'memoriser' if name == 'fixed' else 'chance'})" if i == 0 else None)  # fmt: skip
    ax.set_xticks(range(len(tasks)))
    ax.set_xticklabels(tasks)
    ax.set_ylabel("held-out best-of-5 recovery")
    ax.set_title(B.BENCHMARK_VERSION, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def radar(row: dict, path: Path) -> None:
    plt = _pyplot()
    axes = [
        "best-of-5\nrecovery",
        "best-of-1\nrecovery",
        "top-1 hit",
        "reproducibility\n(1 - spread)",
        "top-5\nconsistency",
    ]
    vals = [row["k5"], row["k1"], row["top1"], 1 - min(1.0, row["spread"]), row["consistency"]]
    vals = [float(np.clip(np.nan_to_num(v), 0, 1)) for v in vals]
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False).tolist()
    fig = plt.figure(figsize=(3.6, 3.6))
    ax = fig.add_subplot(polar=True)
    ax.plot(angles + angles[:1], vals + vals[:1], c="#48a")
    ax.fill(angles + angles[:1], vals + vals[:1], alpha=0.25, c="#48a")
    ax.set_xticks(angles)
    ax.set_xticklabels(axes, fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_title(row["name"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
