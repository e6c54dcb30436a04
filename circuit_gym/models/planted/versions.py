"""The planted generator's versions: one row per version, one code path.

A version fixes everything a seed's weights depend on besides the seed: the residual layout
and vocabulary, the gains, the circuit kinds, the decoys and the noise. A seed's model is a
function of (version, seed); an old version keeps producing exactly its models (a
retired board's planted results were scored on version 2), a new one is a new row.

- **2** (issue 31): four kinds; the models a retired board was scored on (docs/archive.md).
  Its defect: on some seeds a circuit head whose attention falls back to BOS fires where it
  should not and the clean model fails part of a task (docs/planted.md, "the defect's cause").
- **3** (issue 41): the defect fixed by an anchored LayerNorm scale (the ``ANCHOR`` block,
  :func:`~circuit_gym.models.planted.heads.anchored_gains`: every match scores the same at any
  position and layer, the fallback at half of it), and two kinds more: ``self_repair`` (a
  backup head that acts only when the primary's output is gone) and ``and`` (a receiver
  whose query needs two senders at once); the truth states edges and backup heads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from circuit_gym.models.planted.heads import GAINS_V2, Gains, anchored_gains
from circuit_gym.models.planted.layout import LAYOUT_V2, LAYOUT_V3, Layout
from circuit_gym.models.planted.roles import DECOY_COUNTS_V2, DECOY_COUNTS_V3
from circuit_gym.tasks.planted import KINDS, KINDS_V3


@dataclass(frozen=True)
class GeneratorVersion:
    version: int
    layout: Layout
    gains: Gains
    kinds: tuple[str, ...]
    decoy_counts: Mapping[str, int]
    anchor: float = 0.0  # the ANCHOR entry at every position (0: the layout has no anchor)
    noise: float = 0.0005  # std of the Gaussian noise added to every head's matrices
    embed_noise: float = 0.01  # std of the noise on the synthetic tokens' embeddings and unembeddings


# About 4x the root of the other entries' squares at a busy position: every LN scale within a few %.
ANCHOR_V3 = 16.0
GENERATORS: dict[int, GeneratorVersion] = {
    2: GeneratorVersion(2, LAYOUT_V2, GAINS_V2, KINDS, DECOY_COUNTS_V2),
    3: GeneratorVersion(
        3, LAYOUT_V3, anchored_gains(LAYOUT_V3, ANCHOR_V3), KINDS_V3, DECOY_COUNTS_V3, ANCHOR_V3
    ),
}
VERSIONS = tuple(GENERATORS)
DEFAULT_VERSION = 2  # every ID of Planted v0's version (and the retired board's: docs/archive.md)
LATEST_VERSION = max(VERSIONS)


def generator(version: int) -> GeneratorVersion:
    if isinstance(version, bool) or version not in GENERATORS:
        raise ValueError(f"a planted generator version must be one of {VERSIONS}, got {version!r}")
    return GENERATORS[version]


def kinds_of(version: int) -> tuple[str, ...]:
    return generator(version).kinds
