"""Figures people would rather look at than read: layer x head heatmaps."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from circuit_gym.heads import parse_head_name


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def _layer_head_axes(ax, n_layers: int, n_heads: int) -> None:
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_xticks(range(n_heads))
    ax.set_yticks(range(n_layers))


def _save(fig, path: str | Path) -> Path:
    plt = _pyplot()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def head_heatmap(values: np.ndarray, n_layers: int, n_heads: int, title: str, path: str | Path,
                 *, label: str = "reward", mark: int | None = None) -> Path:  # fmt: skip
    """Save a layer x head heatmap of per-head ``values``; ``mark`` outlines one head id."""
    plt = _pyplot()
    grid = np.asarray(values, dtype=float).reshape(n_layers, n_heads)
    fig, ax = plt.subplots(figsize=(1.0 + 0.55 * n_heads, 1.0 + 0.45 * n_layers))
    bound = float(np.nanmax(np.abs(grid))) or 1.0
    im = ax.imshow(grid, cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto")
    _layer_head_axes(ax, n_layers, n_heads)
    if mark is not None:
        layer, head = divmod(int(mark), n_heads)
        ax.add_patch(plt.Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, lw=2.5, ec="black"))
    if n_layers * n_heads <= 64:
        for (i, j), v in np.ndenumerate(grid):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label=label)
    ax.set_title(title, fontsize=9)
    return _save(fig, path)


def head_heatmap_pair(left: np.ndarray, right: np.ndarray, n_layers: int, n_heads: int,
                      titles: tuple[str, str], suptitle: str, path: str | Path) -> Path:  # fmt: skip
    """Two layer x head heatmaps side by side (e.g. oracle reward beside a policy's preference)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(2.0 + 1.1 * n_heads, 1.2 + 0.45 * n_layers))
    for ax, values, title, cmap in zip(axes, (left, right), titles, ("RdBu_r", "viridis"), strict=True):
        grid = np.asarray(values, dtype=float).reshape(n_layers, n_heads)
        if cmap == "RdBu_r":
            bound = float(np.nanmax(np.abs(grid))) or 1.0
            im = ax.imshow(grid, cmap=cmap, vmin=-bound, vmax=bound, aspect="auto")
        else:
            im = ax.imshow(grid, cmap=cmap, vmin=0, aspect="auto")
        _layer_head_axes(ax, n_layers, n_heads)
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax)
    fig.suptitle(suptitle, fontsize=10)
    return _save(fig, path)


def oracle_histograms(counts: dict[str, dict[str, int]], n_layers: int, n_heads: int, path: str | Path,
                      *, included: set[str] | None = None) -> Path:  # fmt: skip
    """One layer x head panel per task: how often each head is the per-episode oracle."""
    plt = _pyplot()
    names = sorted(counts)
    cols = min(4, len(names))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.9 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, name in zip(axes.flat, names, strict=False):
        grid = np.zeros((n_layers, n_heads))
        for head, c in counts[name].items():
            layer, h = parse_head_name(head)
            grid[layer, h] = c
        ax.axis("on")
        ax.imshow(grid, cmap="Greys", vmin=0, aspect="auto")
        top = max(counts[name], key=counts[name].get)
        flag = "" if included is None or name in included else "  (excluded)"
        ax.set_title(f"{name}: mode {top} ({counts[name][top]}/{int(grid.sum())}){flag}", fontsize=8)
        ax.set_xlabel("head", fontsize=7)
        ax.set_ylabel("layer", fontsize=7)
        ax.tick_params(labelsize=6)
    fig.suptitle("per-episode oracle head, by task", fontsize=10)
    return _save(fig, path)
