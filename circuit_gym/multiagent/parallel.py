"""Multi-agent circuit discovery: one agent per layer, heads ablated jointly.

Single-head ablation cannot see backup heads: when a head is ablated, another may take
over its job. Several agents ablating at once can find such redundant pairs.

## Agents
``layer_0`` ... ``layer_{L-1}``. Each step every agent picks one head of its own layer
or ``none`` (action ``n_heads``); all picks are ablated jointly and stay ablated for the
rest of the episode.

## Spaces
Action: ``Discrete(n_heads + 1)`` per agent. Observation: ``Box(-10, 10, (n_heads * 12 +
n_layers + 1,), float32)``: the 12 per-head features of the agent's own layer (as in the
single-agent environment; no task identity), then the fraction of each layer's heads
currently ablated, then the step fraction.

## Reward
Shared by all agents: the marginal contrastive reward of the joint ablation,
``R(S_new) - R(S_old)``, minus ``head_cost`` per newly ablated head.

## Episode end
All agents terminate after ``episode_length`` steps (default 1).

## Info (per agent)
``oracle_head`` / ``oracle_reward`` (best single head of the batch), ``joint_reward``
(``R`` of the current set), ``sum_of_single_rewards`` of the heads in the set, and
``redundancy`` = joint minus sum: positive when the heads together do more damage than
single ablations show (a redundancy that single-head ablation hides).
"""

from __future__ import annotations

import functools

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

from circuit_gym.ablation.contrastive import contrastive_reward
from circuit_gym.ablation.engine import check_ablation, default_ablation
from circuit_gym.envs.arguments import reset_options
from circuit_gym.envs.features import FEATURE_BOUND, N_FEATURES, N_STATIC
from circuit_gym.envs.pool import shared_model, shared_pool
from circuit_gym.heads import head_name
from circuit_gym.tasks import SPLITS, list_tasks


class CircuitParallelEnv(ParallelEnv):
    metadata = {"name": "circuit_discovery_v0", "render_modes": ["ansi"]}

    def __init__(self, model: str = "toy", task: str = "ioi", split: str = "train", episode_length: int = 1,
                 lam: float = 1.0, ablation: str | None = None, head_cost: float = 0.0, batch_size: int = 8,
                 pool_size: int = 32, cache: bool = True, model_path: str | None = None,
                 reference: str | None = None, render_mode: str | None = None) -> None:  # fmt: skip
        if task not in list_tasks():
            raise ValueError(f"task must be one of {list_tasks()}, got {task!r}")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {list(SPLITS)}, got {split!r}")
        if not np.isfinite(head_cost) or head_cost < 0:
            raise ValueError(f"head_cost must be a finite number >= 0, got {head_cost!r}")
        if episode_length < 1:
            raise ValueError(f"episode_length must be >= 1, got {episode_length!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        ablation = check_ablation(default_ablation(model) if ablation is None else ablation)
        self.model = shared_model(model, model_path)
        info = self.model.circuit_gym_info
        self.n_layers, self.n_heads = info.n_layers, info.n_heads
        self.pool = shared_pool(
            self.model, task, split, batch_size, pool_size, reference, ablation, lam, cache
        )
        self.task, self.lam, self.head_cost, self.cache = task, float(lam), float(head_cost), cache
        self.episode_length, self.render_mode = int(episode_length), render_mode
        self.possible_agents = [f"layer_{i}" for i in range(self.n_layers)]
        self.agents: list[str] = []
        self._rng = np.random.default_rng()
        self._episode = None
        self._ablated: set[int] = set()
        self._steps, self._joint = 0, 0.0

    @functools.cache  # noqa: B019  (the spaces must be the same objects on every call)
    def observation_space(self, agent: str) -> gymnasium.spaces.Box:
        size = self.n_heads * N_FEATURES + self.n_layers + 1
        return gymnasium.spaces.Box(-FEATURE_BOUND, FEATURE_BOUND, (size,), np.float32)

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> gymnasium.spaces.Discrete:
        return gymnasium.spaces.Discrete(self.n_heads + 1)  # the last action is "none"

    # --------------------------------------------------------------- internals
    def _observations(self) -> dict[str, np.ndarray]:
        feats = np.zeros((self.n_layers * self.n_heads, N_FEATURES), dtype=np.float32)
        feats[:, :N_STATIC] = self._episode.features
        feats[list(self._ablated), N_STATIC] = 1.0
        feats[:, N_STATIC + 1] = self._steps / self.episode_length
        per_layer = np.zeros(self.n_layers, dtype=np.float32)
        for h in self._ablated:
            per_layer[h // self.n_heads] += 1.0 / self.n_heads
        out = {}
        for i, agent in enumerate(self.possible_agents):
            own = feats[i * self.n_heads : (i + 1) * self.n_heads].ravel()
            out[agent] = np.concatenate([own, per_layer, [self._steps / self.episode_length]]).astype(
                np.float32
            )
        return out

    def _joint_reward(self, heads: set[int]) -> float:
        td, gd = self._episode.damages(frozenset(heads), self.cache)
        return float(contrastive_reward(td, gd, self.lam))

    def _infos(self) -> dict[str, dict]:
        table = self._episode.table
        singles = float(sum(table.reward[h] for h in self._ablated))
        shared = {
            "oracle_head": table.oracle_head, "oracle_reward": table.oracle_reward, "joint_reward": self._joint,
            "sum_of_single_rewards": singles, "redundancy": self._joint - singles,
            "ablated": sorted(self._ablated), "batch_index": self._episode.index,
        }  # fmt: skip
        return {a: dict(shared) for a in self.agents}

    # ------------------------------------------------------------------ API
    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        index = reset_options(options).get("batch_index")
        index = int(self._rng.integers(self.pool.pool_size)) if index is None else int(index)
        self._episode = self.pool.episode(index)
        self.agents = list(self.possible_agents)
        self._ablated, self._steps, self._joint = set(), 0, 0.0
        return self._observations(), self._infos()

    def step(self, actions: dict[str, int]):
        if not self.agents:
            raise RuntimeError("the episode is over; call reset()")
        new = set()
        for agent, action in actions.items():
            if agent not in self.agents:
                raise ValueError(f"unknown or finished agent {agent!r}")
            if not self.action_space(agent).contains(action):
                raise ValueError(f"{agent}: action must be in [0, {self.n_heads}], got {action!r}")
            if int(action) < self.n_heads:
                head = int(agent.split("_")[1]) * self.n_heads + int(action)
                if head not in self._ablated:
                    new.add(head)
        self._ablated |= new
        joint = self._joint_reward(self._ablated) if new else self._joint
        reward = joint - self._joint - self.head_cost * len(new)
        self._joint = joint
        self._steps += 1
        done = self._steps >= self.episode_length
        observations, infos = self._observations(), self._infos()
        rewards = {a: float(reward) for a in self.agents}
        terminations = {a: done for a in self.agents}
        truncations = {a: False for a in self.agents}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._episode is None:
            return None
        names = ", ".join(head_name(h, self.n_heads) for h in sorted(self._ablated)) or "none"
        return f"{self.task} batch {self._episode.index} step {self._steps}: ablated {names}, R={self._joint:.3f}"

    def close(self) -> None:
        pass
