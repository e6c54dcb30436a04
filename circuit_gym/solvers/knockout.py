"""Reference solvers of the knock-out track (issue 60): each returns its ablation order and its passes.

Every reference reads the task metric (white-box, as the board's references do) on one prompt
batch, through a :class:`~circuit_gym.envs.knockout.KnockOutState` (the environment's runner:
its engine's clean head outputs, replacement values and replay), and returns the ``k`` heads it
ablates, in order, with the language-model passes it spent (counted as the board counts them:
a forward or backward pass over the batch counts one, a stacked pass of ``c`` candidate circuits
counts ``c``; the engine's own clean and counterfactual passes are the environment's and not
counted here).

- **static** rankings, measured once on the clean model, then ablated in that order:
  ``attribution`` (attribution patching of the task metric, 1 forward + 1 backward pass),
  ``eap_ig`` (EAP-IG at node level, 5 steps; counted 2 x 5 as ``solvers.white_box`` counts it),
  ``gim`` (attribution patching under GIM's backward rules, 2 passes) and ``acdc`` (ACDC's
  head-level threshold sweep, ``solvers.acdc``: 1 pass for the empty circuit and one per circuit
  tried; the heads kept longest first, exact ties by head id);
- ``conditional_attribution``: attribution patching **recomputed after every ablation** on the
  ablated model (the CoAx idea, arXiv 2607.01940: co-ablation reveals what first-order scores
  hide), the head of largest estimated drop ablated next; 2 passes a step;
- ``greedy``: exact greedy knock-out, every remaining head tried on top of the ones ablated (one
  stacked pass of every candidate per step); myopic on actual damage, so a pair of heads that
  each cost little alone (an OR) can defeat it: a reference, not a ceiling;
- ``random``: a seeded random order, 0 passes.

A head whose score is not finite is never preferred; exact ties go to the lower head id
(``numpy``'s stable sort), never to float noise of another pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.ablation.conditional import conditional_attribution
from circuit_gym.ablation.gim import gim_importance
from circuit_gym.ablation.integrated_gradients import integrated_gradients
from circuit_gym.circuits import Circuit
from circuit_gym.envs.knockout import KnockOutEnv, KnockOutState
from circuit_gym.solvers.acdc import acdc

ATTRIBUTION_PASSES = 2  # one forward and one backward pass
EAP_IG_STEPS = 5
EAP_IG_PASSES = 2 * EAP_IG_STEPS  # as solvers.white_box counts EAP-IG


@dataclass(frozen=True)
class KnockOutRun:
    """A reference's knock-out of one batch: the heads ablated, in order, and the passes spent."""

    name: str
    order: tuple[int, ...]
    passes: int


def top_order(scores: np.ndarray, k: int, exclude: frozenset[int] = frozenset()) -> list[int]:
    """The ``k`` heads of highest finite score (not in ``exclude``), highest first; exact ties
    by lower head id."""
    scores = np.asarray(scores, dtype=np.float64)
    ranked = np.argsort(-np.where(np.isfinite(scores), scores, -np.inf), kind="stable")
    return [int(h) for h in ranked if int(h) not in exclude][:k]


def _task_score(state: KnockOutState) -> Callable:
    ev = state.engine.ev
    return lambda logits: ev.score(logits[:, ev.positions]).mean()


def static_attribution(state: KnockOutState, k: int) -> KnockOutRun:
    engine = state.engine
    change = attribution_patching(engine.model, engine.ev.tokens, engine.clean_z, engine.replacement,
                                  _task_score(state))  # fmt: skip
    return KnockOutRun("attribution", tuple(top_order(-change, k)), ATTRIBUTION_PASSES)


def static_eap_ig(state: KnockOutState, k: int) -> KnockOutRun:
    scores = integrated_gradients(state.engine, EAP_IG_STEPS)
    return KnockOutRun("eap_ig", tuple(top_order(scores, k)), EAP_IG_PASSES)


def static_gim(state: KnockOutState, k: int) -> KnockOutRun:
    return KnockOutRun("gim", tuple(top_order(gim_importance(state.engine), k)), ATTRIBUTION_PASSES)


def static_acdc(state: KnockOutState, k: int) -> KnockOutRun:
    result = acdc(state.runner)
    scores = np.asarray(result.ranking.scores, dtype=np.float64)
    finite = scores[np.isfinite(scores)]
    scores = np.where(np.isposinf(scores), (finite.max() if finite.size else 0.0) + 1.0, scores)
    return KnockOutRun("acdc", tuple(top_order(scores, k)), 1 + result.tries)


def conditional(state: KnockOutState, k: int) -> KnockOutRun:
    """Attribution patching of the task metric recomputed on the ablated model before each step."""
    engine = state.engine
    order: list[int] = []
    for _ in range(k):
        ablated = frozenset(order)
        change = conditional_attribution(engine, ablated, engine.ev.score_rows)
        nxt = top_order(-change, 1, ablated)
        if not nxt:
            break
        order.append(nxt[0])
    return KnockOutRun("conditional_attribution", tuple(order), ATTRIBUTION_PASSES * len(order))


def greedy(state: KnockOutState, k: int) -> KnockOutRun:
    order, _ = state.greedy_curve(k)
    n = state.runner.n_layers * state.runner.n_heads
    return KnockOutRun("greedy", tuple(order), sum(n - i for i in range(len(order))))


def random_order(state: KnockOutState, k: int, seed: int = 0) -> KnockOutRun:
    n = state.runner.n_layers * state.runner.n_heads
    order = np.random.default_rng(seed).permutation(n)[:k]
    return KnockOutRun("random", tuple(int(h) for h in order), 0)


REFERENCES: dict[str, Callable[[KnockOutState, int], KnockOutRun]] = {
    "attribution": static_attribution,
    "eap_ig": static_eap_ig,
    "gim": static_gim,
    "acdc": static_acdc,
    "conditional_attribution": conditional,
    "greedy": greedy,
    "random": random_order,
}


def knockout_curve(state: KnockOutState, order: tuple[int, ...] | list[int]) -> np.ndarray:
    """The exact task metric after ablating the first ``j`` heads of ``order``, ``j = 1..len(order)``
    (every prefix a copy of the batch in one stacked pass)."""
    runner = state.runner
    full = frozenset(range(runner.n_layers * runner.n_heads))
    prefixes = [
        Circuit(full - frozenset(order[: j + 1]), runner.n_layers, runner.n_heads) for j in range(len(order))
    ]
    return np.asarray(runner.metric(prefixes), dtype=np.float64) if prefixes else np.zeros(0)


@dataclass(frozen=True)
class Played:
    """One knock-out episode: the heads ablated in order, the task metric after each, the clean
    metric, the passes it cost."""

    order: tuple[int, ...]
    metrics: tuple[float, ...]
    clean: float
    passes: int


def play_actions(
    env: KnockOutEnv, task: str, index: int, act: Callable[[np.ndarray, np.ndarray], int]
) -> Played:
    """One episode on ``env``'s batch ``index`` of ``task``: ``act(observation, action_mask)`` until
    the episode ends; the curve read from the environment's ``info["metric"]`` after each step that
    ablated a head (not STOP, not a no-op); the passes, the environment's count of the observations
    ``act`` read (``info["decision_passes"]``)."""
    obs, info = env.reset(options={"task": task, "batch_index": index})
    metrics: list[float] = []
    done = False
    while not done:
        action = act(obs, info["action_mask"])
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        if len(info["ablated"]) > len(metrics):  # the step ablated a head (not STOP)
            metrics.append(float(info["metric"]))
    return Played(tuple(int(h) for h in info["ablated"]), tuple(metrics), float(info["clean_metric"]),
                  int(info["decision_passes"]))  # fmt: skip
