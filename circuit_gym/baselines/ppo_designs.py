"""The PPO designs compared on zoo v1's transfer board (issue 34), and where each one's runs live.

A design is the reference recipe of both tracks (``PPOConfig`` and ``CircuitPPOConfig`` as they
default) with some fields changed. The same changes apply to both tracks, so a design is one
idea, not two tunings:

- ``reference``: the static attention observation, each track's own network (``HeadScorer``,
  ``CircuitScorer``);
- ``causal``: the causal observation (``features="causal"``: attribution patching and EAP-IG
  under the model's own top-1 vs top-2 margin; in the circuit environment also the circuit's
  margin faithfulness and its changes) read by the one state-aware network both environments
  share (``network="state_scorer"``, :mod:`circuit_gym.baselines.state_scorer`);
- ``causal_long``: ``causal`` trained three times as many epochs (24 single-head, 12 circuit),
  because the causal circuit runs' selection score still rose at their last epoch. Only its
  circuit runs were trained (the single-head ones would take about 30 minutes a seed here);
- ``causal_area`` (circuit track only: the single-head environment has one step, so no curve):
  ``causal_long`` trained on the area reward (``reward="area"``: the return is the area under the
  episode's faithfulness curve, as CPR is, so the heads added first count most) instead of the
  final faithfulness.

Designs are chosen between by their checkpoint-selection score on the training models'
training tasks (held-back train-split batches), never by a held-out result.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

# Fields of the configs to set; "epochs_factor" multiplies the track's own number of epochs.
DESIGNS: dict[str, dict[str, Any]] = {
    "reference": {},
    "causal": {"features": "causal", "network": "state_scorer"},
    "causal_long": {"features": "causal", "network": "state_scorer", "epochs_factor": 3},
    "causal_area": {"features": "causal", "network": "state_scorer", "epochs_factor": 3, "reward": "area"},
}
TRACKS = ("ppo", "circuit_ppo")  # single-head PPO, circuit-building PPO


def run_name(track: str, design: str) -> str:
    """The folder (and result-file prefix) of ``design``'s runs of ``track``: ``ppo`` for the
    reference design, ``ppo_causal`` for the causal one."""
    if track not in TRACKS:
        raise ValueError(f"track must be one of {TRACKS}, got {track!r}")
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {tuple(DESIGNS)}, got {design!r}")
    return track if design == "reference" else f"{track}_{design}"


def configure(config: Any, design: str) -> Any:
    """A copy of ``config`` (a ``PPOConfig`` or ``CircuitPPOConfig``) with ``design``'s changes."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {tuple(DESIGNS)}, got {design!r}")
    changes = dict(DESIGNS[design])
    factor = changes.pop("epochs_factor", 1)
    missing = sorted(k for k in changes if not hasattr(config, k))
    if missing:  # e.g. the circuit-only reward on the single-head track: refuse, never drop it
        raise ValueError(f"design {design!r} sets {missing}, which {type(config).__name__} does not have")
    return replace(config, **changes, epochs=config.epochs * factor)
