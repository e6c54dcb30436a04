"""Greedy baseline: rank heads by attribution patching, a one-shot gradient estimate.

For every head, the first-order estimate of ablating it is ``grad . (replacement - z)``,
with the gradient of the task metric (and of the reference loss) with respect to the
head's output ``hook_z``: one forward and one backward pass give all heads at once. The
estimated contrastive reward is ``-d_metric - lam * d_loss``.

This is a **white-box** baseline: unlike the policies, it reads the task metric of the
episode's prompts (not the oracle). ``compare_with_sweep`` reports how well its ranking
agrees with the exact sweep (Spearman correlation, top-1 agreement).

    python -m circuit_gym.baselines.greedy
"""

from __future__ import annotations

import numpy as np

from circuit_gym.solvers.contrastive import _gradient_estimate, attribution_scores, forget_reference_estimates
from circuit_gym.stats import spearman

# The estimate itself lives in circuit_gym.solvers.contrastive (the leaderboard's builtin
# "greedy" runs it too); re-exported here.
__all__ = ["_gradient_estimate", "attribution_scores", "compare_with_sweep", "forget_reference_estimates"]


def compare_with_sweep(env, estimate: np.ndarray | None = None) -> dict:
    """Rank agreement of the estimate (computed here unless given) with the exact single-head
    sweep, this episode."""
    est = attribution_scores(env) if estimate is None else estimate
    exact = env.unwrapped.episode.table.reward
    return {"spearman": spearman(est, exact), "top1_agree": int(np.argmax(est)) == int(np.argmax(exact))}


if __name__ == "__main__":
    from circuit_gym.baselines.common import evaluate_and_print

    evaluate_and_print("greedy", lambda obs, env: attribution_scores(env))
