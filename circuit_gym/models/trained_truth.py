"""Ground truth of a trained model with the backup objective (zoo v3, issue 55 item 4).

A model trained with ``--backup-weight`` (``circuit_gym.models.backup_objective``) records, per
task, the primary head P the objective kept and the backup Q it trained to carry the task when P
is ablated and to stay silent while P works (``training_log.json``, ``backup_pairs``). That record
is the truth a scorer can hold a method to, as the planted generator's roles are for planted
models: :class:`TrainedTruth` answers ``circuit(task)`` and ``backups(task)`` as
:class:`circuit_gym.models.planted.placement.GroundTruth` answers them per kind, so the planted
track's measures (precision, recall and AUC over heads, backups counted) apply unchanged.

It is the truth of what the training asked for, not a claim that the model uses no other head:
whether the recorded pair behaves as trained is measured on each model's card (redundancy, P's
self-repair, Q's single damage) and checked with plain hooks in ``tests/test_zoo_v3_backups.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TrainedTruth:
    """Per task, the recorded (primary, backup) pair of flat head ids."""

    model: str
    pairs: Mapping[str, tuple[int, int]]

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.pairs)

    def _pair(self, task: str) -> tuple[int, int]:
        if task not in self.pairs:
            raise ValueError(
                f"{self.model} records no backup pair for {task!r}; it records {sorted(self.pairs)}"
            )
        return self.pairs[task]

    def circuit(self, task: str) -> frozenset[int]:
        """The heads the task runs through by training: the primary and its backup."""
        return frozenset(self._pair(task))

    def backups(self, task: str) -> frozenset[int]:
        """The backup: silent while the primary works, carrying the task once it is ablated."""
        return frozenset({self._pair(task)[1]})

    def primaries(self, task: str) -> frozenset[int]:
        return frozenset({self._pair(task)[0]})


def trained_truth(directory: str | Path, name: str | None = None) -> TrainedTruth:
    """The truth recorded in ``directory/training_log.json`` (ValueError if it records none)."""
    directory = Path(directory)
    log = json.loads((directory / "training_log.json").read_text())
    pairs = log.get("backup_pairs")
    if not pairs:
        raise ValueError(f"{directory} records no backup pairs: it was not trained with the backup objective")
    out: dict[str, tuple[int, int]] = {}
    for pair in pairs:
        primary, backup = int(pair["primary"]), int(pair["backup"])
        if primary == backup or pair["task"] in out:
            raise ValueError(f"{directory}: malformed backup pair {pair}")
        out[pair["task"]] = (primary, backup)
    return TrainedTruth(name or directory.name, out)


def verified_backup_tasks(card: Mapping) -> tuple[str, ...]:
    """The tasks of a model card (``card_metrics.json``'s contents) whose recorded backup pair the
    card verifies: the task is gated (``suite.included``) and its pair meets the bar (redundancy and
    the primary's self-repair, ``backup_pairs[task].measures.meets_bar``), in the card's order. The
    knock-out track scores trained models on these only: a pair the card does not verify is a
    training record, not a truth."""
    gated = set(card["suite"]["included"])
    pairs = card.get("backup_pairs") or {}
    return tuple(t for t, p in pairs.items() if t in gated and p.get("measures", {}).get("meets_bar"))
