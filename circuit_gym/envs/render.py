"""Drawing for ``render_mode="rgb_array"``: the layer x head grid as an RGB image.

Drawn with numpy (no figure, no text), about a millisecond per frame. Geometry, which tests
and video tools can rely on: layer ``L`` is row ``L`` from the top, head ``H`` column ``H``
from the left; the cell of head (L, H) spans rows ``MARGIN + L * CELL`` to ``+ CELL`` and
columns ``MARGIN + H * CELL`` to ``+ CELL``, the last ``GAP`` pixels of each being background.

- fill: the head's per-head reward of the current step on a diverging scale (red = ablating it
  helps, blue = it hurts, white = 0; the scale is symmetric, set by the largest |reward| of
  the frame), grey where no reward is known (oracle info off, or the head was already ablated
  when the step's table was computed);
- a black cross: the head is ablated;
- a black outline: the head chosen by the last step;
- the bar in the top margin: the fraction of the episode's steps taken.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import numpy as np

CELL = 32  # pixels per head cell (a multiple of 16 keeps video encoders happy)
MARGIN = 16
GAP = 2
BACKGROUND = np.array([255, 255, 255], dtype=np.uint8)
UNKNOWN = np.array([190, 190, 190], dtype=np.uint8)
MARK = np.array([0, 0, 0], dtype=np.uint8)
PROGRESS = np.array([90, 90, 90], dtype=np.uint8)
CMAP = "RdBu_r"


def frame_shape(n_layers: int, n_heads: int) -> tuple[int, int, int]:
    return 2 * MARGIN + n_layers * CELL, 2 * MARGIN + n_heads * CELL, 3


def cell_centre(layer: int, head: int) -> tuple[int, int]:
    """(row, column) of the centre pixel of a head's cell."""
    return MARGIN + layer * CELL + (CELL - GAP) // 2, MARGIN + head * CELL + (CELL - GAP) // 2


@cache
def _lut() -> np.ndarray:
    """256 RGB colours of the diverging colormap (matplotlib's colour data, no figure)."""
    import matplotlib

    return (matplotlib.colormaps[CMAP](np.linspace(0.0, 1.0, 256))[:, :3] * 255).round().astype(np.uint8)


@cache
def _cross() -> np.ndarray:
    """Boolean CELL x CELL mask of a 3-pixel-wide X inside the cell's drawable area."""
    size = CELL - GAP
    i, j = np.mgrid[0:CELL, 0:CELL]
    inset = (i >= 4) & (i < size - 4) & (j >= 4) & (j < size - 4)
    return inset & ((np.abs(i - j) <= 1) | (np.abs(i + j - (size - 1)) <= 1))


@cache
def _outline() -> np.ndarray:
    size = CELL - GAP
    i, j = np.mgrid[0:CELL, 0:CELL]
    inside = (i < size) & (j < size)
    return inside & ((i < 3) | (i >= size - 3) | (j < 3) | (j >= size - 3))


def cell_colours(rewards: np.ndarray | None, n_total: int) -> np.ndarray:
    """[n_total, 3] uint8: rewards on the diverging scale, grey where NaN or unknown."""
    colours = np.tile(UNKNOWN, (n_total, 1))
    if rewards is None:
        return colours
    rewards = np.asarray(rewards, dtype=np.float64)
    known = np.isfinite(rewards)
    if known.any():
        scale = float(np.abs(rewards[known]).max()) or 1.0
        index = np.rint((rewards[known] / scale + 1.0) * 127.5).astype(np.int64).clip(0, 255)
        colours[known] = _lut()[index]
    return colours


def render_grid(n_layers: int, n_heads: int, rewards: np.ndarray | None, ablated: Iterable[int],
                last_action: int | None = None, progress: float = 0.0) -> np.ndarray:  # fmt: skip
    """The frame, ``uint8[H, W, 3]`` (see the module docstring for what it shows)."""
    n_total = n_layers * n_heads
    colours = cell_colours(rewards, n_total).reshape(n_layers, n_heads, 3)
    grid = colours.repeat(CELL, axis=0).repeat(CELL, axis=1)  # [n_layers*CELL, n_heads*CELL, 3]
    cells = grid.reshape(n_layers, CELL, n_heads, CELL, 3)  # a view: cells[L, :, H, :] is one cell
    cells[:, CELL - GAP :, :, :] = BACKGROUND
    cells[:, :, :, CELL - GAP :] = BACKGROUND
    for head in ablated:
        cells[head // n_heads, :, head % n_heads][_cross()] = MARK
    if last_action is not None:
        cells[last_action // n_heads, :, last_action % n_heads][_outline()] = MARK
    frame = np.empty(frame_shape(n_layers, n_heads), dtype=np.uint8)
    frame[:] = BACKGROUND
    frame[MARGIN : MARGIN + n_layers * CELL, MARGIN : MARGIN + n_heads * CELL] = grid
    width = int(round(min(max(progress, 0.0), 1.0) * n_heads * CELL))
    frame[MARGIN // 2 - 2 : MARGIN // 2 + 2, MARGIN : MARGIN + width] = PROGRESS
    return frame
