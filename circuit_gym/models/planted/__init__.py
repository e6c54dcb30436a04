"""Planted-circuit models: weights written by hand, so the circuits are known exactly.

``make_planted_model(seed)`` generates a 12 x 12 attention-only model (GPT-2 small's head
grid) whose four circuits (``circuit_gym.tasks.planted.KINDS``: induction, multi-hop,
redundant, suppression) sit at heads drawn from the seed, among decoys and distractors; it
returns the loaded model with its :class:`GroundTruth`. See ``docs/planted.md``.

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
from circuit_gym.tasks.planted import KINDS, PLANTED_TASKS

__all__ = [
    "KINDS", "PLANTED_HEADS", "PLANTED_TASK", "PLANTED_TASKS", "GroundTruth", "HeadRole", "PlantedModel",
    "generate", "load_planted_model", "make_planted_model", "model_name", "planted_state_dict",
]  # fmt: skip
