"""Cached oracle tables: the single-head sweep of one prompt batch, from disk when possible."""

from __future__ import annotations

import hashlib

import numpy as np

from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.contrastive import ContrastiveScorer, SweepTable
from circuit_gym.ablation.engine import AblationEngine, Evaluation, check_ablation
from circuit_gym.tasks.base import PromptBatch, Task
from circuit_gym.tasks.reference import ReferenceBatch

# One general-damage engine per (model, reference batch, ablation kind) in this process:
# its clean pass and its sweep do not depend on the episode.
_GENERAL: dict[tuple[int, str, str, str], tuple[AblationEngine, np.ndarray | None]] = {}


def _general_key(model, reference: ReferenceBatch, ablation: str) -> tuple[int, str, str, str]:
    # The weights hash guards against a new model reusing a freed model's id().
    return (id(model), model.circuit_gym_info.weights_hash, reference.fingerprint, ablation)


def _version() -> str:
    from circuit_gym import __version__

    return __version__


def _tokens_hash(batch: PromptBatch) -> str:
    h = hashlib.sha256(batch.tokens.numpy().tobytes())
    if batch.counterfactual is not None:
        h.update(batch.counterfactual.numpy().tobytes())
    return h.hexdigest()[:16]


def general_engine(model, reference: ReferenceBatch, ablation: str) -> AblationEngine:
    key = _general_key(model, reference, ablation)
    if key not in _GENERAL:
        _GENERAL[key] = (AblationEngine(model, Evaluation.for_reference(reference), ablation), None)
    return _GENERAL[key][0]


def general_damage(model, reference: ReferenceBatch, ablation: str, cache: SweepCache | None,
                   progress: bool = False) -> np.ndarray:  # fmt: skip
    """Per-head rise in reference loss; computed once per model, reference and ablation."""
    key = _general_key(model, reference, ablation)
    engine = general_engine(model, reference, ablation)
    if _GENERAL[key][1] is None:
        disk_key = {
            "kind": "general", "weights": model.circuit_gym_info.weights_hash, "reference": reference.name,
            "reference_tokens": reference.fingerprint, "ablation": ablation, "version": _version(),
        }  # fmt: skip

        def compute() -> dict:
            return {"general_damage": (engine.clean_score - engine.sweep(progress)).tolist()}

        payload = cache.get_or_compute(disk_key, compute) if cache else compute()
        _GENERAL[key] = (engine, np.asarray(payload["general_damage"], dtype=np.float64))
    return _GENERAL[key][1]


def sweep_table(model, task: Task, batch: PromptBatch, reference: ReferenceBatch, *, ablation: str = "zero",
                lam: float = 1.0, cache: SweepCache | None = None, progress: bool = False) -> SweepTable:  # fmt: skip
    """The single-head oracle table for ``batch``; read from ``cache`` when it holds it."""
    check_ablation(ablation)
    key = {
        "kind": "sweep", "model": model.circuit_gym_info.name, "weights": model.circuit_gym_info.weights_hash,
        "task": task.name, "split": batch.split, "seed": batch.seed, "batch_size": batch.batch_size,
        "prompts": _tokens_hash(batch), "ablation": ablation, "lam": float(lam), "reference": reference.name,
        "reference_tokens": reference.fingerprint, "version": _version(),
    }  # fmt: skip

    def compute() -> dict:
        scorer = ContrastiveScorer(
            model,
            task,
            batch,
            reference,
            ablation,
            lam,
            general_engine=general_engine(model, reference, ablation),
        )
        return scorer.sweep(general_damage(model, reference, ablation, cache, progress), progress).to_dict()

    payload = cache.get_or_compute(key, compute) if cache else compute()
    return SweepTable.from_dict(payload)
