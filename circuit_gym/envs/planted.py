"""The Planted environments: every episode on a freshly generated planted model.

``CircuitDiscovery-Planted-{Kind}-v0`` (single-head ablation) and
``CircuitDiscovery-Planted-{Kind}-Circuit-v0`` (circuit building): each reset draws a model
seed, generates that seed's planted model (``circuit_gym.models.planted``: a 12 x 12 model
whose circuits sit at seeded heads; written on first use to the disk cache, so a seed is
generated once per machine) and plays one episode of the kind's task on it.

Design: the model varying per reset is :class:`~circuit_gym.envs.model_draw.ModelDrawEnv`'s
job (one inner environment per model, the model drawn at reset); a planted family has no
finite model list, so :class:`PlantedEnv` draws a seed instead of a name and keeps only the
``INNER_CACHE`` most recently used inner environments (an evicted one is closed and its model
released, so a long run over fresh seeds holds a bounded number of models). The single-head
and circuit-building classes are used unchanged as the inner environments.

Info: ``info["model"]`` names the episode's model (``planted-v{VERSION}-{seed}``);
``info["planted_circuit"]`` (the kind's circuit: every head with its role and sign, and the
decoys) comes only with the step that ends the episode, or in every info with ``oracle=True``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from circuit_gym.envs.arguments import reset_options
from circuit_gym.envs.model_draw import ModelDrawEnv
from circuit_gym.envs.pool import release_model
from circuit_gym.models.planted.generator import check_seed, model_name, planted_checkpoint, truth_of
from circuit_gym.models.planted.versions import DEFAULT_VERSION, generator
from circuit_gym.tasks.planted import task_name

MODEL = "planted"
SEED_OPTION = "model_seed"
TRUTH_KEY = "planted_circuit"
INNER_CACHE = 4  # inner environments (and models) kept; the least recently used is dropped
SEED_SPACE = 2**31  # model seeds drawn when no seed list is given


class PlantedEnv(ModelDrawEnv):
    """The environment behind the ``CircuitDiscovery-Planted-*`` IDs: a family's environment (single-head
    or circuit building) on a planted model generated from a seed drawn at each reset.

    ## Description
    Circuit discovery where the answer is known exactly and no model repeats: each reset draws a
    model seed and generates that seed's planted model (``circuit_gym.models.planted``: a 12 x 12
    attention-only model whose weights are written, not trained; its circuit of the ID's kind sits
    at heads drawn from the seed, among decoys whose attention patterns look exactly like the
    circuit heads' and distractors; docs/planted.md), then plays one episode of the inner
    environment on the kind's task (``inner``: the single-head ``CircuitDiscoveryEnv`` or the
    circuit-building ``CircuitBuildingEnv``, whose pages say everything else). The observation
    never names the model: a policy that memorised some seeds' circuit heads gains nothing on
    another seed.

    ## Action Space
    The inner environment's (every planted model has GPT-2 small's 12 x 12 grid).

    ## Observation Space
    The inner environment's, computed on the episode's model.

    ## Rewards
    The inner environment's, on the episode's model (its tables are computed on first use of a
    seed, like any new model's).

    ## Starting State
    ``reset`` draws the model seed with ``self.np_random`` (uniformly from ``seeds``, default any
    seed in ``[0, 2**31)``) unless ``options["model_seed"]`` names one, generates the model (once
    per machine: written to the disk cache ``$CIRCUIT_GYM_CACHE/planted``), then resets the
    inner environment with a seed drawn from the same generator (the other options, ``task`` and
    ``batch_index``, go to it). ``reset(seed=k)`` makes the model and the episode a function of ``k``.

    ## Episode End
    As the inner environment's.

    ## Arguments
    ``seeds``: the model seeds to draw from (default: any); ``oracle``: the ground truth in every
    ``info`` (default ``False``); ``version``: the planted generator's version (default 2, a
    retired board's: docs/archive.md; 3 adds the ``self_repair`` and ``and`` kinds and states
    edges in the truth);
    ``inner``: ``"single-head"`` or ``"circuit"`` (set by the ID);
    ``ablation`` defaults to ``"resample"``; every other argument goes to the inner environment.

    ## Info
    The inner environment's, plus ``model``: the episode's model (``planted-v{VERSION}-{seed}``),
    and ``planted_circuit``: the kind's circuit (every head with its role and sign, and the
    decoys), **only in the info of the step that ends the episode** (or in every info with
    ``oracle=True``), so a policy that reads ``info`` during an episode learns nothing of the truth.

    ## Version History
    * v0: first release (issue 31), planted models of generator version 2; the ``version``
      argument (issue 41) builds generator version 3's models (default 2: unchanged).
    * v1 (issue 41): the IDs pin generator version 3 (``version=3``): its six kinds, ``SelfRepair``
      and ``And`` IDs among them; the v0 IDs keep version 2.

    Args:
        model: ``"planted"`` (the generated family; the registry passes it).
        tasks: one planted task, ``planted_{kind}`` with ``kind`` one of the generator version's kinds
            (``circuit_gym.models.planted.kinds_of(version)``).
        inner: the environment family, ``"single-head"`` or ``"circuit"`` (circuit building).
        seeds: the model seeds to draw from (uniformly); default: any seed in ``[0, 2**31)``.
        oracle: put the ground truth in every ``info``, not only at the end of the episode.
        inner_cache: inner environments (and models) kept, the least recently used dropped first
            (a trainer cycling over a fixed seed list keeps them all).
        version: the planted generator's version (``circuit_gym.models.planted.VERSIONS``).
        **kwargs: every other argument of the inner family's environment (``split``,
            ``pool_size``, ``features``, ...); ``ablation`` defaults to ``"resample"`` (every
            planted task has counterfactual prompts).

    ``reset(options={"model_seed": s})`` plays on seed ``s``; ``reset(seed=k)`` makes the seed
    drawn and the episode a function of ``k``.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, model: str = MODEL, tasks: str | Sequence[str] = ("planted_induction",),
                 inner: str = "single-head", seeds: Sequence[int] | None = None, oracle: bool = False,
                 inner_cache: int = INNER_CACHE, version: int = DEFAULT_VERSION, **kwargs: Any) -> None:  # fmt: skip
        from gymnasium.envs.registration import load_env_creator

        from circuit_gym.envs.registration import FAMILIES

        if model != MODEL:
            raise ValueError(f"model must be {MODEL!r} (a model generated per seed), got {model!r}")
        tasks = (tasks,) if isinstance(tasks, str) else tuple(tasks)
        self.version = generator(version).version  # refuses an unknown version
        by_task = {task_name(k): k for k in generator(version).kinds}
        if len(tasks) != 1 or tasks[0] not in by_task:
            raise ValueError(f"tasks must be one of {sorted(by_task)}, got {list(tasks)}")
        kind = by_task[tasks[0]]
        if inner not in FAMILIES:
            raise ValueError(f"inner must be one of {sorted(FAMILIES)}, got {inner!r}")
        if seeds is not None:
            seeds = tuple(check_seed(s) for s in seeds)
            if not seeds:
                raise ValueError("seeds must name at least one model seed (or be None: any seed)")
        if not isinstance(oracle, bool):
            raise ValueError(f"oracle must be True or False, got {oracle!r}")
        if isinstance(inner_cache, bool) or not isinstance(inner_cache, int) or inner_cache < 1:
            raise ValueError(f"inner_cache must be an int >= 1, got {inner_cache!r}")
        if "model_path" in kwargs:
            raise ValueError("model_path is set by the seed of each episode; it cannot be given")
        kwargs.setdefault("ablation", "resample")
        self.kind, self.task, self.inner_family = kind, task_name(kind), inner
        self.seeds, self.oracle, self.inner_cache = seeds, oracle, inner_cache
        self._creator = load_env_creator(FAMILIES[inner].entry_point)
        self._kwargs = kwargs
        self._inner: OrderedDict[str, gym.Env] = OrderedDict()
        self._paths: dict[str, str] = {}
        self._model: str | None = None
        self._seed: int | None = None
        self.adopt_interface(self.inner_for(seeds[0] if seeds else 0))

    def inner_for(self, seed: int) -> gym.Env:
        """The inner environment of the model of ``seed`` (built on first use, least recently
        used first out)."""
        name = model_name(seed, self.version)
        if name in self._inner:
            self._inner.move_to_end(name)
            return self._inner[name]
        path, _ = planted_checkpoint(seed, self.version)
        env = self._creator(model=name, model_path=str(path), tasks=(self.task,), **self._kwargs)
        self._inner[name], self._paths[name] = env, str(path)
        while len(self._inner) > self.inner_cache:
            old, dropped = self._inner.popitem(last=False)
            dropped.close()
            release_model(old, self._paths.pop(old), self._kwargs.get("device", "cpu"))
        return env

    def _truth(self) -> dict:
        return truth_of(self._seed, self.version).to_json(self.kind)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        gym.Env.reset(self, seed=seed)
        options = reset_options(options)
        model_seed = options.pop(SEED_OPTION, None)
        if model_seed is None:
            pick = int(self.np_random.integers(len(self.seeds) if self.seeds else SEED_SPACE))
            model_seed = self.seeds[pick] if self.seeds else pick
        env = self.inner_for(check_seed(model_seed))
        self._model, self._seed = model_name(model_seed, self.version), int(model_seed)
        obs, info = env.reset(seed=int(self.np_random.integers(2**31)), options=options or None)
        info = {**info, "model": self._model}
        if self.oracle:
            info[TRUTH_KEY] = self._truth()
        return obs, info

    def step(self, action) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        if self.oracle or terminated or truncated:
            info[TRUTH_KEY] = self._truth()
        return obs, reward, terminated, truncated, info
