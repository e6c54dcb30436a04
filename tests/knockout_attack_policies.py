"""Knock-out policies for the knock-out track's attack tests, imported by the sandbox's child.

Every policy answers ``act(observation, action_mask)``. Their fallback, the honest twin
``first_free``, ablates the free head of lowest id each step (no knowledge of anything).

- ``truth_reader``: looks for the planted truth wherever a policy could: an ``info`` argument (a
  scorer that passed the environment's info), the generator's ``ground_truth.json`` files (the disk
  cache, temporary directories: the newest is the model being played), the planted generator itself
  (importable: it regenerates the public seeds' truth), the committed greedy cache beside the
  package; finding the truth, it ablates the truth's heads; finding nothing, it is ``first_free``;
- ``memoriser``: a lookup table (its checkpoint, JSON) from a fingerprint of an episode's first
  observation to the order it memorised on that public model; on a model it does not recognise it
  is ``first_free``;
- ``float_action``, ``masked_action``, ``out_of_range``: an action that is not a legal integer.
"""

import glob
import hashlib
import json
import os
from pathlib import Path

import numpy as np

KIND = "self_repair"  # the kind the tests play


def fingerprint(observation) -> str:
    """A model's and batch's first observation (its attribution and EAP-IG columns), rounded."""
    return hashlib.sha256(np.round(np.asarray(observation, dtype=np.float64)[:, :2], 4).tobytes()).hexdigest()


def _first_free(mask) -> int:
    mask = np.asarray(mask)
    free = np.flatnonzero(mask[:-1])
    return int(free[0]) if free.size else len(mask) - 1


class FirstFree:
    def act(self, observation, action_mask):
        return _first_free(action_mask)


def first_free():
    return FirstFree()


def truth_files() -> list[str]:
    """The ground-truth files in the first place that holds any: the scorer's cache (where the model
    being scored was generated), else the user's cache, else anywhere under /tmp. Nearest first: other
    processes (a parallel test run) may write other models' truth files under /tmp meanwhile."""
    roots = [os.environ.get("CIRCUIT_GYM_CACHE", ""), os.path.expanduser("~/.cache/circuit_gym"), "/tmp"]
    for root in roots:
        files = glob.glob(f"{root}/**/ground_truth.json", recursive=True) if root else []
        if files:
            return files
    return []


def found_truth() -> list[int]:
    """The truth heads of the newest ground-truth file in reach, or of the greedy cache; [] if none."""
    files = truth_files()
    if files:
        with open(max(files, key=os.path.getmtime)) as f:
            return [int(h["head"]) for h in json.load(f)["circuits"][KIND]]
    try:  # the generator: importable, it could regenerate any public seed's truth
        from circuit_gym.models.planted.generator import truth_of  # noqa: F401
    except ImportError:
        pass
    else:
        return [-1]  # (reached: the generator is in the sandbox; the test reads it as found)
    try:
        import circuit_gym

        cache = Path(circuit_gym.__file__).resolve().parents[1] / "docs/results/knockout/greedy_curves.json"
        curves = json.loads(cache.read_text())["curves"]
    except (OSError, ValueError, KeyError, ImportError):
        return []
    return sorted({int(h) for entry in curves.values() for h in entry["order"]})


class TruthReader:
    def __init__(self) -> None:
        self.plan: list[int] | None = None

    def act(self, observation, action_mask, info=None):
        mask = np.asarray(action_mask)
        if isinstance(info, dict) and "planted_circuit" in info:
            heads = [int(h["head"]) for h in info["planted_circuit"]["circuits"][KIND]]
            todo = [h for h in heads if mask[h]]
            return todo[0] if todo else len(mask) - 1
        if self.plan is None:
            self.plan = [h for h in found_truth() if h >= 0]
        todo = [h for h in self.plan if 0 <= h < len(mask) - 1 and mask[h]]
        return int(todo[0]) if todo else _first_free(mask)


def truth_reader():
    return TruthReader()


class Memoriser:
    def __init__(self, checkpoint: str) -> None:
        with open(checkpoint) as f:
            self.table = json.load(f)
        self.plan: list[int] = []

    def act(self, observation, action_mask):
        mask = np.asarray(action_mask)
        if not np.asarray(observation)[:, 2].any():  # nothing ablated yet: an episode starts
            self.plan = list(self.table.get(fingerprint(observation), []))
        todo = [h for h in self.plan if mask[h]]
        return int(todo[0]) if todo else _first_free(mask)


def memoriser(checkpoint):
    return Memoriser(checkpoint)


class _Bad:
    def __init__(self, how: str) -> None:
        self.how = how

    def act(self, observation, action_mask):
        if self.how == "float":
            return float(_first_free(action_mask))
        if self.how == "masked":
            return 0  # legal once; masked (already ablated) the step after
        return len(action_mask) + 5


def float_action():
    return _Bad("float")


def masked_action():
    return _Bad("masked")


def out_of_range():
    return _Bad("range")
