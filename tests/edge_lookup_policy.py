"""A hostile edge policy for tests/test_edge_track.py: a lookup table of the public test set.

Its checkpoint (JSON) maps a fingerprint of an episode's first observation (the static columns of
the candidate rows, which identify the model and batch) to the candidate rows of the planted truth
edges there. On an episode it recognises it adds those rows, then stops; elsewhere it stops at
once. Self-contained (numpy and the standard library): the sandbox gives a policy its own file.
"""

import hashlib
import json

import numpy as np

STATIC_COLUMNS = 9  # depths, ports, from_input, EAP, EAP-IG: what does not change within an episode


def fingerprint(observation) -> str:
    static = np.round(np.asarray(observation, dtype=np.float32)[:, :STATIC_COLUMNS], 4)
    return hashlib.sha256(static.tobytes()).hexdigest()


class Lookup:
    def __init__(self, table: dict) -> None:
        self.table, self.plan = table, []

    def act(self, observation, action_mask):
        stop = len(action_mask) - 1
        if not np.asarray(observation)[:, 9].any():  # nothing added yet: a new episode
            self.plan = list(self.table.get(fingerprint(observation), []))
        while self.plan:
            row = self.plan.pop(0)
            if action_mask[row]:
                return int(row)
        return stop

    def rank_heads(self, observation):
        return np.zeros(np.asarray(observation).shape[0])


def lookup(checkpoint):
    with open(checkpoint) as f:
        return Lookup(json.load(f))
