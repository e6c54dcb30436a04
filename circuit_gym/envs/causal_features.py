"""The causal observation (``features="causal"``): cheap causal signals an agent can act on.

``circuit_gym.envs.features`` documents the columns; this module computes them. Everything is
measured with a **task-free** metric (``circuit_gym.ablation.margin``): the clean model's own
top-1 minus top-2 logit at the task's metric positions, never the answer label. Per episode:

- attribution patching (Nanda 2023): each head's first-order estimate of how much ablating it
  alone (the environment's ablation) lowers that margin; one forward and one backward pass;
- EAP-IG at node level (``circuit_gym.ablation.integrated_gradients``, ``EAP_IG_STEPS`` steps
  stacked): the same, integrated along the path from every head ablated to the clean run; one
  forward and one backward pass;

both divided by the clean margin (the mean over prompts and metric positions), so they are
fractions of the model's own prediction margin, comparable across tasks and models. In the
circuit-building environment the observation also tracks the current circuit's faithfulness
measured with that margin: ``M(empty)`` costs one pass at reset and ``M(C)`` one per step that
changes the circuit.

Costs (:data:`FEATURE_PASSES`, counted as ``circuit_gym.passes.PassCounter``
counts them; a pass over a batch counts once): the environment reports what it paid in
``info["feature_passes"]``, counted as if nothing were memoised.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.ablation.engine import AblationEngine
from circuit_gym.ablation.integrated_gradients import integrated_gradients
from circuit_gym.ablation.margin import margin_engine, margin_rows, top_two
from circuit_gym.circuits import Circuit, CircuitRunner, faithfulness
from circuit_gym.envs.features import FEATURE_BOUND
from circuit_gym.envs.pool import Episode

EAP_IG_STEPS = 5
# Passes of the two attribution methods once the episode's ablation engine exists.
FEATURE_PASSES = {"forward": 2, "partial": 0, "backward": 2}
# Passes that build the ablation engine the features read (clean head outputs, replacement
# values): the clean pass, the counterfactual pass (resample ablation only) and one partial
# pass that checks the engine's replay. The circuit-building environment counts them in its
# SETUP_PASSES already (its runner shares the engine); the single-head environment pays them here.
ENGINE_FORWARD = {"resample": 2, "mean": 1, "zero": 1}
ENGINE_PARTIAL = 1
MARGIN_EMPTY_PASSES = 1  # circuit env: M(empty), one stacked circuit run


@dataclass
class EpisodeCausal:
    """One batch's causal features: per-head scores (fractions of the clean margin) and the
    margin engine that runs circuits under the task-free metric."""

    attribution: np.ndarray  # [n_heads_total] float32
    eap_ig: np.ndarray  # [n_heads_total] float32
    engine: AblationEngine  # scores with the top-1 vs top-2 margin
    episode: Episode  # kept so the id this is memoised under stays unique
    _runner: CircuitRunner | None = None
    _empty: float | None = None
    _memo: dict[frozenset[int], float] = field(default_factory=dict)

    @property
    def runner(self) -> CircuitRunner:
        if self._runner is None:
            self._runner = CircuitRunner(self.engine)
        return self._runner

    @property
    def clean_margin(self) -> float:
        return self.engine.clean_score

    @property
    def empty_margin(self) -> float:
        """``M(empty)``: the margin with every head ablated (one stacked circuit run, once)."""
        if self._empty is None:
            self._empty = self._margin(frozenset())
        return self._empty

    def _margin(self, heads: frozenset[int]) -> float:
        if heads not in self._memo:
            runner = self.runner
            self._memo[heads] = float(runner.metric([Circuit(heads, runner.n_layers, runner.n_heads)])[0])
        return self._memo[heads]

    def margin_faithfulness(self, heads: frozenset[int]) -> float:
        """Faithfulness of the circuit ``heads`` under the margin metric (memoised); 0 where
        ablating every head leaves the margin unchanged (no circuit can be told apart)."""
        f = faithfulness(self._margin(heads), self.empty_margin, self.clean_margin)
        return 0.0 if not np.isfinite(f) else float(f)


def compute_causal(engine: AblationEngine, episode: Episode) -> EpisodeCausal:
    """Attribution patching and EAP-IG of every head under the margin metric, from ``engine``
    (the batch's task engine: its clean head outputs and replacement values, never its metric)."""
    ev = engine.ev
    clean: dict[str, torch.Tensor] = {}

    def margin(logits: torch.Tensor) -> torch.Tensor:
        # the attribution pass adds zero perturbations: its logits are the clean run's
        at = logits[:, ev.positions]
        clean["logits"] = at.detach()
        rows = torch.arange(at.shape[0], device=at.device)
        return margin_rows(top_two(at))(at, rows).mean()

    change = attribution_patching(engine.model, ev.tokens, engine.clean_z, engine.replacement, margin)
    scored = margin_engine(engine, clean["logits"])
    eap_ig = integrated_gradients(scored, EAP_IG_STEPS)
    scale = max(scored.clean_score, 1e-6)

    def bounded(x: np.ndarray) -> np.ndarray:
        return np.clip(x / scale, -FEATURE_BOUND, FEATURE_BOUND).astype(np.float32)

    return EpisodeCausal(bounded(-change), bounded(eap_ig), scored, episode)


def episode_causal(episode: Episode) -> EpisodeCausal:
    """The causal features of a pool episode: computed once, kept exactly as long as the episode
    and its pool (``Episode.derived``), never in a process-global table."""
    return episode.derived("causal", lambda e: compute_causal(e.task_engine, e))


def single_head_passes(ablation: str) -> dict[str, int]:
    """What the single-head environment's causal columns cost per episode (engine included)."""
    return {"forward": ENGINE_FORWARD[ablation] + FEATURE_PASSES["forward"], "partial": ENGINE_PARTIAL,
            "backward": FEATURE_PASSES["backward"]}  # fmt: skip


def single_head_columns(causal: EpisodeCausal, steps_left: int, n_total: int) -> np.ndarray:
    """Columns 12-14 of the single-head causal observation, ``[n_total, 3]``."""
    left = np.full(n_total, steps_left / n_total, dtype=np.float32)
    return np.stack([causal.attribution, causal.eap_ig, left], axis=1)


class CircuitCausalState:
    """The circuit-building environment's causal columns over one episode: per-head scores,
    each changed head's position, the circuit's faithfulness changes and its margin faithfulness."""

    def __init__(self, causal: EpisodeCausal, start_full: bool, budget: int, n_total: int) -> None:
        self.causal, self.budget, self.n_total = causal, budget, n_total
        self.position = np.zeros(n_total, dtype=np.float32)
        self.f_change = self.margin_change = 0.0
        _ = causal.empty_margin  # M(empty): needed by every later step, paid at reset
        self.margin_f = 1.0 if start_full else 0.0  # f(full) = 1 and f(empty) = 0 by definition
        self.passes = {**FEATURE_PASSES, "partial": FEATURE_PASSES["partial"] + MARGIN_EMPTY_PASSES}

    def record(self, head: int | None, circuit: frozenset[int], f_change: float, changed: int) -> None:
        """After a step: ``head`` changed (None: STOP or a no-op), the new ``circuit``, the
        change of the task's faithfulness, and how many heads had changed before this one."""
        if head is None:
            self.f_change = self.margin_change = 0.0
            return
        self.position[head] = (changed + 1) / self.budget
        new = self.causal.margin_faithfulness(circuit)
        self.f_change, self.margin_change, self.margin_f = f_change, new - self.margin_f, new
        self.passes["partial"] += 1

    def columns(self, steps_left: int) -> np.ndarray:
        """Columns 13-19 of the circuit-building causal observation, ``[n_total, 7]``."""
        n = self.n_total

        def same(value: float) -> np.ndarray:
            return np.full(n, np.clip(value, -FEATURE_BOUND, FEATURE_BOUND), dtype=np.float32)

        return np.stack([self.causal.attribution, self.causal.eap_ig, self.position, same(self.f_change),
                         same(self.margin_f), same(self.margin_change), same(steps_left / n)], axis=1)  # fmt: skip

    def lm_passes(self) -> int:
        """Every pass the columns cost, backward ones included: the circuit track counts passes
        that way (attribution insertion's backward pass is one of its passes)."""
        return self.passes["forward"] + self.passes["partial"] + self.passes["backward"]
