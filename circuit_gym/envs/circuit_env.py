"""The single-agent circuit-discovery environment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from circuit_gym.ablation.engine import ABLATIONS, default_ablation
from circuit_gym.envs.features import FEATURE_BOUND, N_FEATURES, N_STATIC
from circuit_gym.envs.pool import Episode, shared_model, shared_pool
from circuit_gym.tasks import SPLITS, list_tasks
from circuit_gym.tasks.reference import REFERENCE_CHOICES

ORACLE_INFO_KEYS = ("task", "oracle_head", "oracle_reward", "oracle_recovery", "top1_hit", "per_head_reward")


class CircuitDiscoveryEnv(gym.Env):
    """Find the attention head whose ablation damages a task most, relative to ordinary text.

    ## Description
    Each episode draws a prompt batch of a task (induction, IOI, docstring, ...) from a
    finite seeded pool. The agent ablates attention heads one at a time; each ablation
    stays in place for the rest of the episode.

    ## Action space
    ``Discrete(n_layers * n_heads)``: the flat head id ``layer * n_heads + head``
    (144 actions for GPT-2 small, 16 for the embedded model).

    ## Observation space
    ``Box(-10, 10, (n_layers * n_heads, 12), float32)``: one row of features per head,
    computed from the clean run on this episode's prompts (attention to BOS / previous
    token / earlier copies / induction stripe, entropies, copying score, output norm,
    depth), plus whether the head is already ablated and the step fraction. See
    ``circuit_gym.envs.features`` for every feature. It carries no task identity and no
    answer labels.

    ## Rewards
    The marginal contrastive reward of the step: ``R(S + a) - R(S)`` where ``S`` is the set
    already ablated and ``R(S) = task_damage(S) - lam * general_damage(S)``. Task damage is
    the drop of the task metric on the prompts; general damage the rise of next-token loss
    on a fixed reference batch. Choosing an already ablated head is a no-op with reward 0.

    ## Episode end
    Terminated after ``episode_length`` steps (default 1: the single-head bottleneck).
    Never truncated.

    ## Info
    ``action_mask`` (int8, 1 = not yet ablated), ``task``, ``task_damage``,
    ``general_damage`` (of the whole ablated set), ``oracle_head`` / ``oracle_reward``
    (best single head of this batch, from an exhaustive sweep), ``oracle_recovery``
    (this step's reward / oracle reward; NaN when the oracle reward is not positive),
    ``top1_hit`` and ``per_head_reward`` (the full single-head table). Oracle fields come
    from the cached sweep; ``HideOracleInfo`` removes them for held-out evaluation.

    ## Arguments
    ``model`` ("toy", "gpt2" or a transformer_lens name), ``model_path``, ``tasks``
    (one or more registered task names; the reset picks uniformly), ``split``
    ("train"/"eval"/"test"), ``episode_length``, ``lam``, ``ablation``
    ("zero"/"mean"/"resample"; default: resample on the embedded model, zero on GPT-2),
    ``batch_size``, ``pool_size``, ``reference``, ``cache``.
    ``reset(options={"task": name})`` forces a task (any registered one) and
    ``reset(options={"batch_index": i})`` a batch of the pool (evaluation uses both).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, model: str = "toy", tasks: str | Sequence[str] = ("ioi",), split: str = "train",
                 episode_length: int = 1, lam: float = 1.0, ablation: str | None = None, batch_size: int = 8,
                 pool_size: int = 32, cache: bool = True, model_path: str | None = None,
                 reference: str | None = None, render_mode: str | None = None) -> None:  # fmt: skip
        tasks = (tasks,) if isinstance(tasks, str) else tuple(tasks)
        _check_choice("split", split, SPLITS)
        ablation = default_ablation(model) if ablation is None else ablation
        _check_choice("ablation", ablation, ABLATIONS)
        if reference is not None:
            _check_choice("reference", reference, REFERENCE_CHOICES)
        _check_choice("render_mode", render_mode, (None, *self.metadata["render_modes"]))
        if not tasks:
            raise ValueError(f"tasks must name at least one of {list_tasks()}")
        for t in tasks:
            _check_choice("tasks", t, tuple(list_tasks()))
        for name, value in (
            ("episode_length", episode_length),
            ("batch_size", batch_size),
            ("pool_size", pool_size),
        ):
            if not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not isinstance(lam, int | float) or not np.isfinite(lam) or lam < 0:
            raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
        if not isinstance(cache, bool):
            raise ValueError(f"cache must be True or False, got {cache!r}")

        self.model = shared_model(model, model_path)
        info = self.model.circuit_gym_info
        self.n_layers, self.n_heads, self.n_total = info.n_layers, info.n_heads, info.n_heads_total
        if episode_length > self.n_total:
            raise ValueError(
                f"episode_length must be <= {self.n_total} (the number of heads), got {episode_length}"
            )
        self.tasks, self.split, self.episode_length = tasks, split, int(episode_length)
        self.lam, self.ablation, self.cache = float(lam), ablation, cache
        self.batch_size, self.pool_size, self.reference = int(batch_size), int(pool_size), reference
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(self.n_total)
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, (self.n_total, N_FEATURES), np.float32
        )
        self._episode: Episode | None = None
        self._task = tasks[0]
        self._ablated: set[int] = set()
        self._steps = 0
        self._set_reward = 0.0
        self._damages = (0.0, 0.0)

    # ----------------------------------------------------------------- helpers
    def pool(self, task: str):
        return shared_pool(self.model, task, self.split, self.batch_size, self.pool_size, self.reference,
                           self.ablation, self.lam, self.cache)  # fmt: skip

    def _obs(self) -> np.ndarray:
        obs = np.empty((self.n_total, N_FEATURES), dtype=np.float32)
        obs[:, :N_STATIC] = self._episode.features
        obs[:, N_STATIC] = 0.0
        obs[list(self._ablated), N_STATIC] = 1.0
        obs[:, N_STATIC + 1] = self._steps / self.episode_length
        return obs

    @property
    def episode(self) -> Episode:
        """The current prompt batch with its task, oracle table and scorer (evaluator access)."""
        if self._episode is None:
            raise RuntimeError("call reset() first")
        return self._episode

    def action_mask(self) -> np.ndarray:
        mask = np.ones(self.n_total, dtype=np.int8)
        mask[list(self._ablated)] = 0
        return mask

    def _base_info(self) -> dict[str, Any]:
        return {"action_mask": self.action_mask(), "task": self._task, "batch_index": self._episode.index}

    def single_head_rewards(self, heads: Sequence[int]) -> np.ndarray:
        """Marginal reward of ablating each head from the current state (for best-of-k planning)."""
        out = []
        for h in heads:
            h = int(h)
            if h in self._ablated:
                out.append(0.0)
                continue
            td, gd = self._episode.damages(frozenset(self._ablated | {h}), self.cache)
            out.append(td - self.lam * gd - self._set_reward)
        return np.asarray(out, dtype=np.float64)

    # -------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        unknown = set(options) - {"task", "batch_index"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; allowed: 'task', 'batch_index'")
        task = options.get("task")
        if task is None:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        _check_choice("options['task']", task, tuple(list_tasks()))
        index = options.get("batch_index")
        if index is None:
            index = int(self.np_random.integers(self.pool_size))
        self._task = task
        self._episode = self.pool(task).episode(int(index))
        self._ablated, self._steps, self._set_reward = set(), 0, 0.0
        self._damages = (0.0, 0.0)
        return self._obs(), self._base_info()

    def step(self, action):
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be a head id in [0, {self.n_total}), got {action!r}")
        head = int(action)
        table = self._episode.table
        if head in self._ablated:
            reward = 0.0  # a no-op; the damages of the set are unchanged
        else:
            self._ablated.add(head)
            self._damages = self._episode.damages(frozenset(self._ablated), self.cache)
            new_total = self._damages[0] - self.lam * self._damages[1]
            reward, self._set_reward = new_total - self._set_reward, new_total
        self._steps += 1
        td, gd = self._damages
        oracle = table.oracle_reward
        info = self._base_info()
        info.update(
            task_damage=td, general_damage=gd, oracle_head=table.oracle_head, oracle_reward=oracle,
            oracle_recovery=reward / oracle if oracle > 0 else float("nan"),
            top1_hit=head == table.oracle_head, per_head_reward=table.reward.copy(),
        )  # fmt: skip
        terminated = self._steps >= self.episode_length
        return self._obs(), float(reward), terminated, False, info

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._episode is None:
            return None
        names = ", ".join(f"{h // self.n_heads}.{h % self.n_heads}" for h in sorted(self._ablated)) or "none"
        return f"task {self._task} batch {self._episode.index} step {self._steps}: ablated {names}, R={self._set_reward:.3f}"


def _check_choice(name: str, value, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
