"""The ablation engine: exact head ablations, fast single-head sweeps, contrastive rewards."""

from circuit_gym.ablation.contrastive import ContrastiveScorer, SweepTable, contrastive_reward, head_name
from circuit_gym.ablation.engine import (
    ABLATIONS,
    AblationEngine,
    Evaluation,
    check_ablation,
    default_ablation,
)

__all__ = [
    "ABLATIONS", "AblationEngine", "ContrastiveScorer", "Evaluation", "SweepTable",
    "check_ablation", "contrastive_reward", "default_ablation", "head_name",
]  # fmt: skip
