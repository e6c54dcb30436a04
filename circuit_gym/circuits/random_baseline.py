"""The random-ranking baseline: what CPR and CMD a ranking with no information gets.

A random ranking scores the heads with a random permutation of ``1..N`` (all positive, so
its signed and absolute orders agree). Its areas, averaged over several seeded rankings,
are the denominators of auto-circuit's normalised area
(:func:`~circuit_gym.circuits.area.normalised_area`).
"""

from __future__ import annotations

import numpy as np

from circuit_gym.circuits.ranking import Ranking


def random_ranking(n_layers: int, n_heads: int, seed: int) -> Ranking:
    """A uniformly random order of the heads, reproducible from ``seed``."""
    rng = np.random.default_rng([seed, n_layers, n_heads])
    return Ranking.from_array(rng.permutation(n_layers * n_heads) + 1.0, "random", n_layers, n_heads)


def random_rankings(n_layers: int, n_heads: int, n: int, seed: int = 0) -> list[Ranking]:
    """``n`` random rankings from seeds ``seed .. seed + n - 1``."""
    if n < 1:
        raise ValueError(f"need at least one random ranking, got n={n}")
    return [random_ranking(n_layers, n_heads, seed + i) for i in range(n)]
