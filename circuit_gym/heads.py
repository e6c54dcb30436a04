"""Names of attention heads and of the hook points the package reads and patches, built here only.

A head is a flat id ``layer * n_heads + head``: the action of every environment. The
literature writes it ``"L.H"`` (:func:`head_name`, :func:`parse_head_name`). Hook names are
TransformerLens's, as its ``get_act_name`` builds them (``get_act_name("z", 3) ==
"blocks.3.attn.hook_z"``; ``tests/test_heads.py`` compares the two), written out here so
that this bottom-layer module imports nothing.
"""

from __future__ import annotations


def head_name(head: int, n_heads: int) -> str:
    """Flat head id -> ``"L.H"`` as the literature writes it."""
    layer, index = divmod(int(head), int(n_heads))
    return f"{layer}.{index}"


def parse_head_name(name: str) -> tuple[int, int]:
    """``"L.H"`` -> ``(layer, head)``; ValueError when ``name`` is not two integers joined by a dot."""
    layer, sep, head = name.strip().partition(".")
    if not (sep and layer.isdigit() and head.isdigit()):
        raise ValueError(f"not a head name 'layer.head': {name!r}")
    return int(layer), int(head)


def head_id(name: str, n_heads: int) -> int:
    """``"L.H"`` -> the flat head id ``L * n_heads + H``."""
    layer, head = parse_head_name(name)
    if head >= n_heads:
        raise ValueError(f"no head {name}: heads are 0-{n_heads - 1} in each layer")
    return layer * n_heads + head


def z_hook(layer: int) -> str:
    """The per-head attention output ``z`` of ``layer`` (``[batch, pos, head, d_head]``): what ablations replace."""
    return f"blocks.{int(layer)}.attn.hook_z"


def pattern_hook(layer: int) -> str:
    """The attention pattern of ``layer`` (``[batch, head, query, key]``)."""
    return f"blocks.{int(layer)}.attn.hook_pattern"


def resid_pre_hook(layer: int) -> str:
    """The residual stream entering block ``layer``."""
    return f"blocks.{int(layer)}.hook_resid_pre"


def hook_layer(hook_name: str) -> int:
    """The layer of a per-block hook name (``"blocks.L. ..."``)."""
    parts = hook_name.split(".")
    if len(parts) < 3 or parts[0] != "blocks" or not parts[1].isdigit():
        raise ValueError(f"not a per-block hook name: {hook_name!r}")
    return int(parts[1])
