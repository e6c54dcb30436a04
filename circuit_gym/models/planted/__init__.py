"""Planted-circuit models: weights written by hand, so the circuits are known exactly.

``make_planted_model(seed, version=2)`` generates a 12 x 12 attention-only model (GPT-2 small's
head grid) whose circuits sit at heads drawn from the seed, among decoys and distractors; it
returns the loaded model with its :class:`GroundTruth`. Generator version 2 (the default; a
retired board's, docs/archive.md) has four kinds (``circuit_gym.tasks.planted.KINDS``:
induction, multi-hop, redundant, suppression); version 3 fixes its defect and adds self-repair
and AND (``KINDS_V3``), and its truth states each circuit's edges and backup heads
(:mod:`~circuit_gym.models.planted.versions`). See ``docs/planted.md``.

The first planted model (3 layers x 4 heads, one induction-style pair at fixed heads) is
:mod:`circuit_gym.models.planted.fixed`; its names stay importable from here.
"""

from circuit_gym.models.planted.fixed import (
    PLANTED_HEADS,
    PLANTED_TASK,
    load_planted_model,
    planted_state_dict,
)
from circuit_gym.models.planted.generator import PlantedModel, generate, make_planted_model, model_name
from circuit_gym.models.planted.placement import GroundTruth, HeadRole
from circuit_gym.models.planted.versions import DEFAULT_VERSION, LATEST_VERSION, VERSIONS, kinds_of
from circuit_gym.tasks.planted import KINDS, KINDS_V3, PLANTED_TASKS

__all__ = [
    "DEFAULT_VERSION", "KINDS", "KINDS_V3", "LATEST_VERSION", "PLANTED_HEADS", "PLANTED_TASK", "PLANTED_TASKS",
    "VERSIONS", "GroundTruth", "HeadRole", "PlantedModel", "generate", "kinds_of", "load_planted_model",
    "make_planted_model", "model_name", "planted_state_dict",
]  # fmt: skip
