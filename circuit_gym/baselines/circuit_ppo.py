"""PPO (Tianshou 2.x) on the circuit-building Multi ID: one policy that builds circuits on any task.

The network is the single-head PPO's :class:`~circuit_gym.baselines.ppo.HeadScorer` (a logit per
head from its own feature row and, through self-attention, every other head's: no head index,
so it applies to tasks it never saw) plus one STOP logit from the pooled head embeddings.
Illegal actions are masked with the environment's ``info["action_mask"]``, carried next to the
observation by :class:`~circuit_gym.baselines.ppo_trainer.MaskInObservation`. The builder, the
training loop (checkpoint selection, resume) and the policy adapter are the single-head PPO's
(``circuit_gym/baselines/ppo_trainer.py``); this module holds the network, the config and the recipe.

Checkpoints are chosen on the *training* tasks only: after every epoch the deterministic
policy builds circuits on train-split batches ``pool_size .. pool_size + selection_episodes - 1``
of each training task (held back: never trained on, never reported), and ``policy.pt`` keeps
the parameters with the best CPR there relative to exact greedy search's on the same batches
(per task, ratio of sums; then the mean over tasks; greedy = 1), computed once before training.

    python -m circuit_gym.baselines.circuit_ppo --out runs/circuit_ppo --epochs 6
    python -m circuit_gym.baselines.circuit_ppo --out runs/circuit_ppo --epochs 10   # resumes, extends
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym.baselines import ppo_trainer
from circuit_gym.baselines.circuit_solvers import GreedySearch, play_episode
from circuit_gym.baselines.ppo import HeadScorer
from circuit_gym.baselines.ppo_trainer import (  # noqa: F401  (re-exported: the builder and checkpoint name)
    CHECKPOINT,
    MaskInObservation,
    PolicyAdapter,
    PPOConfigBase,
    build_algorithm,
    cells,
    selection_indices,
)
from circuit_gym.baselines.state_scorer import StateScorer, state_columns
from circuit_gym.circuits import cpr, faithfulness_curve
from circuit_gym.envs.circuit_building import MEMBER_COLUMN, N_CIRCUIT_FEATURES, CircuitBuildingEnv
from circuit_gym.envs.features import CIRCUIT_FEATURE_SETS
from circuit_gym.envs.registration import circuit_env_id

REWARDS = ("gain", "area")
NETWORKS = ("circuit_scorer", "state_scorer")


class AreaReward(gym.Wrapper):
    """Reward = the exact faithfulness of the circuit after each step (``info["faithfulness"]``)
    minus the env's ``alpha`` per head added; 0 at STOP. An episode's return is then the area
    under its faithfulness-vs-size curve (CPR's shape), instead of f of the final circuit."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        base = self.env.unwrapped
        if int(action) == base.stop_action:
            return obs, 0.0, terminated, truncated, info
        return obs, float(info["faithfulness"]) - base.alpha, terminated, truncated, info


@dataclass
class CircuitPPOConfig(PPOConfigBase):
    NETWORKS: ClassVar[tuple[str, ...]] = NETWORKS

    env_id: str = circuit_env_id("Toy", "Multi")  # the benchmark's training tasks, embedded model
    pool_size: int = 16
    selection_episodes: int = 2
    n_envs: int = 4
    epochs: int = 4
    steps_per_epoch: int = 512
    steps_per_collect: int = 128
    lr: float = 1e-3
    ent_coef: float = 0.03
    # The policy network: "circuit_scorer" (CircuitScorer, the reference's) or "state_scorer"
    # (baselines.state_scorer: the circuit state kept apart, two attention layers, a STOP logit).
    network: str = "circuit_scorer"
    budget: int = 16
    # Training's cost per head. 0, not the env's 0.01: with a cost, adding a random head pays
    # -alpha and STOP pays 0, so an untrained policy learns to STOP at once (seen in a 256-step
    # smoke run: every circuit empty) before it finds the few heads that raise faithfulness;
    # CPR, the selection score, does not charge for size.
    alpha: float = 0.0
    gamma: float = 1.0  # finite episodes; the return is J(final) - J(empty)
    # Training reward: "gain" = the env's reward (change of faithfulness; with gamma 1 the return
    # is f of the final circuit); "area" = f(C_t) after every head added (AreaReward: the return
    # is the area under the episode's faithfulness curve, as CPR is, so early heads count more).
    reward: str = "gain"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {self.reward!r}")


class CircuitScorer(nn.Module):
    """A logit per head (:class:`HeadScorer`) and a STOP logit; the critic is HeadScorer's."""

    def __init__(self, n_features: int = N_CIRCUIT_FEATURES, hidden: int = 64) -> None:
        super().__init__()
        self.heads = HeadScorer(n_features=n_features, hidden=hidden)
        self.stop = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def logits(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``[batch, heads + 1]``: one logit per head, then STOP; masked actions get -1e9."""
        x = self.heads.embed(obs)
        pooled = torch.cat([x.mean(-2), x.max(-2).values], dim=-1)
        out = torch.cat([self.heads.logits(obs), self.stop(pooled)], dim=-1)
        return out if mask is None else out.masked_fill(mask == 0, -1e9)

    def state_value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.heads.state_value(obs)


class CircuitPPOSolver:
    """A trained :class:`CircuitScorer` as a circuit-track solver (deterministic: the best legal action)."""

    name = "ppo"

    def __init__(self, net: CircuitScorer) -> None:
        self.net = net
        self.policy = CircuitPPOPolicy(net)

    @classmethod
    def load(cls, directory: str | Path) -> CircuitPPOSolver:
        return cls(ppo_trainer.load_network(RECIPE, directory))

    def begin(self, env: CircuitBuildingEnv) -> int:
        return 0  # it reads the observation only

    def act(self, env, obs, info) -> int:
        return self.policy.act(obs, info["action_mask"])

    def scores(self, env, obs, info) -> np.ndarray:
        """The head logits of the final state (heads outside the circuit order the rest of the ranking)."""
        logits = self.policy.logits(obs)[: env.n_total]
        return np.where(obs[:, MEMBER_COLUMN] > 0.5, -np.inf, logits)


class CircuitPPOPolicy(PolicyAdapter):
    """A trained :class:`CircuitScorer` behind the circuit-building policy protocol
    (:class:`circuit_gym.policy.CircuitBuilder`): it sees the observation and the legal actions
    only; heads already in the circuit rank last."""

    def __init__(self, net: CircuitScorer) -> None:
        super().__init__(net, MEMBER_COLUMN)


def load_policy(checkpoint: str) -> CircuitPPOPolicy:
    """Factory for ``circuit-gym leaderboard score --track v8-circuit --policy
    circuit_gym.baselines.circuit_ppo:load_policy --checkpoint DIR``."""
    return CircuitPPOPolicy(ppo_trainer.load_network(RECIPE, checkpoint))


def make_env(config: CircuitPPOConfig, pool_size: int | None = None, oracle_info: bool = False) -> gym.Env:
    """The configured environment; batch ``i`` is the same whatever ``pool_size``."""
    return gym.make(config.env_id, budget=config.budget, alpha=config.alpha, oracle_info=oracle_info,
                    **config.env_kwargs(pool_size))  # fmt: skip


def with_reward(config: CircuitPPOConfig, env: gym.Env) -> gym.Env:
    """``env`` paying ``config.reward``: the env's own ("gain") or :class:`AreaReward`'s ("area")."""
    return AreaReward(env) if config.reward == "area" else env


def episode_cpr(env: gym.Env, solver, task: str, index: int) -> float:
    """CPR of the circuit ``solver`` builds on one batch (signed curve only: no random rankings)."""
    row = play_episode(env, solver, task, index)
    return cpr(faithfulness_curve(env.unwrapped.state.runner, row["ranking"]))


def greedy_reference(env: gym.Env, indices: range) -> dict[str, list[float]]:
    """Exact greedy search's CPR on each held-back batch of each (model, task) cell
    (``ppo_trainer.cells``): the selection score's 1."""
    return {label: [episode_cpr(inner, GreedySearch(), task, i) for i in indices]
            for label, inner, task in cells(env)}  # fmt: skip


# What greedy search's selection reference depends on: the episodes and the env, not the learner.
REFERENCE_FIELDS = ("env_id", "model", "model_path", "device", "split", "pool_size", "selection_episodes",
                    "batch_size_prompts", "budget", "alpha")  # fmt: skip
REFERENCE_CACHE = "greedy_selection_reference.json"


def cached_greedy_reference(config: CircuitPPOConfig, env: gym.Env, cache: Path,
                            known: dict[str, list[float]] | None = None) -> dict[str, list[float]]:  # fmt: skip
    """:func:`greedy_reference` on the selection batches, read from ``cache`` when a run with the
    same episodes (``REFERENCE_FIELDS``) wrote it: every seed of a sweep shares it (greedy search
    is deterministic and its ~2,000 passes per batch are most of a short run's cost). ``known``:
    a resumed run's reference, written to the cache if it is not there."""
    key = {k: getattr(config, k) for k in REFERENCE_FIELDS}
    entries = json.loads(cache.read_text()) if cache.exists() else []
    for entry in entries:
        if entry["key"] == key:
            return entry["reference"]
    reference = known if known is not None else greedy_reference(env, selection_indices(config))
    # atomically: the seeds of a sweep may run at once, and one must never read a half-written file
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps([*entries, {"key": key, "reference": reference}], indent=1))
    tmp.replace(cache)
    return reference


def selection_cpr(
    net: CircuitScorer, env: gym.Env, indices: range, reference: dict[str, list[float]]
) -> dict:
    """The checkpoint-selection score: per task (per (model, task) cell of a model-draw env,
    labelled ``model/task``), the policy's CPR over greedy search's (ratio of sums over
    ``indices``), then the mean over cells, so greedy = 1 on every cell. Raw CPR can differ by an
    order of magnitude between tasks (faithfulness leaves [0, 1] where m(full) - m(empty) is
    small), and then its plain mean would mostly measure the task mix."""
    solver = CircuitPPOSolver(net)
    raw, relative = {}, {}
    for label, inner, task in cells(env):
        values = [episode_cpr(inner, solver, task, i) for i in indices]
        raw[label] = float(np.mean(values))
        relative[label] = float(np.sum(values) / np.sum(reference[label]))
    return {"selection_score": float(np.mean(list(relative.values()))), "cpr_vs_greedy_per_task": relative,
            "cpr_per_task": raw, "greedy_cpr_per_task": {t: float(np.mean(v)) for t, v in reference.items()}}  # fmt: skip


def warm_up(config: CircuitPPOConfig, progress: bool | None = None) -> float:
    """Compute every training and selection batch's features and circuit runner once."""
    return ppo_trainer.warm_up_cells(make_env(config, config.selection_pool), "circuit runners", progress)


def make_training_env(config: CircuitPPOConfig, seed: int) -> gym.Env:
    return with_reward(config, make_env(config))


def selection(config: CircuitPPOConfig, out: Path, reference: dict | None) -> tuple:
    """The checkpoint-selection score (:func:`selection_cpr`) against greedy search's CPR on the
    held-back batches: a resumed run's ``reference``, else the cache beside ``out`` or computed."""
    env = make_env(config, config.selection_pool)
    if reference is None:
        reference = cached_greedy_reference(config, env, out.parent / REFERENCE_CACHE)
    return (lambda net: selection_cpr(net, env, selection_indices(config), reference)), reference


def make_net(config: CircuitPPOConfig, n_features: int) -> nn.Module:
    if config.network == "state_scorer":
        state = state_columns("circuit", config.features)
        return StateScorer(n_features, state, hidden=config.hidden, stop=True)
    return CircuitScorer(n_features=n_features, hidden=config.hidden)


RECIPE = ppo_trainer.Recipe(
    config_type=CircuitPPOConfig, score_key="selection_score", make_env=make_training_env, make_net=make_net,
    n_features=lambda config: len(CIRCUIT_FEATURE_SETS[config.features]), warm_up=warm_up, selection=selection,
)  # fmt: skip


def train(config: CircuitPPOConfig, out: Path, progress: bool | None = True) -> dict:
    """Train PPO (``ppo_trainer.train``); writes ``policy.pt`` (best selection score,
    :func:`selection_cpr`), ``policy_last.pt``, ``config.json``, ``curve.json`` (per epoch: env
    steps, test return, selection score = CPR relative to greedy search, greedy at 1),
    ``checkpoint.pt`` and ``train_summary.json``. Resumable: the same call again continues from
    the last finished epoch; more ``epochs`` extend the run."""
    return ppo_trainer.train(config, RECIPE, out, progress)


def main(argv: list[str] | None = None) -> None:
    ppo_trainer.main(RECIPE, "runs/circuit_ppo", argv, __doc__)


if __name__ == "__main__":
    main()
