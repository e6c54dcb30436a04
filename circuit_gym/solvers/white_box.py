"""The white-box reference solvers: they read the task metric (not the oracle), run in the
scorer's process, and count their own language-model passes. One registry for both tracks
(:data:`BUILTINS`), used by the leaderboard's scorers (``--builtin NAME``) and by ``baselines/``.

Each entry answers for the tracks it plays, with one signature per track:

- single-head track: ``rank(env) -> scores``, one score per head of the episode of a
  ``CircuitDiscovery-*`` env (higher = ablate first); the scorer counts the passes it makes;
- circuit track: ``build() -> CircuitSolver`` (:mod:`circuit_gym.solvers.episodes`), a fresh
  solver whose ``begin`` returns the passes it spent beyond the environment's.

The solvers:

- ``greedy`` (single-head): attribution patching of the contrastive reward, one forward and one
  backward pass (:mod:`circuit_gym.solvers.contrastive`);
- ``greedy_search`` (circuit): exact greedy search, every candidate circuit each step;
- ``attribution`` (circuit): attribution patching's estimate, heads added while it beats alpha;
- ``acdc`` (both): ACDC's threshold sweep at head level (:mod:`circuit_gym.solvers.acdc`);
- ``eap_ig`` (both): EAP-IG at node level, 5 integrated-gradient steps stacked in one forward
  and one backward pass (:mod:`circuit_gym.ablation.integrated_gradients`);
- ``gim`` (both): GIM at head level, attribution patching with GIM's backward rules (frozen
  LayerNorm scale, softmax gradient at temperature 2, Q/K/V gradient scaling;
  :mod:`circuit_gym.ablation.gim`), one forward and one backward pass.

On the circuit track ACDC, EAP-IG and GIM play as attribution does (:class:`RankingInsertion`): their
scores, in faithfulness units (divided by ``m(full) - m(empty)``), order the heads, which are
added while the score beats ``alpha``. For ACDC that is the circuit its sweep keeps at the
threshold ``alpha * |m(full) - m(empty)|``. On the single-head track their scores (task-metric
importance, not the contrastive reward) rank the heads to ablate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.ablation.gim import gim_importance
from circuit_gym.ablation.integrated_gradients import integrated_gradients
from circuit_gym.benchmark import CIRCUIT, SINGLE_HEAD
from circuit_gym.circuits import CircuitRunner
from circuit_gym.envs.circuit_building import CircuitBuildingEnv
from circuit_gym.solvers import contrastive
from circuit_gym.solvers.acdc import acdc
from circuit_gym.solvers.episodes import CircuitSolver

ATTRIBUTION_PASSES = 2  # one forward and one backward pass
EAP_IG_STEPS = 5


class GreedySearch:
    name = "greedy_search"

    def __init__(self) -> None:
        self._last: np.ndarray | None = None

    def begin(self, env: CircuitBuildingEnv) -> int:
        self._last = None
        return 0  # its candidate passes are counted by the env (oracle_forward_passes)

    def act(self, env, obs, info) -> int:
        gains = env.candidate_gains()
        self._last = gains
        if not np.isfinite(gains).any():
            return env.stop_action
        head = int(np.nanargmax(gains))
        return head if gains[head] - env.alpha > 0 else env.stop_action

    def scores(self, env, obs, info) -> np.ndarray:
        return np.nan_to_num(self._last, nan=-np.inf) if self._last is not None else np.zeros(env.n_total)


def attribution_scores(env: CircuitBuildingEnv) -> np.ndarray:
    """Attribution patching's estimated faithfulness lost when each head alone is ablated from
    the full model (higher = more important), in faithfulness units."""
    state = env.state
    engine = state.runner.engine
    ev = engine.ev
    change = attribution_patching(engine.model, ev.tokens, engine.clean_z, engine.replacement,
                                  lambda logits: ev.score(logits[:, ev.positions]).mean())  # fmt: skip
    return -change / (state.full_metric - state.empty_metric)


def _finite(scores: np.ndarray) -> np.ndarray:
    """``scores`` with +inf (ACDC: kept by every threshold) above every finite score."""
    finite = scores[np.isfinite(scores)]
    top = float(finite.max()) if finite.size else 0.0
    return np.where(np.isposinf(scores), top + 1.0, scores)


class RankingInsertion:
    """Adds heads in the order of a one-shot ranking while the next head's score beats ``alpha``
    (``score(env) -> (scores in faithfulness units, passes)`` at the episode's start)."""

    def __init__(self, name: str, score: Callable[[CircuitBuildingEnv], tuple[np.ndarray, int]]) -> None:
        self.name = name
        self._score = score
        self._scores = np.zeros(0)

    def begin(self, env: CircuitBuildingEnv) -> int:
        scores, passes = self._score(env)
        self._scores = _finite(np.asarray(scores, dtype=np.float64))
        return passes

    def act(self, env, obs, info) -> int:
        free = np.flatnonzero(info["action_mask"][: env.n_total])
        if len(free) == 0:
            return env.stop_action
        head = int(free[np.argmax(self._scores[free])])
        return head if self._scores[head] - env.alpha > 0 else env.stop_action

    def scores(self, env, obs, info) -> np.ndarray:
        return self._scores


class AttributionInsertion(RankingInsertion):
    """Attribution patching's estimate (:func:`attribution_scores`) orders the heads."""

    def __init__(self) -> None:
        super().__init__("attribution", lambda env: (attribution_scores(env), ATTRIBUTION_PASSES))


def acdc_faithfulness(env: CircuitBuildingEnv) -> tuple[np.ndarray, int]:
    """ACDC's scores of the episode's heads in faithfulness units, and its passes: one for the
    empty circuit, one per circuit it tried."""
    state = env.state
    result = acdc(state.runner)
    scores = np.asarray(result.ranking.scores, dtype=np.float64)
    return scores / abs(state.full_metric - state.empty_metric), 1 + result.tries


def eap_ig_faithfulness(env: CircuitBuildingEnv) -> tuple[np.ndarray, int]:
    """EAP-IG's scores of the episode's heads in faithfulness units, and its passes: the
    ``EAP_IG_STEPS`` copies of the batch stacked, one forward and one backward pass each."""
    state = env.state
    scores = integrated_gradients(state.runner.engine, EAP_IG_STEPS)
    return scores / (state.full_metric - state.empty_metric), 2 * EAP_IG_STEPS


def _episode_runner(env: gym.Env) -> CircuitRunner:
    """A runner of the single-head episode's batch (its clean and counterfactual passes are the
    solver's, so built inside the counted call)."""
    base = env.unwrapped
    return CircuitRunner.for_task(base.model, base.episode.pool.task, base.episode.batch, base.ablation)


def acdc_rank(env: gym.Env) -> np.ndarray:
    """Single-head track: ACDC's scores of the episode's heads (kept longest = ablate first)."""
    return _finite(np.asarray(acdc(_episode_runner(env)).ranking.scores, dtype=np.float64))


def eap_ig_rank(env: gym.Env) -> np.ndarray:
    """Single-head track: EAP-IG's scores of the episode's heads (most important = ablate first)."""
    return integrated_gradients(_episode_runner(env).engine, EAP_IG_STEPS)


def gim_faithfulness(env: CircuitBuildingEnv) -> tuple[np.ndarray, int]:
    """GIM's scores of the episode's heads in faithfulness units, and its passes (one forward,
    one backward)."""
    state = env.state
    return gim_importance(state.runner.engine) / (state.full_metric - state.empty_metric), ATTRIBUTION_PASSES


def gim_rank(env: gym.Env) -> np.ndarray:
    """Single-head track: GIM's scores of the episode's heads (most important = ablate first)."""
    return gim_importance(_episode_runner(env).engine)


@dataclass(frozen=True)
class WhiteBox:
    """A builtin white-box solver: what it does, and how it plays each track (None: not that one)."""

    name: str
    about: str
    rank: Callable[[gym.Env], np.ndarray] | None = None  # single-head track
    build: Callable[[], CircuitSolver] | None = None  # circuit track
    # before a scoring run: drop what an earlier run kept, so pass counts do not depend on it
    reset: Callable[[], None] = lambda: None
    # the single-head track: the env's per-episode state it reads, built before the count starts
    prepare: Callable[[gym.Env], object] = lambda env: None

    def plays(self, track: str) -> bool:
        return (self.rank if track == SINGLE_HEAD else self.build) is not None


BUILTINS: dict[str, WhiteBox] = {
    w.name: w
    for w in (
        WhiteBox("greedy", "attribution patching of the contrastive reward", rank=contrastive.attribution_scores,
                 reset=contrastive.forget_reference_estimates, prepare=lambda env: env.unwrapped.episode.scorer),
        WhiteBox("greedy_search", "exact greedy search over candidate circuits", build=GreedySearch),
        WhiteBox("attribution", "attribution-ranked insertion", build=AttributionInsertion),
        WhiteBox("acdc", "ACDC's threshold sweep at head level", rank=acdc_rank,
                 build=lambda: RankingInsertion("acdc", acdc_faithfulness)),
        WhiteBox("eap_ig", "EAP-IG, 5 integrated-gradient steps", rank=eap_ig_rank,
                 build=lambda: RankingInsertion("eap_ig", eap_ig_faithfulness)),
        WhiteBox("gim", "GIM: attribution patching with self-repair-corrected gradients", rank=gim_rank,
                 build=lambda: RankingInsertion("gim", gim_faithfulness)),
    )
}  # fmt: skip


def builtins(track: str) -> dict[str, WhiteBox]:
    """The builtin white-box solvers that play ``track`` ("single-head" or "circuit")."""
    if track not in (SINGLE_HEAD, CIRCUIT):
        raise ValueError(f"track must be {SINGLE_HEAD!r} or {CIRCUIT!r}, got {track!r}")
    return {name: w for name, w in BUILTINS.items() if w.plays(track)}


def builtin(name: str, track: str) -> WhiteBox:
    """The builtin ``name`` for ``track``; ValueError listing that track's builtins otherwise."""
    available = builtins(track)
    if name not in available:
        raise ValueError(f"builtin must be one of {sorted(available)} on the {track} track, got {name!r}")
    return available[name]
