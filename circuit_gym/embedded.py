"""Names of the models shipped inside the package.

The bottom layer: tasks (which reference text to use), the ablation engine (which ablation
is the default) and model loading all ask "is this an embedded model?", so the answer lives
here and imports nothing from circuit_gym.

- ``toy``: the default, GPT-2 small's 12 x 12 head grid (run F: copies any token);
- ``toy_d``: the previous 12 x 12 model (run D: copies only the train third of the ids),
  kept so that the v2 and v3 environment IDs keep their behaviour;
- ``tiny``: the first embedded model (4 x 4), kept for fast tests and the v0/v1 IDs;
- ``zoo1`` ...: the model zoo, 12 x 12 models trained by one public recipe whose circuits sit
  at drawn depths (docs/zoo.md); the held-out models of the benchmark come from it.
"""

from __future__ import annotations

# The public model zoo (``circuit_gym.models.zoo_recipe``: one recipe, drawn seeds and placements),
# shipped under models/zoo/, by generation: v1 and v2 (their boards retired: docs/archive.md; v2 is v1's recipe
# with the self-repair knob drawn per member) and v3.
ZOO_GENERATIONS: dict[str, tuple[str, ...]] = {
    "v1": ("zoo1", "zoo2", "zoo3", "zoo4"),
    "v2": ("zoo5", "zoo6", "zoo7", "zoo8"),
    # zoo v3 (issue 55: the backup objective, dormant backups known by training): benchmark v8's models
    "v3": ("zoo9", "zoo10", "zoo11", "zoo12"),
}
ZOO = ZOO_GENERATIONS["v1"]
ZOO_V2 = ZOO_GENERATIONS["v2"]
ZOO_V3 = ZOO_GENERATIONS["v3"]
# The members shipped in this release (each with its card).
SHIPPED_ZOO = ZOO + ZOO_V2 + ZOO_V3
# Embedded model -> its directory under circuit_gym/models/.
EMBEDDED_PATHS: dict[str, str] = {
    "toy": "toy",
    "toy_d": "toy_d",
    "tiny": "tiny",
    **{m: f"zoo/{m}" for m in SHIPPED_ZOO},
}
EMBEDDED = tuple(EMBEDDED_PATHS)


# The zoo's split into training and held-out models (the retired boards on v1 and v2, v8 on v3;
# ``circuit_gym.benchmark``): members with an odd index train, those with an even index are held
# out. A rule on the names, fixed before any agent was trained or scored on the zoo. On v1 the
# training half spans the placements' extremes (zoo1: layers 8-9, zoo3: 0-1), the held-out half
# lies between them (zoo2: 3-4, zoo4: 5-6; docs/results/zoo_placement.json): held-out depths are
# interpolated, not extrapolated.
def zoo_split(members: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(training, held-out)`` members of a zoo generation by the odd/even rule."""
    train = tuple(m for m in members if int(m.removeprefix("zoo")) % 2 == 1)
    return train, tuple(m for m in members if m not in train)


ZOO_TRAIN, ZOO_HELD_OUT = zoo_split(ZOO)
ZOO_V2_TRAIN, ZOO_V2_HELD_OUT = zoo_split(ZOO_V2)
ZOO_V3_TRAIN, ZOO_V3_HELD_OUT = zoo_split(ZOO_V3)
# Named sets of embedded models an environment can draw from (``model="zoo"``).
MODEL_SETS: dict[str, tuple[str, ...]] = {
    "zoo": ZOO, "zoo-train": ZOO_TRAIN, "zoo-held-out": ZOO_HELD_OUT,
    "zoo-v2": ZOO_V2, "zoo-v2-train": ZOO_V2_TRAIN, "zoo-v2-held-out": ZOO_V2_HELD_OUT,
    "zoo-v3": ZOO_V3, "zoo-v3-train": ZOO_V3_TRAIN, "zoo-v3-held-out": ZOO_V3_HELD_OUT,
}  # fmt: skip


def is_embedded(name: str) -> bool:
    """Whether ``name`` is a model shipped inside the package (no download, no path)."""
    return name in EMBEDDED


def model_set(name: str) -> tuple[str, ...]:
    """The models of a named set (a single model name is a set of one)."""
    if name in MODEL_SETS:
        return MODEL_SETS[name]
    return (name,)
