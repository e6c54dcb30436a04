"""An environment over several models: each reset draws the model, then the episode.

Held-out *models* are what the benchmark scores, so an environment must be able to serve
episodes of many models of one head grid (the model zoo, later planted models). Rather
than teaching every environment class about model lists, :class:`ModelDrawEnv` holds one
inner environment per model (built on first use, so an unused model is never loaded) and
delegates to the one each reset draws. Every inner environment keeps its own pools,
observations, oracle tables and caches, which are per model by construction.

A task a model does not perform (it fails the model's inclusion gate) is never served on
that model: pass ``tasks_of`` to restrict each model's tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from circuit_gym.envs.arguments import reset_options

MODEL_OPTION = "model"
# Settings of the circuit-building family, the same on every inner model, that wrappers read
# from ``env.unwrapped`` (``circuit_ppo.AreaReward``: the STOP action and the per-head cost).
CIRCUIT_SETTINGS = ("stop_action", "alpha")


class ModelDrawEnv(gym.Env):
    """Draw a model at each reset (uniformly, or ``reset(options={"model": name})``), then play
    one episode of the inner environment built for it.

    Args:
        make_inner: ``make_inner(model_name, tasks)`` builds the environment of one model
            (a single-head or circuit-building environment with everything but the model fixed).
        models: names of the models to draw from; all must share one head grid. A model that
            performs none of ``tasks`` is left out (``self.models`` lists the ones drawn).
        tasks: the tasks requested; each model serves those it performs (``tasks_of``).
        tasks_of: ``tasks_of(model_name)`` -> the tasks that model performs (its gate);
            default: every requested task on every model.

    ``info["model"]`` names the episode's model. Seeding: ``reset(seed=s)`` seeds the draw,
    and the inner environment is reset with a seed drawn from the same generator, so an
    episode is a function of ``s`` alone.
    """

    def __init__(self, make_inner: Callable[[str, tuple[str, ...]], gym.Env], models: Sequence[str],
                 tasks: Sequence[str], tasks_of: Callable[[str], Sequence[str]] | None = None) -> None:  # fmt: skip
        models, tasks = tuple(models), tuple(tasks)
        if not models:
            raise ValueError("models must name at least one model")
        if len(set(models)) != len(models):
            raise ValueError(f"models must be distinct, got {list(models)}")
        served = {m: tuple(t for t in tasks if tasks_of is None or t in set(tasks_of(m))) for m in models}
        served = {m: ts for m, ts in served.items() if ts}  # a model that performs none is never drawn
        if not served:
            raise ValueError(
                f"models {list(models)} perform none of the tasks {list(tasks)} (their inclusion gate)"
            )
        self.models, self.tasks, self.served = tuple(served), tasks, served
        self._make_inner = make_inner
        self._inner: dict[str, gym.Env] = {}
        # the first model *served*: models[0] may perform none of the tasks (a zoo v2 member's gate)
        first = self.inner(self.models[0])
        self.adopt_interface(first)
        self.metadata = dict(first.metadata)
        self._model: str | None = None

    def adopt_interface(self, first: gym.Env) -> None:
        """Take the spaces, render mode and circuit settings of one inner environment (every inner
        one shares them): what a caller or wrapper reads from this environment itself."""
        self.action_space, self.observation_space = first.action_space, first.observation_space
        self.render_mode = getattr(first, "render_mode", None)
        for name in CIRCUIT_SETTINGS:
            if hasattr(first.unwrapped, name):
                setattr(self, name, getattr(first.unwrapped, name))

    def inner(self, model: str) -> gym.Env:
        """The environment of ``model`` (built on first use; its spaces must match the others')."""
        if model not in self.served:
            raise ValueError(f"model must be one of {list(self.models)}, got {model!r}")
        if model not in self._inner:
            env = self._make_inner(model, self.served[model])
            if self._inner and (env.action_space != self.action_space
                                or env.observation_space != self.observation_space):  # fmt: skip
                env.close()
                raise ValueError(f"model {model!r} has another head grid than {self.models[0]!r}")
            self._inner[model] = env
        return self._inner[model]

    @property
    def current(self) -> gym.Env:
        """The inner environment of the current episode."""
        if self._model is None:
            raise RuntimeError("call reset() first")
        return self._inner[self._model]

    def action_masks(self) -> np.ndarray:
        return self.current.unwrapped.action_masks()

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        options = reset_options(options)
        model = options.pop(MODEL_OPTION, None)
        if model is None:
            model = self.models[int(self.np_random.integers(len(self.models)))]
        task = options.get("task")
        if task is not None and task not in self.served.get(model, ()):
            raise ValueError(
                f"task {task!r} is not served on model {model!r}: it serves {list(self.served[model])}"
            )
        env = self.inner(model)
        self._model = model
        obs, info = env.reset(seed=int(self.np_random.integers(2**31)), options=options or None)
        return obs, {**info, MODEL_OPTION: model}

    def step(self, action) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.current.step(action)
        return obs, reward, terminated, truncated, {**info, MODEL_OPTION: self._model}

    def render(self):
        return self.current.render() if self._model is not None else None

    def close(self) -> None:
        for env in self._inner.values():
            env.close()
        self._inner.clear()


def per_model(env: gym.Env) -> dict[str | None, gym.Env]:
    """The single-model environments behind ``env``: ``{model: its inner environment}`` for every
    model a :class:`ModelDrawEnv` draws (built now if not yet), ``{None: env}`` for any other
    environment. What must visit every (model, task) cell once, such as a trainer's warm-up or
    its checkpoint selection, iterates this instead of the draw."""
    base = env.unwrapped
    if isinstance(base, ModelDrawEnv):
        return {model: base.inner(model) for model in base.models}
    return {None: env}


class ZooEnv(ModelDrawEnv):
    """The environment behind the ``CircuitDiscovery-Zoo-*`` IDs: a family's environment (single-head
    or circuit building) over a set of models, each episode on a model drawn at reset.

    ## Description
    Circuit discovery on models the agent has not seen: each reset draws one member of a model
    set (the public zoo: 12 x 12 models trained by one recipe whose circuits sit at drawn depths,
    docs/zoo.md), then plays one episode of the inner environment on it (``inner``: the
    single-head ``CircuitDiscoveryEnv`` or the circuit-building ``CircuitBuildingEnv``, whose
    pages say everything else). The observation never names the model, so a policy that
    memorised one model's head ids gains nothing here; one that reads what heads do transfers.

    ## Action Space
    The inner environment's: every member has GPT-2 small's 12 x 12 grid, so the spaces agree
    (a model of another grid is refused).

    ## Observation Space
    The inner environment's, computed on the drawn member.

    ## Rewards
    The inner environment's, on the drawn member (its tables and caches are per model).

    ## Starting State
    ``reset`` draws the member uniformly with ``self.np_random`` unless ``options["model"]`` names
    one, then resets that member's environment with a seed drawn from the same generator (the
    other options, ``task`` and ``batch_index``, go to it). A member serves only the tasks its
    inclusion gate admits (its model card); a member that performs none of the ID's tasks is
    never drawn.

    ## Episode End
    As the inner environment's.

    ## Arguments
    ``model``: a model set (``"zoo"``, ``"zoo-v2"``) or a list of model names; ``inner``: ``"single-head"`` or
    ``"circuit"``; ``tasks``; every other argument goes to the inner environment.

    ## Info
    The inner environment's, plus ``model``: the drawn member's name.

    ## Version History
    * v0: first release, over the public zoo's members (``Zoo`` IDs: zoo v1, ``zoo1``-``zoo4``;
      its board retired: docs/archive.md).
    * ``ZooV2`` IDs, v0: the same environment over zoo v2 (``zoo5``-``zoo8``; its board retired:
      docs/archive.md); the ``Zoo`` IDs keep drawing zoo v1.
    * ``ZooV3`` IDs, v0 (issue 55): the same environment over zoo v3 (``zoo9``-``zoo12``), the public
      models of benchmark v8, the board in force.

    Args:
        model: a model set of ``circuit_gym.embedded.MODEL_SETS`` (``"zoo"``: the public zoo) or a
            sequence of model names.
        tasks: the tasks requested; each model serves those it passes its inclusion gate on
            (its card, ``circuit_gym.models.cards.gated_tasks``).
        inner: the family of the per-model environments (``"single-head"`` or ``"circuit"``).
        **kwargs: every other argument of that family's environment (split, pool_size, ...).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, model: str | Sequence[str] = "zoo", tasks: str | Sequence[str] = ("ioi",),
                 inner: str = "single-head", **kwargs: Any) -> None:  # fmt: skip
        from gymnasium.envs.registration import load_env_creator

        from circuit_gym.embedded import model_set
        from circuit_gym.envs.registration import FAMILIES
        from circuit_gym.models.cards import gated_tasks

        if inner not in FAMILIES:
            raise ValueError(f"inner must be one of {sorted(FAMILIES)}, got {inner!r}")
        models = model_set(model) if isinstance(model, str) else tuple(model)
        tasks = (tasks,) if isinstance(tasks, str) else tuple(tasks)
        creator = load_env_creator(FAMILIES[inner].entry_point)
        self.inner_family = inner
        super().__init__(
            lambda m, ts: creator(model=m, tasks=ts, **kwargs), models, tasks, tasks_of=gated_tasks
        )
