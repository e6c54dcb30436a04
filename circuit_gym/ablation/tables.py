"""Cached oracle tables: the single-head sweep of one prompt batch, from disk when possible.

A cache key covers everything that changes the damages: the weights, the task's
definition (name, version, and what the metric computes: its code, constants, defaults,
closure and global values, :mod:`circuit_gym.ablation.fingerprint`), the prompts *and* what is scored
on them (answers, distractors, metric positions, counterfactual), the reference batch, the
ablation kind, :data:`ENGINE_VERSION` and the replay's attention path when it is not SDPA
(``attention_cache_fields``, issue 46). ``lam`` is not in it: the cache holds task and
general damages, and the reward is formed from them for any ``lam`` without a new sweep.
A metric that cannot be fingerprinted is never cached on disk (a warning, once per task).
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np

from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.contrastive import ContrastiveScorer, SweepTable
from circuit_gym.ablation.engine import (
    ENGINE_VERSION,
    AblationEngine,
    Evaluation,
    attention_cache_fields,
    check_ablation,
    default_attention,
)
from circuit_gym.ablation.fingerprint import fingerprint
from circuit_gym.models.loading import model_device
from circuit_gym.progress import announce_once
from circuit_gym.tasks.base import PromptBatch, Task
from circuit_gym.tasks.reference import ReferenceBatch

# One general-damage engine per (model, reference batch, ablation kind, attention path) in
# this process: its clean pass and its sweep do not depend on the episode.
_GENERAL: dict[tuple[int, str, str, str, str], tuple[AblationEngine, np.ndarray | None]] = {}


def _general_key(model, reference: ReferenceBatch, ablation: str) -> tuple[int, str, str, str, str]:
    # The weights hash guards against a new model reusing a freed model's id().
    return (
        id(model),
        model.circuit_gym_info.weights_hash,
        reference.fingerprint,
        ablation,
        default_attention(),
    )


def _tensor_bytes(t) -> bytes:
    return b"none" if t is None else str(tuple(t.shape)).encode() + t.cpu().numpy().tobytes()


def batch_fingerprint(task: Task, batch: PromptBatch) -> str | None:
    """Hash of what decides a batch's task damages: its prompts, what is scored, and how (the
    metric by what it computes); None if the metric cannot be fingerprinted."""
    metric = fingerprint(task.metric)
    if metric is None:
        return None
    h = hashlib.sha256(f"{task.name}|v{task.version}|{metric}".encode())
    for t in (batch.tokens, batch.counterfactual, batch.positions, batch.answers, batch.distractors):
        h.update(b"|" + _tensor_bytes(t))
    return h.hexdigest()[:24]


_WARNED_UNCACHEABLE: set[str] = set()


def _disk_cache_for(task: Task, key: dict, cache: SweepCache | None) -> SweepCache | None:
    """``cache``, unless the metric could not be fingerprinted (then None, and a warning once)."""
    if cache is None or key["batch"] is not None:
        return cache
    if task.name not in _WARNED_UNCACHEABLE:
        _WARNED_UNCACHEABLE.add(task.name)
        warnings.warn(
            f"circuit_gym cache: the metric of task {task.name!r} cannot be fingerprinted (it holds an object "
            "whose value cannot be hashed), so its sweeps are not cached on disk and are recomputed",
            stacklevel=3,
        )
    return None


def general_engine(model, reference: ReferenceBatch, ablation: str) -> AblationEngine:
    key = _general_key(model, reference, ablation)
    if key not in _GENERAL:
        evaluation = Evaluation.for_reference(reference, model_device(model))
        _GENERAL[key] = (AblationEngine(model, evaluation, ablation, key[-1]), None)
    return _GENERAL[key][0]


def general_damage(model, reference: ReferenceBatch, ablation: str, cache: SweepCache | None,
                   progress: bool | None = None) -> np.ndarray:  # fmt: skip
    """Per-head rise in reference loss; computed once per model, reference and ablation.
    ``progress``: None shows a bar where :mod:`circuit_gym.progress` allows one, False never."""
    key = _general_key(model, reference, ablation)
    engine = general_engine(model, reference, ablation)
    if _GENERAL[key][1] is None:
        disk_key = {
            "kind": "general", "weights": model.circuit_gym_info.weights_hash, "reference": reference.name,
            "reference_tokens": reference.fingerprint, "ablation": ablation, "engine": ENGINE_VERSION,
            **attention_cache_fields(engine.attention),
        }  # fmt: skip

        def compute() -> dict:
            _announce_general(model, reference, ablation, cache, progress)
            scores = engine.sweep(progress, desc="general-damage sweep")
            return {"general_damage": (engine.clean_score - scores).tolist()}

        payload = cache.get_or_compute(disk_key, compute) if cache else compute()
        _GENERAL[key] = (engine, np.asarray(payload["general_damage"], dtype=np.float64))
    return _GENERAL[key][1]


def sweep_table(model, task: Task, batch: PromptBatch, reference: ReferenceBatch, *, ablation: str = "zero",
                lam: float = 1.0, cache: SweepCache | None = None, progress: bool | None = None) -> SweepTable:  # fmt: skip
    """The single-head oracle table for ``batch``; its damages come from ``cache`` when it holds them.
    ``progress`` as in :func:`general_damage`."""
    check_ablation(ablation)
    key = sweep_key(model, task, batch, reference, ablation)

    def compute() -> dict:
        if cache is not None:
            announce_once("oracle tables", "computing each prompt batch's oracle table (a sweep of all "
                          f"{model.circuit_gym_info.n_heads_total} heads) on first use; cached in {cache.directory}; "
                          f"`{precompute_hint(model)} --tasks TASK ... --splits SPLIT ... --pool-size N` "
                          "computes whole pools ahead", requested=progress)  # fmt: skip
        scorer = ContrastiveScorer(
            model, task, batch, reference, ablation, lam, general_engine=general_engine(model, reference, ablation)
        )  # fmt: skip
        table = scorer.sweep(general_damage(model, reference, ablation, cache, progress), progress)
        return {k: v for k, v in table.to_dict().items() if k in DAMAGE_FIELDS}

    disk = _disk_cache_for(task, key, cache)
    payload = disk.get_or_compute(key, compute) if disk else compute()
    info = model.circuit_gym_info
    return SweepTable.from_dict({
        **payload, "model": info.name, "weights_hash": info.weights_hash, "task": task.name, "split": batch.split,
        "seed": batch.seed, "batch_size": batch.batch_size, "ablation": ablation, "lam": float(lam),
        "reference": reference.name, "n_layers": info.n_layers, "n_heads": info.n_heads,
    })  # fmt: skip


def precompute_hint(model) -> str:
    """The start of the ``circuit-gym precompute`` command line for this model."""
    info = model.circuit_gym_info
    from_directory = info.source not in ("embedded", "transformer_lens")  # else: a directory's path
    return f"circuit-gym precompute --model {info.name}" + (
        f" --model-path {info.source}" if from_directory else ""
    )


def _announce_general(model, reference: ReferenceBatch, ablation: str, cache: SweepCache | None,
                      progress: bool | None) -> None:  # fmt: skip
    where = f"cached in {cache.directory}" if cache is not None else "not cached (cache off)"
    announce_once(f"general {id(model)} {reference.fingerprint} {ablation}",
                  f"computing the general-damage sweep of {model.circuit_gym_info.name} ({ablation} ablation of "
                  f"each of its {model.circuit_gym_info.n_heads_total} heads on the {reference.name!r} reference "
                  f"batch) once per model; {where}; `{precompute_hint(model)} --tasks TASK` computes it ahead",
                  requested=progress)  # fmt: skip


# What a sweep caches: damages and clean values, never anything that depends on lam.
DAMAGE_FIELDS = ("clean_metric", "clean_general_loss", "task_damage", "general_damage")


def sweep_key(model, task: Task, batch: PromptBatch, reference: ReferenceBatch, ablation: str) -> dict:
    """The disk-cache key of a single-head sweep (see the module docstring)."""
    return {
        "kind": "sweep", "model": model.circuit_gym_info.name, "weights": model.circuit_gym_info.weights_hash,
        "task": task.name, "split": batch.split, "seed": batch.seed, "batch": batch_fingerprint(task, batch),
        "ablation": ablation, "reference": reference.name, "reference_tokens": reference.fingerprint,
        "engine": ENGINE_VERSION, **attention_cache_fields(default_attention()),
    }  # fmt: skip
