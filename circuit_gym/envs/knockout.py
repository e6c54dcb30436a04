"""Knock-out as sequential decisions: ablate heads one at a time, looking again after each (issue 60)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from circuit_gym.ablation.conditional import conditional_attribution, conditional_integrated_gradients
from circuit_gym.ablation.margin import margin_rows, top_two
from circuit_gym.circuits import CircuitRunner
from circuit_gym.circuits.ablated_sets import knockout_metrics, set_metric
from circuit_gym.envs.arguments import (
    check_action,
    check_count,
    check_step_order,
    common_arguments,
    reset_choice,
    shared_docs,
)
from circuit_gym.envs.causal_features import EAP_IG_STEPS, ENGINE_FORWARD, ENGINE_PARTIAL
from circuit_gym.envs.features import FEATURE_BOUND
from circuit_gym.envs.head_env import HeadEnv
from circuit_gym.envs.pool import EnvPools, Episode, shared_model
from circuit_gym.envs.render import render_grid
from circuit_gym.heads import head_name

DEFAULT_STEPS = 8
DEFAULT_BATCH = 16
# Observation columns.
ATTRIBUTION_COLUMN = 0  # attribution patching of the task-free margin, on the ablated model
EAP_IG_COLUMN = 1  # EAP-IG of the task-free margin, on the ablated model
ABLATED_COLUMN = 2  # 1 for heads ablated so far
METRIC_COLUMN = 3  # task metric now / clean task metric (the same in every row)
MARGIN_COLUMN = 4  # task-free margin now / clean margin (the same in every row)
STEPS_COLUMN = 5  # steps used / steps allowed (the same in every row)
N_COLUMNS = 6
# What the observation's per-head columns measure (argument ``scores``), and the passes of one
# observation: attribution and EAP-IG one forward and one backward pass each (EAP-IG's
# interpolation copies are stacked in its one pass). ``"attribution"`` alone costs what one step of
# conditional attribution costs, so an agent reading it spends that reference's passes.
SCORES = ("attribution+eap_ig", "attribution")
OBSERVATION_PASSES = {
    "attribution+eap_ig": {"forward": 2, "partial": 0, "backward": 2},
    "attribution": {"forward": 1, "partial": 0, "backward": 1},
}
# Fields computed from the exact candidate table (wrappers that hide the oracle drop them).
KNOCKOUT_ORACLE_INFO_KEYS = ("per_head_drop", "oracle_head", "oracle_drop", "top1_hit", "greedy_order",
                             "greedy_curve")  # fmt: skip


@dataclass
class KnockOutState:
    """One prompt batch's runner, task-free margin and memoised measurements (built once per
    pool episode, :meth:`Episode.derived`, and freed with it)."""

    episode: Episode
    runner: CircuitRunner  # the task metric, the environment's ablation
    top2: torch.Tensor | None = None  # the clean run's top-1 and top-2 ids: fix the margin
    clean_margin: float = float("nan")
    metrics: dict[frozenset[int], float] = field(default_factory=dict)
    observed: dict[tuple[frozenset[int], bool], tuple[np.ndarray, np.ndarray, float]] = field(
        default_factory=dict
    )
    tables: dict[frozenset[int], np.ndarray] = field(default_factory=dict)
    greedy: dict[int, tuple[list[int], np.ndarray]] = field(default_factory=dict)

    @property
    def engine(self):
        return self.runner.engine

    @property
    def clean_metric(self) -> float:
        return self.runner.full_metric

    def metric(self, ablated: frozenset[int], use_memo: bool = True) -> float:
        """The exact task metric with ``ablated`` ablated (one partial pass, memoised)."""
        if not use_memo or ablated not in self.metrics:
            self.metrics[ablated] = set_metric(self.runner, ablated)
        return self.metrics[ablated]

    def _margin_rows(self, logits: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        if self.top2 is None:  # the first call is the clean run's: its top two ids fix the margin
            self.top2 = top_two(logits).to(logits.device)
        return margin_rows(self.top2)(logits, rows)

    def observe(
        self, ablated: frozenset[int], use_memo: bool = True, eap_ig: bool = True
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """(attribution, EAP-IG, margin now / clean margin) on the model with ``ablated`` ablated,
        both scores as fractions of the clean margin. Two forward and two backward passes; one of
        each with ``eap_ig=False`` (its scores are then zeros: not measured)."""
        key = (ablated, eap_ig)
        if use_memo and key in self.observed:
            return self.observed[key]
        if self.top2 is None and ablated:
            self.observe(frozenset(), use_memo, eap_ig=False)  # the margin is the clean model's: fix it first
        margin_now: list[float] = []

        def read(logits: torch.Tensor) -> None:
            rows = torch.arange(logits.shape[0], device=logits.device)
            margin_now.append(float(self._margin_rows(logits, rows).mean()))

        change = conditional_attribution(self.engine, ablated, self._margin_rows, on_logits=read)
        if not ablated:
            self.clean_margin = margin_now[0]
        integrated = (
            conditional_integrated_gradients(self.engine, ablated, self._margin_rows, EAP_IG_STEPS)
            if eap_ig
            else np.zeros_like(change)
        )
        scale = max(self.clean_margin, 1e-6)

        def bounded(x: np.ndarray) -> np.ndarray:
            return np.clip(x / scale, -FEATURE_BOUND, FEATURE_BOUND).astype(np.float32)

        out = (bounded(-change), bounded(integrated), float(margin_now[0] / scale))
        if use_memo:
            self.observed[key] = out
        return out

    def drops(self, ablated: frozenset[int], use_memo: bool = True) -> np.ndarray:
        """``m(S) - m(S + h)`` of every head ``h`` not in ``ablated = S`` (NaN for those in it):
        every candidate in one stacked pass, memoised per set."""
        if use_memo and ablated in self.tables:
            return self.tables[ablated].copy()
        n = self.runner.n_layers * self.runner.n_heads
        free = [h for h in range(n) if h not in ablated]
        out = np.full(n, np.nan)
        if free:
            out[free] = self.metric(ablated, use_memo) - knockout_metrics(self.runner, ablated, free)
        if use_memo:
            self.tables[ablated] = out
        return out.copy()

    def greedy_curve(self, steps: int, use_memo: bool = True) -> tuple[list[int], np.ndarray]:
        """Exact greedy knock-out: ``steps`` times, ablate the head whose ablation (on top of the
        ones before) lowers the task metric most; its order and the metric after each step."""
        if use_memo and steps in self.greedy:
            kept, kept_curve = self.greedy[steps]
            return list(kept), kept_curve.copy()
        order: list[int] = []
        curve: list[float] = []
        ablated: frozenset[int] = frozenset()
        for _ in range(steps):
            drops = self.drops(ablated, use_memo)
            if not np.isfinite(drops).any():
                break
            head = int(np.nanargmax(drops))
            order.append(head)
            curve.append(self.metric(ablated, use_memo) - float(drops[head]))
            ablated = ablated | {head}
        result = (order, np.asarray(curve, dtype=np.float64))
        if use_memo:
            self.greedy[steps] = result
        return list(order), result[1].copy()


def knockout_state(episode: Episode) -> KnockOutState:
    """The knock-out state of a pool episode, built once and kept with it (its runner shares the
    episode's task engine: the clean and counterfactual passes run once)."""
    return episode.derived("knockout", lambda e: KnockOutState(e, CircuitRunner(e.task_engine)))


@shared_docs
class KnockOutEnv(HeadEnv):
    """Knock a behaviour out, one head at a time: which few ablations remove it, backups included?

    ## Description
    Each episode draws one prompt batch of a task (from the same seeded pools as the other head
    environments) and starts from the clean model. Each action **ablates one more head** (with the
    environment's ablation; resample on the embedded and planted models), on top of the heads
    ablated before: the ablations are cumulative. After every step the observation is
    **recomputed on the ablated model**, so a head that looked silent while another head did its
    job (a *backup*: it acts only once that head is gone) shows its effect as soon as that head is
    ablated. A static ranking measured once on the clean model cannot see it; an agent that acts
    and looks again can. The task: remove the behaviour (the task metric) in as few ablations as
    possible. The observation never names the task and never reads its answer labels: the
    per-head scores use the model's own top-1 vs top-2 logit margin (a task-free metric, as
    ``features="causal"`` of the other environments); only the metric column and the reward read
    the task metric. The ``CircuitDiscovery-Planted-{Kind}-KnockOut-v0`` IDs play it on a planted
    model generated from a seed drawn at each reset (``circuit_gym.envs.planted.PlantedEnv``:
    ``reset(options={"model_seed": s})`` picks one; ``info["model"]`` names it; the kind's ground
    truth, backups included, in the info of the step that ends the episode).

    ## Action Space
    ``Discrete(n_layers * n_heads + 1)``: the flat head id ``layer * n_heads + head`` ablates that
    head; the last action, ``n_layers * n_heads`` (144 on the 12 x 12 models), is STOP.
    ``info["action_mask"]`` (int8, length ``n + 1``) marks the legal actions: heads not ablated yet
    (while steps are left) and STOP, always. ``action_masks()`` returns it as booleans
    (sb3-contrib's ``MaskablePPO`` reads it). **A masked head** (already ablated) is a no-op: reward
    0, the observation unchanged, but it uses a step, as in the circuit-building environment. An
    action is one integer (a Python or numpy integer); anything else is a ``TypeError``.

    ## Observation Space
    ``Box(-10, 10, (n_layers * n_heads, 6), float32)``, one row per head, all measured on the model
    with the heads ablated so far:

    | column | meaning |
    |---|---|
    | 0 | attribution patching: the first-order estimate of how much ablating this head next lowers the margin, as a fraction of the clean margin (0 for ablated heads) |
    | 1 | EAP-IG (node level, 5 interpolation steps) of the margin, same units (0 for ablated heads; 0 everywhere with `scores="attribution"`: not measured) |
    | 2 | 1 if the head is ablated |
    | 3 | the task metric now as a fraction of the clean one (the same in every row) |
    | 4 | the margin now as a fraction of the clean margin (the same in every row) |
    | 5 | steps used / ``steps`` (the same in every row) |

    The margin is ``logit[top1] - logit[top2]`` at the task's metric positions, with ``top1`` and
    ``top2`` the **clean** model's two highest logits, fixed at reset (``circuit_gym.ablation.margin``):
    it measures how much of the clean prediction is left. Values are clipped to [-10, 10].
    With ``observe_last=False`` the observation returned by the step that ends the episode is not
    measured again (no decision follows it): its columns 0, 1 and 4 are 0; 2, 3 and 5 are current.

    ## Rewards
    The drop of the task metric the step caused: ``m(S) - m(S + h)`` for ablating head ``h`` on top
    of the set ``S`` ablated so far, **in the unit of the task's metric** (a logit difference on every
    planted task); STOP and no-ops give 0. An episode's return is the total damage, ``m(clean) -
    m(final)``. A step that raises the metric (ablating a suppressor) has a negative reward.

    ## Starting State
    ``reset`` picks the task uniformly from ``tasks`` unless ``options["task"]`` names one, then a
    batch uniformly from the task's pool unless ``options["batch_index"]`` gives one; both with
    ``self.np_random`` (seeded by ``reset(seed=...)``). No head is ablated.

    ## Episode End
    Terminated at STOP, after ``steps`` steps (no-ops included), or when every head is ablated.
    Never truncated by the environment itself.
    {call_order}

    ## Arguments
    {common_arguments}
    | `steps` | ablations per episode (K), 1 to the number of heads | `8` |
    | `ablation` | `"zero"`, `"mean"` or `"resample"`: what replaces an ablated head's output | `"resample"` on embedded and planted models, `"zero"` otherwise |
    | `batch_size` | prompts per batch | `16` |
    | `pool_size` | batches per task and split | `32` |
    | `scores` | the per-head columns measured: `"attribution+eap_ig"`, or `"attribution"` (half the passes: conditional attribution's per step) | `"attribution+eap_ig"` |
    | `observe_last` | measure the observation that ends the episode too (`False`: not measured, not paid) | `True` |
    | `cache` | memoise metrics, observations and oracle tables per batch (passes are counted as if not) | `True` |
    | `model_path` | directory of the model's weights | `None` (the loader's search) |
    | `render_mode` | `None`, `"ansi"` (one line of text) or `"rgb_array"` (the layer x head grid) | `None` |
    | `oracle_info` | add the exact best next ablation to every step's info and the exact greedy curve to reset's | `False` |
    | `device` | torch device of the model | `"cpu"` |

    ## Info
    Every ``reset`` and ``step``: ``metric`` (the exact task metric now), ``clean_metric``,
    ``metric_fraction`` (their ratio, unclipped), ``ablated`` (the heads ablated, in order),
    ``action_mask``, ``task``, ``batch_index``, and what the episode's observations and rewards cost,
    cumulative and counted as if nothing were memoised (a stacked pass counts once; a pass of the
    engine's replay from a cached layer counts as ``partial``): ``passes``
    (``{"forward", "partial", "backward"}``; reset: the engine's clean and counterfactual passes and
    its check, then one observation; each step that ablates a head: one partial pass for the metric
    and one observation, two forward and two backward passes, one of each with ``scores="attribution"``)
    and ``forward_passes`` (their sum); ``decision_passes``: the observations' passes alone (what an
    agent reads to decide; the metric is the environment's reward, which every entry gets, and the
    engine's clean and counterfactual passes are the episode's setup). The knock-out track counts an
    entry's passes by it, as it counts a reference's by the reference's own decisions.

    With ``oracle_info=True``: every ``step`` adds the exact table **of the state before the step**
    (every candidate ``S + h`` run in one stacked pass): ``per_head_drop`` (``m(S) - m(S + h)``,
    NaN for ablated heads), ``oracle_head`` and ``oracle_drop`` (the best next ablation and its drop),
    ``top1_hit`` (the action was ``oracle_head``); ``reset`` adds ``greedy_order`` and
    ``greedy_curve``: exact greedy knock-out's ``steps`` heads and the metric after each (one
    stacked pass per step). ``oracle_forward_passes`` counts them (one per candidate run).

    ## Version History
    * v0: first release (issue 60); arguments ``scores`` and ``observe_last`` and the info's
      ``decision_passes`` added later, their defaults keeping the first release's behaviour.

    Args:
        model: the model (``"toy"``, a planted or zoo model's name, ...; set by the ID).
        tasks: the task or tasks sampled at reset (set by the ID).
        split: ``"train"``, ``"eval"`` or ``"test"``.
        steps: ablations per episode (K).
        ablation: what replaces an ablated head's output (default: the model's).
        batch_size: prompts per batch. pool_size: batches per task and split.
        scores: the per-head columns measured. observe_last: measure the episode's last observation.
        cache: memoise per batch. model_path: the model's directory. render_mode: as above.
        oracle_info: add the exact oracle to the infos. device: the model's torch device.
    """

    def __init__(self, model: str = "toy", tasks: str | Sequence[str] = ("ioi",), split: str = "train",
                 steps: int = DEFAULT_STEPS, ablation: str | None = None, batch_size: int = DEFAULT_BATCH,
                 pool_size: int = 32, cache: bool = True, model_path: str | None = None,
                 render_mode: str | None = None, oracle_info: bool = False, device: str = "cpu",
                 scores: str = "attribution+eap_ig", observe_last: bool = True) -> None:  # fmt: skip
        tasks, ablation = common_arguments(model, tasks, split, ablation, batch_size, pool_size, cache, oracle_info,
                                           render_mode, self.metadata["render_modes"])  # fmt: skip
        steps = check_count("steps", steps)
        if scores not in SCORES:
            raise ValueError(f"scores must be one of {SCORES}, got {scores!r}")
        if not isinstance(observe_last, bool):
            raise TypeError(f"observe_last must be a bool, got {observe_last!r}")
        self.scores, self.observe_last = scores, observe_last
        self.model = shared_model(model, model_path, device)
        info = self.model.circuit_gym_info
        self.n_layers, self.n_heads, self.n_total = info.n_layers, info.n_heads, info.n_heads_total
        if steps > self.n_total:
            raise ValueError(f"steps must be at most the number of heads, {self.n_total}, got {steps}")
        self.stop_action = self.n_total
        self.steps, self.tasks, self.split, self.ablation, self.cache = steps, tasks, split, ablation, cache
        self.batch_size, self.pool_size = int(batch_size), int(pool_size)
        self.render_mode, self.oracle_info = render_mode, oracle_info
        self.action_space = spaces.Discrete(self.n_total + 1)
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, (self.n_total, N_COLUMNS), np.float32
        )
        self._pools = EnvPools(self.model, split, self.batch_size, self.pool_size, None, ablation, 1.0, cache)
        self._state: KnockOutState | None = None
        self._task = tasks[0]
        self._order: list[int] = []
        self._ablated: frozenset[int] = frozenset()
        self._used = 0
        self._over = False
        self._metric = 0.0
        self._seen: tuple[np.ndarray, np.ndarray, float] | None = None
        self._passes = {"forward": 0, "partial": 0, "backward": 0}
        self._decision_passes = 0
        self._oracle_passes = 0
        self._last_action: int | None = None

    # ----------------------------------------------------------------- state
    def pool(self, task: str):
        """The task's episode pool (shared with the other head environments of the same settings)."""
        return self._pools.get(task)

    @property
    def state(self) -> KnockOutState:
        """The current batch's runner, margin and memo (what the reference solvers read)."""
        if self._state is None:
            raise RuntimeError("call reset() first")
        return self._state

    @property
    def order(self) -> list[int]:
        """The heads ablated so far, in order."""
        return list(self._order)

    @property
    def task(self) -> str:
        return self._task

    def attribution(self) -> np.ndarray:
        """Column 0 of the current observation (attribution on the ablated model), a copy."""
        if self._seen is None:
            raise RuntimeError("call reset() first")
        return self._seen[0].copy()

    def candidates(self) -> list[int]:
        return [h for h in range(self.n_total) if h not in self._ablated]

    def action_mask(self) -> np.ndarray:
        mask = np.zeros(self.n_total + 1, dtype=np.int8)
        if self._used < self.steps:
            mask[self.candidates()] = 1
        mask[self.stop_action] = 1
        return mask

    def _fraction(self, metric: float) -> float:
        clean = self.state.clean_metric
        return float(metric / abs(clean)) if abs(clean) > 1e-9 else 0.0

    def _observe(self) -> None:
        self._seen = self.state.observe(self._ablated, self.cache, eap_ig=self.scores == "attribution+eap_ig")
        for kind, n in OBSERVATION_PASSES[self.scores].items():
            self._passes[kind] += n
            self._decision_passes += n

    def _unmeasured(self) -> None:
        """The episode's last observation with ``observe_last=False``: no scores, no margin, no passes."""
        zeros = np.zeros(self.n_total, dtype=np.float32)
        self._seen = (zeros, zeros.copy(), 0.0)

    def _obs(self) -> np.ndarray:
        if self._seen is None:
            raise RuntimeError("call reset() first")
        attribution, eap_ig, margin = self._seen
        obs = np.zeros((self.n_total, N_COLUMNS), dtype=np.float32)
        obs[:, ATTRIBUTION_COLUMN], obs[:, EAP_IG_COLUMN] = attribution, eap_ig
        obs[sorted(self._ablated), ABLATED_COLUMN] = 1.0
        obs[:, METRIC_COLUMN] = self._fraction(self._metric)
        obs[:, MARGIN_COLUMN] = margin
        obs[:, STEPS_COLUMN] = self._used / self.steps
        return np.clip(obs, -FEATURE_BOUND, FEATURE_BOUND)

    def _info(self) -> dict[str, Any]:
        return {
            "metric": float(self._metric), "clean_metric": float(self.state.clean_metric),
            "metric_fraction": self._fraction(self._metric), "ablated": list(self._order),
            "action_mask": self.action_mask(), "task": self._task, "batch_index": self.state.episode.index,
            "passes": dict(self._passes), "forward_passes": sum(self._passes.values()),
            "decision_passes": self._decision_passes, "oracle_forward_passes": self._oracle_passes,
        }  # fmt: skip

    # -------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        task, index = reset_choice(self, options)
        self._task = task
        self._state = knockout_state(self.pool(task).episode(int(index)))
        self._order, self._ablated, self._used, self._over = [], frozenset(), 0, False
        self._last_action = None
        self._passes = {"forward": ENGINE_FORWARD[self.ablation], "partial": ENGINE_PARTIAL, "backward": 0}
        self._decision_passes = self._oracle_passes = 0
        self._metric = self.state.clean_metric
        self._observe()
        info = self._info()
        if self.oracle_info:
            order, curve = self.state.greedy_curve(self.steps, self.cache)
            self._oracle_passes += sum(self.n_total - k for k in range(len(order)))
            info.update(greedy_order=order, greedy_curve=curve, oracle_forward_passes=self._oracle_passes)
        return self._obs(), info

    def step(self, action):
        check_step_order(self._state is not None, self._over)
        n = self.n_total
        action = check_action(action, n + 1, f"in [0, {n}] (head id, or {n} = STOP)")
        drops = None
        if self.oracle_info:
            drops = self.state.drops(self._ablated, self.cache)
            self._oracle_passes += len(self.candidates())
        legal = bool(self.action_mask()[action])
        reward, terminated = 0.0, False
        if action == self.stop_action:
            terminated = True
        else:
            self._used += 1
            if legal:
                new = self._ablated | {action}
                metric = self.state.metric(new, self.cache)
                self._passes["partial"] += 1
                reward = self._metric - metric
                self._ablated, self._metric = new, metric
                self._order.append(action)
            terminated = self._used >= self.steps or not self.candidates()
            if legal and terminated and not self.observe_last:
                self._unmeasured()
            elif legal:
                self._observe()
        self._last_action, self._over = action, terminated
        info = self._info()
        if drops is not None:
            head = int(np.nanargmax(drops)) if np.isfinite(drops).any() else self.stop_action
            info.update(per_head_drop=drops, oracle_head=head,
                        oracle_drop=float(drops[head]) if head < n else 0.0, top1_hit=action == head)  # fmt: skip
        return self._obs(), float(reward), terminated, False, info

    def _render_text(self) -> str:
        if self._state is None:
            return "not reset"
        names = ", ".join(head_name(h, self.n_heads) for h in self._order) or "none"
        return (f"task {self._task} batch {self.state.episode.index} step {self._used}/{self.steps}: ablated "
                f"{names}; metric {self._metric:.3f} ({self._fraction(self._metric):.2f} of clean)")  # fmt: skip

    def _render_rgb(self) -> np.ndarray:
        """The grid of ``circuit_gym.envs.render``: fill = each head's attribution on the ablated
        model (column 0), cross = ablated, outline = the last head ablated, bar = steps used."""
        fill = None if self._seen is None else self._seen[0].astype(np.float64)
        last = (
            self._last_action if self._last_action is not None and self._last_action < self.n_total else None
        )
        return render_grid(
            self.n_layers, self.n_heads, fill, sorted(self._ablated), last, self._used / self.steps
        )
