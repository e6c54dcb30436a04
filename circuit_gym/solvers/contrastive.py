"""The single-head track's white-box reference ``greedy``: attribution patching of the
contrastive reward, a one-shot gradient estimate.

For every head, the first-order estimate of ablating it is ``grad . (replacement - z)``, with
the gradient of the task metric (and of the reference loss) with respect to the head's output
``hook_z``: one forward and one backward pass give all heads at once. The estimated contrastive
reward is ``-d_metric - lam * d_loss``. It reads the task metric of the episode's prompts (not
the oracle), which a submitted policy cannot.
"""

from __future__ import annotations

import weakref

import numpy as np

from circuit_gym.ablation import contrastive_reward
from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.ablation.engine import AblationEngine


def _gradient_estimate(engine: AblationEngine) -> np.ndarray:
    """First-order change of the engine's score when each single head is ablated."""
    ev = engine.ev
    # score is a batch mean, so the gradients already carry the 1/batch factor
    return attribution_patching(engine.model, ev.tokens, engine.clean_z, engine.replacement,
                                lambda logits: ev.score(logits[:, ev.positions]).mean())  # fmt: skip


# The reference batch is the same in every episode, so its estimate is computed once per
# general engine (one per model, reference and ablation) and kept while the engine lives.
_GENERAL_ESTIMATES: weakref.WeakKeyDictionary[AblationEngine, np.ndarray] = weakref.WeakKeyDictionary()


def forget_reference_estimates() -> None:
    """Drop the kept reference-batch estimates, so the next episode pays for its own (the
    scorer calls this first: its pass counts must not depend on what ran before it)."""
    _GENERAL_ESTIMATES.clear()


def attribution_scores(env) -> np.ndarray:
    """Estimated contrastive reward of ablating each head in the env's current episode: one
    forward and one backward pass on the task's prompts (plus one of each on the reference
    batch the first time a process meets it)."""
    scorer = env.unwrapped.episode.scorer
    d_task = _gradient_estimate(scorer.task_engine)  # change of the task metric
    if scorer.general_engine not in _GENERAL_ESTIMATES:
        _GENERAL_ESTIMATES[scorer.general_engine] = _gradient_estimate(scorer.general_engine)
    d_general = _GENERAL_ESTIMATES[scorer.general_engine]  # change of -loss
    return contrastive_reward(-d_task, -d_general, scorer.lam)  # the estimated damages
