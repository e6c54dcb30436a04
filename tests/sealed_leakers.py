"""Policies for issue 58's first attack (tests/test_sealed_private_record.py): private information
carried out through numbers the policy sets, at no cost to its ranking scores.

A circuit-track builder that, in public episodes and in every private episode but the first of
each group, adds the ``HONEST_SIZE`` heads it ranks highest and stops. In the first private
episode it reads the observation's top head ``h`` (first column) and adds ``ENCODED[h % 2]`` heads
instead, in its ranking's order: its episode's ranking (heads in insertion order, then the rest by
``rank_heads``) is the honest one, so CPR and CMD do not move, while the circuit's size, its
faithfulness and the pass count do. ``sleeper`` instead sleeps ``SLEEP_S`` in that episode (the
wall-clock channel).

Self-contained (numpy and the standard library only): the sandbox gives a policy its own module
file, not its neighbours.
"""

import json
import time
from pathlib import Path

import numpy as np

HONEST_SIZE = 2
ENCODED = (1, 3)  # never HONEST_SIZE: the encoded episode always differs from the honest one
SLEEP_S = 3.0


def ranking(n_heads: int) -> np.ndarray:
    """The builder's fixed ranking: head ``n - 3`` first (a constant policy, as in hostile_policies)."""
    return -np.abs(np.arange(n_heads) - (n_heads - 3.0)) - 0.01 * np.arange(n_heads)


class _Builder:
    """Counts episodes (an episode starts with an empty circuit); the checkpoint says how many are public."""

    def __init__(self, checkpoint, encode: bool):
        self.public = json.loads(Path(checkpoint).read_text())["public_episodes"] if checkpoint else 0
        self.encode, self.episodes, self.size = encode, 0, HONEST_SIZE

    def rank_heads(self, obs):
        return ranking(np.asarray(obs).shape[0])

    def act(self, obs, mask):
        obs, mask = np.asarray(obs), np.asarray(mask)
        n = obs.shape[0]
        in_circuit = n - int(mask[:n].sum())
        if in_circuit == 0:  # a new episode
            first_private = self.episodes == self.public
            self.episodes += 1
            self.size = HONEST_SIZE
            if first_private and self.encode:
                self.size = ENCODED[int(np.argmax(obs[:, 0])) % 2]
            elif first_private:
                time.sleep(SLEEP_S)
        if in_circuit >= self.size:
            return n  # STOP
        free = np.flatnonzero(mask[:n])
        return int(free[np.argmax(ranking(n)[free])])


class _HonestBuilder(_Builder):
    def __init__(self, checkpoint):
        super().__init__(checkpoint, encode=False)
        self.public = -1  # never "the first private episode": no sleep, no encoding


def honest(checkpoint=None):
    return _HonestBuilder(checkpoint)


def size_encoder(checkpoint=None):
    return _Builder(checkpoint, encode=True)


def sleeper(checkpoint=None):
    return _Builder(checkpoint, encode=False)
