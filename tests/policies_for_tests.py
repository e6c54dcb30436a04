"""Policies for the leaderboard tests, imported by the sandbox's child process.

Some of them are deliberately hostile (more in hostile_policies.py); they take their
instructions from their checkpoint, a JSON file the test writes (the child's environment is
rebuilt from nothing, and the checkpoint is what the sandbox lets it read).
"""

import json
import os
import time
from pathlib import Path

import numpy as np

# Import-time side effect, for the test that the scorer never imports a submission itself:
# the process that executed this module.
IMPORTED_IN_PID = os.getpid()


class _Fn:
    def __init__(self, fn):
        self.rank_heads = fn


def good():
    return _Fn(lambda obs: -np.arange(obs.shape[0], dtype=float))


def constant_ranking(n_heads: int) -> np.ndarray:
    """The ranking ``constant`` always returns: head ``n - 3`` first, then its neighbours."""
    return -np.abs(np.arange(n_heads) - (n_heads - 3.0)) - 0.01 * np.arange(n_heads)


def constant():
    return _Fn(lambda obs: constant_ranking(obs.shape[0]))


def memoriser():
    """The tests' stand-in for the fixed-head reference: always the last head first."""
    return _Fn(lambda obs: np.arange(obs.shape[0], dtype=float))


def crash_on_load():
    raise RuntimeError("this policy cannot even load")


def crash():
    return _Fn(lambda obs: 1 / 0)


def hang():
    return _Fn(lambda obs: time.sleep(3600))


def wrong_shape():
    return _Fn(lambda obs: np.zeros(obs.shape[0] + 1))


def nan_scores():
    return _Fn(lambda obs: np.full(obs.shape[0], np.nan))


def a_head_not_scores():
    return _Fn(lambda obs: 999)


def memory_hog():
    def rank(obs):
        hog = np.ones((800, 1024, 1024), dtype=np.uint8)  # 800 MB, touched
        return hog.sum(axis=(1, 2))[: obs.shape[0]].astype(float)

    return _Fn(rank)


def no_rank_heads():
    return object()


def where_am_i():
    """Reports (as a failure) which process imported this module and runs the policy."""
    report = {"imported_in_pid": IMPORTED_IN_PID, "pid": os.getpid()}
    raise RuntimeError("REPORT " + json.dumps(report))


def seed_file_reader(checkpoint):
    """Tries to learn the private seeds: from a path it was told (the checkpoint's
    ``seed_path``), from its own arguments and environment, and from its parent's command
    line. Reports what it found as its failure (``REPORT {...}``)."""
    report: dict = {"pid": os.getpid(), "ppid": os.getppid()}
    told = json.loads(Path(checkpoint).read_text())["seed_path"]
    try:
        report["told_path_content"] = Path(told).read_text() if told else None
    except OSError as err:
        report["told_path_content"] = f"unreadable: {err}"
    try:
        report["parent_cmdline"] = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().decode(errors="replace")
    except OSError as err:
        report["parent_cmdline"] = f"unreadable: {err}"
    try:
        report["own_cmdline"] = Path("/proc/self/cmdline").read_bytes().decode(errors="replace")
    except OSError as err:
        report["own_cmdline"] = f"unreadable: {err}"
    report["own_environ"] = dict(os.environ)
    raise RuntimeError("REPORT " + json.dumps(report))


def pool_rebuilder(checkpoint):
    """The cheat a public seed list invites: rebuild the test-split pool of batch seeds
    0..N-1 (N: the checkpoint's ``public_seeds``) with the published settings, find the batch
    whose observation equals the one received, and put that batch's oracle head first.
    Unknown observations get ``constant``'s ranking."""
    state: dict = {}

    def build() -> None:
        import gymnasium as gym

        from circuit_gym import benchmark as B

        n = int(json.loads(Path(checkpoint).read_text())["public_seeds"])
        # the settings of the tests' small benchmark (which patches them in the scorer's process only)
        env = gym.make(f"CircuitDiscovery-Toy-Multi-{B.ENV_VERSION}", split=B.SPLIT, pool_size=n, batch_size=B.PROMPTS_PER_EPISODE,
                       ablation=B.ABLATION, lam=B.LAM, model="tiny")  # fmt: skip
        obs, heads = [], []
        for task in ("docstring",):
            for i in range(n):
                o, _ = env.reset(options={"task": task, "batch_index": i})
                obs.append(np.asarray(o, dtype=np.float32))
                heads.append(env.unwrapped.episode.table.oracle_head)
        state["obs"], state["heads"] = np.stack(obs), heads

    def rank(obs):
        if not state:
            build()
        scores = constant_ranking(obs.shape[0])  # fallback
        distance = np.abs(state["obs"] - obs[None]).max(axis=(1, 2))
        best = int(np.argmin(distance))
        if distance[best] < 1e-5:
            scores[state["heads"][best]] = scores.max() + 1.0
        return scores

    return _Fn(rank)


class _CircuitConstant:
    """A circuit-building policy (circuit track): adds the two heads ``constant_ranking`` puts
    first, then STOP; ranks the rest by ``constant_ranking``."""

    def act(self, obs, mask):
        n = obs.shape[0]
        mask = np.asarray(mask)
        if n - int(mask[:n].sum()) >= 2:  # from empty, the masked heads are the circuit
            return n
        free = np.flatnonzero(mask[:n])
        return int(free[np.argmax(constant_ranking(n)[free])])

    def rank_heads(self, obs):
        return constant_ranking(obs.shape[0])


def circuit_constant():
    return _CircuitConstant()


def eap_ig_reader():
    """Ranks heads by the causal observation's EAP-IG column (``features="causal"``: column 13 of
    15); fails on any other observation, so a test sees which one the scorer gave it."""

    def rank(obs):
        if obs.shape[1] != 15:
            raise ValueError(f"expected the causal observation (15 columns), got {obs.shape[1]}")
        return obs[:, 13].astype(float)

    return _Fn(rank)
