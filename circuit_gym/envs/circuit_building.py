"""Circuit building as sequential decisions: add heads to a circuit until STOP, rewarded by faithfulness."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces

from circuit_gym.circuits import Circuit, CircuitRunner, faithfulness
from circuit_gym.envs.arguments import (
    check_action,
    check_choice,
    check_count,
    check_step_order,
    check_weight,
    common_arguments,
    reset_choice,
    shared_docs,
)
from circuit_gym.envs.causal_features import CircuitCausalState, episode_causal
from circuit_gym.envs.features import CIRCUIT_FEATURE_SETS, DEFAULT_FEATURES, FEATURE_BOUND, N_STATIC
from circuit_gym.envs.head_env import HeadEnv
from circuit_gym.envs.memo import memoised
from circuit_gym.envs.pool import EnvPools, Episode, shared_model
from circuit_gym.envs.render import render_grid
from circuit_gym.heads import head_name

STARTS = ("empty", "full")
# Observation columns after the static per-head features.
MEMBER_COLUMN = N_STATIC  # 1 if the head is in the current circuit
FAITHFULNESS_COLUMN = N_STATIC + 1  # f(current circuit), the same in every row
BUDGET_COLUMN = N_STATIC + 2  # heads changed so far / budget, the same in every row
N_CIRCUIT_FEATURES = N_STATIC + 3
# Passes an episode needs before its first decision: the clean pass the features read, the
# runner's clean and counterfactual passes, and the empty circuit (m(empty) of faithfulness).
SETUP_PASSES = 4
# Fields computed from the exact candidate table of the step (HideOracleInfo-style wrappers drop them).
CIRCUIT_ORACLE_INFO_KEYS = (
    "task", "oracle_head", "oracle_gain", "oracle_reward", "oracle_action", "top1_hit", "per_head_gain",
)  # fmt: skip


@dataclass
class CircuitEpisode:
    """One prompt batch's circuit runner, ``m(empty)`` and memoised circuit metrics.

    Built once per pool episode (:meth:`Episode.derived`) and freed with it."""

    episode: Episode
    runner: CircuitRunner
    empty_metric: float
    memo: dict[frozenset[int], float] = field(default_factory=dict)
    gains: dict[tuple[str, frozenset[int]], np.ndarray] = field(default_factory=dict)

    @property
    def full_metric(self) -> float:
        return self.runner.full_metric

    def faithfulness(self, metrics: np.ndarray | float) -> np.ndarray | float:
        return faithfulness(metrics, self.empty_metric, self.full_metric)

    def metrics(self, head_sets: Sequence[frozenset[int]], use_memo: bool,
                evaluate: Callable[[list[frozenset[int]]], np.ndarray] | None = None) -> np.ndarray:  # fmt: skip
        """``m(C)`` of each head set, the ones not memoised run in one stacked pass (by
        ``evaluate(todo)`` instead when given: an outside evaluator of the same numbers, e.g.
        ``baselines.circuit_ray``'s Ray workers)."""
        runner = self.runner

        def run(todo: list[frozenset[int]]) -> np.ndarray:
            return runner.metric([Circuit(h, runner.n_layers, runner.n_heads) for h in todo])

        return memoised(self.memo if use_memo else {}, head_sets, evaluate or run)


def circuit_episode(episode: Episode) -> CircuitEpisode:
    """The circuit state of a pool episode, built once and kept with the episode, as long as
    its pool lives (the runner shares the single-head environment's task engine, so its clean
    and counterfactual passes run once)."""
    return episode.derived("circuit", _build_circuit_episode)


def _build_circuit_episode(episode: Episode) -> CircuitEpisode:
    runner = CircuitRunner(episode.task_engine)
    empty = Circuit.empty(runner.n_layers, runner.n_heads)
    state = CircuitEpisode(episode, runner, float(runner.metric([empty])[0]))
    if not state.full_metric != state.empty_metric:
        raise RuntimeError(
            f"task {episode.pool.task.name!r} batch {episode.index}: m(full) == m(empty) "
            f"({state.full_metric}); faithfulness is undefined on this batch"
        )
    return state


@shared_docs
class CircuitBuildingEnv(HeadEnv):
    """Build a circuit head by head: which small set of heads carries the task's behaviour?

    ## Description
    Each episode draws one prompt batch of a task (as the single-head environment
    :class:`~circuit_gym.envs.circuit_env.CircuitDiscoveryEnv` does, from the same seeded
    pools) and a circuit: a set of attention heads that keep their clean output while every
    other head is ablated (``circuit_gym.circuits``). By default the circuit starts empty and
    each action adds one head; the agent says STOP when the circuit is good enough. The
    quality of a circuit ``C`` is its faithfulness (MIB's definition,
    ``circuit_gym.circuits.faithfulness``)::

        f(C) = (m(C) - m(empty)) / (m(full) - m(empty))

    with ``m`` the task metric averaged over the batch: 0 = no better than ablating every
    head, 1 = the full model. The observation never names the task.

    ## Action Space
    ``Discrete(n_layers * n_heads + 1)``: the flat head id ``layer * n_heads + head`` adds that
    head (removes it with ``start="full"``); the last action, ``n_layers * n_heads`` (145 on
    the 12 x 12 models, 17 on ``"tiny"``), is STOP. ``info["action_mask"]`` (int8, length
    ``n + 1``) marks the legal actions: heads not yet in the circuit (with ``start="full"``:
    heads still in it) and STOP, always. A masked head is a no-op with reward 0 that still
    uses a step of the budget. ``action_masks()`` returns the mask as booleans (sb3-contrib's
    ``MaskablePPO`` reads it). An action is one integer (a Python or numpy integer); anything else
    is a ``TypeError``.

    ## Observation Space
    ``Box(-10, 10, (n_layers * n_heads, 13), float32)``: one row per head. Columns 0-9 are the
    task-free per-head features of the single-head environment, computed once per episode
    from the clean run (``circuit_gym.envs.features``); column 10 is 1 for heads in the
    current circuit; column 11 is the current circuit's faithfulness (clipped to [-10, 10]);
    column 12 the fraction of the budget used. Columns 11 and 12 are the same in every row.
    With ``features="causal"`` the shape is ``(n_layers * n_heads, 20)``: columns 13-19 add each
    head's attribution-patching and EAP-IG scores under the model's own top-1 vs top-2 margin
    (a task-free metric), its position in the circuit, the change of faithfulness the last
    action made, the circuit's faithfulness under the margin metric and its last change, and
    the steps the budget still allows (``circuit_gym.envs.features`` documents each column).

    ## Rewards
    The change of the objective ``J(C) = f(C) - alpha * |C|``: adding head ``h`` gives
    ``f(C + h) - f(C) - alpha``; removing it (``start="full"``) gives
    ``f(C - h) - f(C) + alpha``; STOP and no-ops give 0. Faithfulness is unitless (a
    fraction of the full model's behaviour), so ``alpha`` is in **faithfulness units per
    head**: a head is worth adding when it raises ``f`` by more than ``alpha``. An episode's
    rewards add up to ``J(final) - J(start)``.

    ## Starting State
    ``reset`` picks the task uniformly from ``tasks`` unless ``options["task"]`` names one,
    then a batch uniformly from the task's pool unless ``options["batch_index"]`` gives one;
    both with ``self.np_random`` (seeded by ``reset(seed=...)``). Batch ``i`` of a pool is
    always the same prompts. The circuit is empty (``start="empty"``, the default) or holds
    every head (``start="full"``).

    Why empty by default: the circuits a user wants, and those that decide MIB's CPR at its
    small sizes, have a few heads out of 144; from empty they are a few decisions away, from
    full more than a hundred removals away. An episode's order of insertion is then directly
    a ranking, most important head first (``baselines.circuit_solvers``).

    ## Episode End
    Terminated at STOP, when ``budget`` steps have been taken (so the circuit has at most
    ``budget`` heads from empty, at least ``n - budget`` from full), or when no head is left to
    add (remove). Never truncated by the environment itself.
    {call_order}

    ## Arguments
    {common_arguments}
    | `start` | `"empty"` (actions add heads) or `"full"` (actions remove heads) | `"empty"` |
    | `alpha` | cost per head in the reward, faithfulness units per head, >= 0 | `0.01` |
    | `budget` | most steps (heads added or removed) per episode, 1 to the number of heads | `16` (at most the number of heads) |
    | `ablation` | `"zero"`, `"mean"` or `"resample"`: what replaces an ablated head's output | `"resample"` on embedded models, `"zero"` otherwise |
    | `batch_size` | prompts per batch | `8` |
    | `pool_size` | batches per task and split | `32` |
    | `cache` | memoise circuit metrics and candidate tables per episode | `True` |
    | `model_path` | directory of the model's weights | `None` (the loader's search) |
    | `render_mode` | `None`, `"ansi"` (one line of text) or `"rgb_array"` (the layer x head grid) | `None` |
    | `oracle_info` | compute the step's exact oracle (one stacked pass over the candidates) | `True` |
    | `device` | torch device of the model | `"cpu"` |
    | `features` | observation columns: `"attention"` (13) or `"causal"` (20) | `"attention"` |

    ## Info
    Every ``reset`` and ``step``: ``faithfulness`` (exact ``f`` of the current circuit, float),
    ``circuit_size``, ``action_mask``, ``task``, ``batch_index``, and two cumulative counters of
    forward passes of the batch in this episode (a stacked pass of ``k`` circuits counts
    ``k``; counted as if nothing were memoised, so they measure cost, not cache luck):
    ``forward_passes`` — what the observations and rewards need (:data:`SETUP_PASSES` at
    reset, then one per step that changes the circuit); ``oracle_forward_passes`` — the
    candidate tables computed (one pass per candidate, once per circuit state). With
    ``features="causal"``, ``forward_passes`` includes every pass the causal columns cost (their
    backward passes too, as the circuit track counts attribution insertion's) and
    ``feature_passes`` (``{"forward", "partial", "backward"}``) itemises what they cost.

    Unless ``oracle_info=False``, every ``step`` adds the oracle **of the state before the
    step**, computed exactly (every candidate circuit run in one stacked pass):

    - ``per_head_gain``: ``f(C +- h) - f(C)`` for each legal head ``h``, NaN elsewhere;
    - ``oracle_head`` / ``oracle_gain``: the head whose change raises ``f`` most, and by how much;
    - ``oracle_reward``: its reward (``oracle_gain`` -+ ``alpha``); ``oracle_action``: the
      oracle head if that reward is positive, STOP otherwise;
    - ``top1_hit``: the action was ``oracle_head``.

    ## Version History
    * v0: first release (issue 22). Bug fixes of Gymnasium's contract since, without a version
      bump: ``step`` after the episode ended raises ``ResetNeededError`` (after STOP it used to
      return ``terminated=False`` and keep building), so does ``step`` before ``reset`` (a
      ``RuntimeError`` as before); an action of the wrong type is a ``TypeError`` (it was a range
      message); ``spec.max_episode_steps`` is set (the number of heads); ``action_masks()``.
    """

    def __init__(self, model: str = "toy", tasks: str | Sequence[str] = ("ioi",), split: str = "train",
                 start: str = "empty", alpha: float = 0.01, budget: int = 16, ablation: str | None = None,
                 batch_size: int = 8, pool_size: int = 32, cache: bool = True, model_path: str | None = None,
                 render_mode: str | None = None, oracle_info: bool = True, device: str = "cpu",
                 features: str = DEFAULT_FEATURES) -> None:  # fmt: skip
        tasks, ablation = common_arguments(model, tasks, split, ablation, batch_size, pool_size, cache, oracle_info,
                                           render_mode, self.metadata["render_modes"])  # fmt: skip
        check_choice("start", start, STARTS)
        check_choice("features", features, tuple(CIRCUIT_FEATURE_SETS))
        budget = check_count("budget", budget)
        alpha = check_weight("alpha", alpha, "faithfulness per head")

        self.model = shared_model(model, model_path, device)
        info = self.model.circuit_gym_info
        self.n_layers, self.n_heads, self.n_total = info.n_layers, info.n_heads, info.n_heads_total
        self.stop_action = self.n_total
        self.budget = min(int(budget), self.n_total)
        self.tasks, self.split, self.start = tasks, split, start
        self.alpha, self.ablation, self.cache = float(alpha), ablation, cache
        self.batch_size, self.pool_size = int(batch_size), int(pool_size)
        self.render_mode = render_mode
        self.oracle_info = oracle_info  # public, so wrappers can switch the oracle off
        self.action_space = spaces.Discrete(self.n_total + 1)
        self.features = features
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, (self.n_total, len(CIRCUIT_FEATURE_SETS[features])), np.float32
        )
        self._causal: CircuitCausalState | None = None
        # The pools this environment uses, held while it lives (freed with it); lam=1 and the
        # model's reference: the single-head environment's pools of the same settings.
        self._pools = EnvPools(self.model, self.split, self.batch_size, self.pool_size, None, self.ablation,
                               1.0, self.cache)  # fmt: skip
        self._state: CircuitEpisode | None = None
        self._over = False  # the episode ended: step() needs a reset() first
        self._task = tasks[0]
        self._circuit: frozenset[int] = frozenset()
        self._order: list[int] = []  # heads changed, in order
        self._steps = 0
        self._f = 0.0
        self._passes = 0
        self._oracle_passes = 0
        self._tables_counted: set[frozenset[int]] = set()
        self._last_action: int | None = None
        self._last_gains: np.ndarray | None = None

    # ----------------------------------------------------------------- state
    def pool(self, task: str):
        """The task's episode pool, shared with the single-head environment of the same settings."""
        return self._pools.get(task)

    @property
    def state(self) -> CircuitEpisode:
        """The current batch's runner and memo (evaluator access)."""
        if self._state is None:
            raise RuntimeError("call reset() first")
        return self._state

    @property
    def circuit(self) -> Circuit:
        """The current circuit."""
        return Circuit(self._circuit, self.n_layers, self.n_heads)

    @property
    def order(self) -> list[int]:
        """The heads added (removed, from full) so far, in order."""
        return list(self._order)

    @property
    def current_faithfulness(self) -> float:
        return self._f

    @property
    def task(self) -> str:
        return self._task

    def _adding(self) -> bool:
        return self.start == "empty"

    def candidates(self) -> list[int]:
        """The heads an action may change now: not in the circuit (from empty), in it (from full)."""
        inside = self._circuit
        return [h for h in range(self.n_total) if (h not in inside) == self._adding()]

    def action_mask(self) -> np.ndarray:
        mask = np.zeros(self.n_total + 1, dtype=np.int8)
        if self._steps < self.budget:
            mask[self.candidates()] = 1
        mask[self.stop_action] = 1
        return mask

    def _changed(self, heads: frozenset[int], head: int) -> frozenset[int]:
        return heads | {head} if self._adding() else heads - {head}

    def candidate_gains(
        self, metrics: Callable[[list[frozenset[int]]], np.ndarray] | None = None
    ) -> np.ndarray:
        """``f(C +- h) - f(C)`` of every legal head ``h`` of the current state (NaN elsewhere):
        every candidate circuit run in one stacked pass, memoised per circuit state with ``cache``.
        Counted in ``oracle_forward_passes`` once per state (one pass per candidate).
        ``metrics(head_sets)``, when given, returns ``m(C)`` of the candidates not memoised in
        place of the stacked pass (see :meth:`CircuitEpisode.metrics`)."""
        state = self.state
        key = (self.start, self._circuit)
        gains = state.gains.get(key) if self.cache else None
        free = self.candidates()
        if gains is None:
            gains = np.full(self.n_total, np.nan)
            if free:
                sets = [self._changed(self._circuit, h) for h in free]
                f = state.faithfulness(state.metrics(sets, self.cache, metrics))
                gains[free] = np.asarray(f) - self._f
            if self.cache:
                state.gains[key] = gains
        if self._circuit not in self._tables_counted:
            self._tables_counted.add(self._circuit)
            self._oracle_passes += len(free)
        return gains.copy()

    def _obs(self) -> np.ndarray:
        obs = np.empty(self.observation_space.shape, dtype=np.float32)
        obs[:, :N_STATIC] = self._state.episode.features
        obs[:, MEMBER_COLUMN] = 0.0
        obs[sorted(self._circuit), MEMBER_COLUMN] = 1.0
        obs[:, FAITHFULNESS_COLUMN] = np.clip(self._f, -FEATURE_BOUND, FEATURE_BOUND)
        obs[:, BUDGET_COLUMN] = self._steps / self.budget
        if self._causal is not None:
            obs[:, N_CIRCUIT_FEATURES:] = self._causal.columns(self.budget - self._steps)
        return obs

    def _info(self) -> dict[str, Any]:
        info = {
            "faithfulness": float(self._f), "circuit_size": len(self._circuit), "action_mask": self.action_mask(),
            "task": self._task, "batch_index": self._state.episode.index,
            "forward_passes": self._passes, "oracle_forward_passes": self._oracle_passes,
        }  # fmt: skip
        if self._causal is not None:
            info["forward_passes"] += self._causal.lm_passes()
            info["feature_passes"] = dict(self._causal.passes)
        return info

    # -------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        task, index = reset_choice(self, options)
        self._task = task
        self._state = circuit_episode(self.pool(task).episode(int(index)))
        self._circuit = frozenset() if self._adding() else frozenset(range(self.n_total))
        self._f = 0.0 if self._adding() else 1.0  # f(empty) = 0 and f(full) = 1 by definition
        self._order, self._steps, self._over = [], 0, False
        self._passes, self._oracle_passes, self._tables_counted = SETUP_PASSES, 0, set()
        self._last_action, self._last_gains = None, None
        self._causal = None
        if self.features == "causal":
            causal = episode_causal(self._state.episode)
            self._causal = CircuitCausalState(causal, not self._adding(), self.budget, self.n_total)
        return self._obs(), self._info()

    def step(self, action):
        check_step_order(self._state is not None, self._over)
        n = self.n_total
        action = check_action(action, n + 1, f"in [0, {n}] (head id, or {n} = STOP)")
        gains = self.candidate_gains() if self.oracle_info else None
        legal = bool(self.action_mask()[action])
        reward, terminated = 0.0, False
        if action == self.stop_action:
            terminated = True
            if self._causal is not None:
                self._causal.record(None, self._circuit, 0.0, len(self._order))
        else:
            self._steps += 1
            if legal:
                new = self._changed(self._circuit, action)
                metric = self._state.metrics([new], self.cache)[0]
                new_f = float(self._state.faithfulness(metric))
                sign = 1.0 if self._adding() else -1.0
                reward = (new_f - self._f) - sign * self.alpha
                if self._causal is not None:
                    self._causal.record(action, new, new_f - self._f, len(self._order))
                self._circuit, self._f = new, new_f
                self._order.append(action)
                self._passes += 1
            elif self._causal is not None:
                self._causal.record(None, self._circuit, 0.0, len(self._order))
            terminated = self._steps >= self.budget or not self.candidates()
        self._last_action, self._last_gains, self._over = action, gains, terminated
        info = self._info()
        if gains is not None:
            if np.isfinite(gains).any():
                head = int(np.nanargmax(gains))
                gain = float(gains[head])
                oracle_reward = gain - (self.alpha if self._adding() else -self.alpha)
            else:  # nothing left to change: STOP is the only action
                head, gain, oracle_reward = self.stop_action, 0.0, 0.0
            info.update(
                per_head_gain=gains, oracle_head=head, oracle_gain=gain, oracle_reward=oracle_reward,
                oracle_action=head if oracle_reward > 0 else self.stop_action, top1_hit=action == head,
            )  # fmt: skip
        return self._obs(), float(reward), terminated, False, info

    def _render_text(self) -> str:
        if self._state is None:
            return "not reset"
        names = ", ".join(head_name(h, self.n_heads) for h in self._order) or "none"
        verb = "added" if self._adding() else "removed"
        return (
            f"task {self._task} batch {self._state.episode.index} step {self._steps}/{self.budget}: "
            f"{verb} {names}; circuit of {len(self._circuit)} heads, f={self._f:.3f}"
        )

    def _render_rgb(self) -> np.ndarray:
        """The grid of ``circuit_gym.envs.render``: fill = the last step's ``per_head_gain``,
        cross = the head is outside the circuit (ablated), outline = the last head chosen,
        bar = budget used."""
        outside = [h for h in range(self.n_total) if h not in self._circuit]
        last = (
            self._last_action if self._last_action is not None and self._last_action < self.n_total else None
        )
        return render_grid(self.n_layers, self.n_heads, self._last_gains, outside, last,
                           self._steps / self.budget)  # fmt: skip
