"""Hostile circuit-building policies for the Planted track's tests, imported by the sandbox's child.

``truth_thief``: everything a policy could use to return the planted truth instead of finding
it. Its checkpoint (a JSON file the test writes) holds the kind it plays and, for every public
model it memorised, the fingerprint of that model's first observation with its true circuit.
On a model it recognises it proposes the memorised circuit; otherwise it looks for the
generator's ``ground_truth.json`` files wherever the scorer might have written them (the disk
cache, temporary directories) and proposes the newest one's circuit (the model being played was
generated last); finding nothing, it proposes nothing.
"""

import glob
import hashlib
import json
import os

import numpy as np

N_STATIC = 10  # the static observation columns (a model's and batch's fingerprint)


def fingerprint(obs) -> str:
    return hashlib.sha256(np.round(np.asarray(obs, dtype=np.float64)[:, :N_STATIC], 4).tobytes()).hexdigest()


def _found_truth(kind: str) -> list[int]:
    roots = [os.environ.get("CIRCUIT_GYM_CACHE", ""), os.path.expanduser("~/.cache/circuit_gym"), "/tmp"]
    files = [f for root in roots if root for f in glob.glob(f"{root}/**/ground_truth.json", recursive=True)]
    if not files:
        return []
    newest = max(files, key=os.path.getmtime)
    with open(newest) as f:
        return [h["head"] for h in json.load(f)["circuits"][kind]]


class _TruthThief:
    def __init__(self, checkpoint: str) -> None:
        with open(checkpoint) as f:
            config = json.load(f)
        self.kind, self.known = config["kind"], config["fingerprints"]
        self.found_any = False

    def _proposal(self, obs) -> list[int]:
        known = self.known.get(fingerprint(obs))
        if known is not None:
            return known
        found = _found_truth(self.kind)
        self.found_any = self.found_any or bool(found)
        return found

    def act(self, obs, mask):
        mask = np.asarray(mask)
        n = len(mask) - 1
        todo = [h for h in self._proposal(obs) if mask[h]]
        return int(todo[0]) if todo else n

    def rank_heads(self, obs):
        scores = np.zeros(np.asarray(obs).shape[0])
        for i, h in enumerate(self._proposal(obs)):
            scores[h] = 100.0 - i
        return scores


def truth_thief(checkpoint):
    return _TruthThief(checkpoint)
