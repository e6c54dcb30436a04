"""Many head masks in one replay, computing only what differs: shared prefixes and live heads.

The runner's plain stacked pass (:meth:`FastBlocks.run` on ``k`` copies of the batch) runs
every block on every copy and computes all heads of every block, then overwrites the
ablated heads' outputs with their replacements. Two kinds of that work are wasted:

- **shared prefixes**: circuits that ablate the same heads in layers ``start .. l-1`` have
  the same residual stream entering layer ``l``. Greedy search's candidates ``C + h`` all
  follow ``C`` below ``h``'s layer, so the replay keeps one copy of the batch per distinct
  prefix (a trie over layers) and splits it where the masks first differ;
- **ablated heads**: a head whose output is replaced in every copy that reads a copy's
  attention (every child of that prefix) need not be computed. Its Q/K/V columns and its
  attention are skipped; only the heads some child keeps are computed, each on the copies
  that keep it.

Both keep the numbers **bit for bit**: every operation is the one the plain pass runs, on
the same rows, and each row's result does not depend on which other rows or heads are in
the same call (LayerNorm and the score are per row; a matrix product's column of an output
is the same whether the other columns are computed; ``scaled_dot_product_attention`` treats
each (row, head) on its own). ``tests/test_speed_equivalence.py`` checks the equality on
the real model against the plain pass; the plain pass stays available
(``CircuitRunner(..., replay="plain")``) as the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from circuit_gym.ablation.fast_blocks import FastBlocks


def replay_masks(fast: FastBlocks, start: int, resid: torch.Tensor, replacement: Sequence[torch.Tensor],
                 ablate: np.ndarray) -> torch.Tensor:  # fmt: skip
    """The residual stream after the last block for each mask, ``[k * batch, seq, d_model]``
    (rows ``i * batch ...`` for mask ``i``), from ``resid`` [batch, seq, d_model] entering
    block ``start``; ``ablate[i, layer, head]`` (bool) replaces that head's output by
    ``replacement[layer]`` [batch, seq, n_heads, d_head] in mask ``i``. Layers below
    ``start`` are not read (the caller starts at the lowest ablated layer)."""
    k = ablate.shape[0]
    batch = resid.shape[0]
    nodes: list[list[int]] = [list(range(k))]  # masks sharing the residual of each copy
    x = resid
    for layer in range(start, ablate.shape[1]):
        children, parent = _split(nodes, ablate[:, layer])
        x = _next_residual(fast, layer, x, np.asarray(parent), ~ablate[[c[0] for c in children], layer],
                           replacement[layer])  # fmt: skip
        nodes = children
    order = np.empty(k, dtype=np.int64)  # the copy that holds mask i at the end
    for copy, members in enumerate(nodes):
        order[members] = copy
    return x.index_select(0, _rows(order, batch, x.device))


def _split(nodes: list[list[int]], layer_ablate: np.ndarray) -> tuple[list[list[int]], list[int]]:
    """Each node's masks grouped by their pattern in this layer: the children and, for each
    child, the index of the node it continues. Children that keep some head of the layer
    come first (:func:`_next_residual` writes the two kinds into two contiguous blocks)."""
    busy: list[tuple[list[int], int]] = []
    idle: list[tuple[list[int], int]] = []
    for index, members in enumerate(nodes):
        groups: dict[bytes, list[int]] = {}
        for m in members:
            groups.setdefault(layer_ablate[m].tobytes(), []).append(m)
        for group in groups.values():
            (idle if layer_ablate[group[0]].all() else busy).append((group, index))
    children = busy + idle
    return [c for c, _ in children], [p for _, p in children]


def _next_residual(fast: FastBlocks, layer: int, x: torch.Tensor, parent: np.ndarray, keep: np.ndarray,
                   replacement: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """Each child's residual after block ``layer``: its parent's residual (``x``, one batch
    copy per node) plus the block's output with the heads the child does not keep replaced.

    Children that keep no head of the block (last) add the output of the replacement alone,
    the same rows for each of them: computed once. Children that keep heads (first) get them
    from attention computed once per parent, only for the heads and parents that need them."""
    batch, seq, d_model = replacement.shape[0], x.shape[1], x.shape[2]
    n_busy = int(keep.any(1).sum())
    out = x.new_empty(len(parent), batch, seq, d_model)
    blocks = ((slice(0, n_busy), None), (slice(n_busy, len(parent)), fast.output(layer, replacement)))
    for part, output in blocks:
        if part.stop > part.start:
            if output is None:
                z = _busy_z(fast, layer, x, parent[part], keep[part], replacement)
                output = fast.output(layer, z).view(-1, batch, seq, d_model)
            parents = x.index_select(0, _rows(parent[part], batch, x.device)).view(-1, batch, seq, d_model)
            torch.add(parents, output, out=out[part])  # x + output, as the plain pass adds them
    return out.view(-1, seq, d_model)


def _busy_z(fast: FastBlocks, layer: int, x: torch.Tensor, parent: np.ndarray, keep: np.ndarray,
            replacement: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """``z`` [children * batch, seq, heads, d_head] of children that keep some heads: the
    replacement, with each kept head's attention output on the child's parent."""
    batch, device = replacement.shape[0], x.device
    z = replacement.repeat(len(parent), 1, 1, 1)
    nodes = np.unique(parent)  # parents that compute something, in order
    where = np.searchsorted(nodes, parent)  # each child's parent among them
    h = fast.normed(layer, x.index_select(0, _rows(nodes, batch, device)))
    h = h.view(len(nodes) * batch, x.shape[1], -1)
    needed = np.zeros((len(nodes), keep.shape[1]), dtype=bool)  # node x head: some child keeps it
    np.logical_or.at(needed, where, keep)
    groups: dict[bytes, list[int]] = {}  # heads computed on the same nodes share one call
    for head in np.flatnonzero(needed.any(0)).tolist():
        groups.setdefault(needed[:, head].tobytes(), []).append(head)
    for heads in groups.values():
        which = np.flatnonzero(needed[:, heads[0]])
        h_rows = h if len(which) == len(nodes) else h.index_select(0, _rows(which, batch, device))
        z_heads = fast.attend(layer, h_rows.reshape(-1, h.shape[-1]), len(which) * batch, tuple(heads))
        slot = np.full(len(nodes), -1)
        slot[which] = np.arange(len(which))
        for position, head in enumerate(heads):
            children = np.flatnonzero(keep[:, head])
            source = z_heads[:, :, position].index_select(0, _rows(slot[where[children]], batch, device))
            z[:, :, head].index_copy_(0, _rows(children, batch, device), source)
    return z


def _rows(copies: np.ndarray, batch: int, device: torch.device | str) -> torch.Tensor:
    """Row indices of the given batch copies: copy ``c`` is rows ``c * batch .. c * batch + batch - 1``."""
    copies_t = torch.as_tensor(np.asarray(copies), dtype=torch.long)
    return (copies_t[:, None] * batch + torch.arange(batch)).reshape(-1).to(device)
