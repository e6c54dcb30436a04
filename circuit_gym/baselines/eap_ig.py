"""EAP-IG at node level (Hanna et al. 2024), a reference circuit solver, beside attribution patching.

Attribution patching (Nanda 2023; :mod:`circuit_gym.ablation.attribution`) estimates the
effect of ablating each head from the gradient at the clean run: one forward and one
backward pass. EAP-IG (edge attribution patching with integrated gradients) averages the
gradient along a path from the ablated to the clean run instead, which is more faithful
when the metric saturates. At node level, a head's score is

    score(h) = (z_clean(h) - z_ablated(h)) . mean_{alpha} d m / d z(h) |_alpha

summed over prompts, positions and ``d_head`` (``m``: the task metric averaged over the
batch; ``z``: the head's ``hook_z`` output; ``z_ablated``: the runner's replacement, the
counterfactual activation by default). Higher = keeping the head raises the metric more.

The path: at step ``alpha`` every head's output is set to
``z_ablated + alpha * (z - z_ablated)``, ``z`` being what the head computes in that pass, so
``alpha = 0`` is the empty circuit and ``alpha = 1`` the clean model, and the gradient
flows through every later layer. ``alpha`` takes ``k / steps`` for ``k = 1..steps`` (a right
Riemann sum ending at the clean run). This interpolates activations at ``hook_z``, all heads
jointly (close to the activation-interpolating variant MIB also evaluates, which interpolates
each node's activations); Hanna et al.'s original interpolates the input embeddings. This
path works for every ablation kind. It is not exactly complete (the attributions need not
sum to ``m(full) - m(empty)``): later heads' outputs also move with ``alpha``. With ``steps = 1`` it is exactly
minus attribution patching's estimate of ablating each head.

Cost (``PassCounter``'s counting): the runner's clean and counterfactual forward passes
and the engine's one partial check pass, then **one** forward and **one** backward pass:
the ``steps`` values of ``alpha`` are stacked along the batch.

    ranking = eap_ig_ranking(model, task, batch, steps=5)
"""

from __future__ import annotations

import numpy as np

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.ablation.integrated_gradients import integrated_gradients
from circuit_gym.circuits import CircuitRunner, Ranking
from circuit_gym.tasks.base import PromptBatch, Task


def eap_ig_scores(runner: CircuitRunner, steps: int = 5) -> np.ndarray:
    """Integrated-gradients attribution of every head (flat ids, float64)."""
    return integrated_gradients(runner.engine, steps)


def eap_ig_ranking(
    model, task: Task, batch: PromptBatch, *, ablation: str | None = None, steps: int = 5
) -> Ranking:
    """EAP-IG's head ranking for one prompt batch (a :data:`circuit_gym.circuits.RankingFn`)."""
    runner = CircuitRunner.for_task(model, task, batch, ablation)
    return Ranking.from_array(eap_ig_scores(runner, steps), "eap_ig", runner.n_layers, runner.n_heads)


def attribution_patching_ranking(
    model, task: Task, batch: PromptBatch, *, ablation: str | None = None
) -> Ranking:
    """Attribution patching's head ranking (the greedy baseline's task-only estimate): minus
    the first-order change of the metric when each head is ablated, so higher = more important."""
    runner = CircuitRunner.for_task(model, task, batch, ablation)
    engine, ev = runner.engine, runner.engine.ev
    change = attribution_patching(engine.model, ev.tokens, engine.clean_z, engine.replacement,
                                  lambda logits: ev.score(logits[:, ev.positions]).mean())  # fmt: skip
    return Ranking.from_array(-change, "attribution_patching", runner.n_layers, runner.n_heads)
