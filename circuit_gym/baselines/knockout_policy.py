"""The knock-out track's learned agent as a policy: its config, network and ``load_policy``
(``circuit_gym.baselines.knockout_ppo`` trains it). Kept apart from the training module, which
builds planted environments: a policy's sandbox hides the planted generator (issue 58), and what a
policy loads there must not import it.

    python -m circuit_gym.leaderboard.knockout_scorer score --track v8-knockout --scores attribution \
        --policy circuit_gym.baselines.knockout_policy:load_policy --checkpoint RUN_DIR --out R.json

(``--scores`` as the run's ``config.json`` says: the agent reads attribution alone by default, so it
spends conditional attribution's passes.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
from torch import nn

from circuit_gym.baselines.circuit_ppo import CircuitScorer
from circuit_gym.baselines.ppo_trainer import PolicyAdapter, PPOConfigBase
from circuit_gym.envs.knockout import ABLATED_COLUMN, ATTRIBUTION_COLUMN, DEFAULT_STEPS, N_COLUMNS


@dataclass
class KnockOutPPOConfig(PPOConfigBase):
    NETWORKS: ClassVar[tuple[str, ...]] = ("circuit_scorer",)

    env_id: str = "CircuitDiscovery-Planted-{Kind}-KnockOut-v0"  # every kind, one per environment
    pool_size: int = 1  # training batches per (model, kind): variety comes from the 32 models
    selection_episodes: int = 1  # the selection plays one batch of each selection model
    n_envs: int = 6
    epochs: int = 10
    steps_per_epoch: int = 384
    steps_per_collect: int = 96
    lr: float = 1e-3
    ent_coef: float = 0.01
    network: str = "circuit_scorer"
    batch_size_prompts: int = 16  # the knock-out environments' default batch
    steps: int = DEFAULT_STEPS  # K: ablations per episode
    # The observation's per-head scores (``KnockOutEnv(scores=...)``): attribution alone costs one
    # forward and one backward pass a step, conditional attribution's, so the agent is compared with
    # that reference at equal passes (issue 60).
    scores: str = "attribution"
    # The head logits start from ``prior`` x the attribution column (:class:`PriorScorer`): the
    # untrained policy is a softened conditional attribution and PPO learns where to depart from it.
    prior: float = 10.0
    # Environments on trained models besides the planted ones (issue 60: "the zoo v3 training members"):
    # ``zoo_envs`` of the ``n_envs`` play ``zoo_env_id`` over ``zoo_models`` (training members,
    # training tasks, train split, ``zoo_pool_size`` batches per (model, task)). 0: planted only.
    zoo_envs: int = 0
    zoo_env_id: str = "CircuitDiscovery-ZooV3-Multi-KnockOut-v0"
    zoo_models: str = "zoo-v3-train"
    zoo_pool_size: int = 8
    # Checkpoint selection also plays the trained members (``zoo_models``) on the training tasks whose
    # backup pair their card verifies, on the first train-split batch the training never draws
    # (``zoo_pool_size``): their cell joins the six planted kinds' mean (issue 60: the planted-only
    # score did not move while the agent got worse on trained models). False: planted kinds only.
    selection_trained: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.zoo_envs < self.n_envs:
            raise ValueError(f"zoo_envs must be in [0, n_envs = {self.n_envs}), got {self.zoo_envs}")

    @property
    def gamma(self) -> float:
        return 1.0  # finite episodes: the return is the damage after K ablations


class PriorScorer(CircuitScorer):
    """:class:`CircuitScorer` plus a learned multiple (initially ``prior``) of one observation column
    on each head's logit (STOP's unchanged). Why: with the attribution column, the network starts as
    the reference it must beat (argmax of attribution on the ablated model) instead of a uniform
    policy that 144 actions and a few hundred episodes on two cores would not get past."""

    def __init__(self, n_features: int, hidden: int, column: int, prior: float) -> None:
        super().__init__(n_features=n_features, hidden=hidden)
        self.column = column
        self.prior = nn.Parameter(torch.tensor(float(prior)))

    def logits(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        out = super().logits(obs)
        bonus = self.prior * obs[..., self.column]
        out = torch.cat([out[..., :-1] + bonus, out[..., -1:]], dim=-1)
        return out if mask is None else out.masked_fill(mask == 0, -1e9)


def make_net(config: KnockOutPPOConfig, n_features: int = N_COLUMNS) -> nn.Module:
    """A logit per head from its knock-out observation row (and every other head's) plus the
    attribution prior, and STOP."""
    return PriorScorer(n_features, config.hidden, ATTRIBUTION_COLUMN, config.prior)


class KnockOutPPOPolicy(PolicyAdapter):
    """A trained network as a knock-out policy: ``act(observation, action_mask)``; heads already
    ablated rank last."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__(net, ABLATED_COLUMN)


def load_policy(checkpoint: str) -> KnockOutPPOPolicy:
    """The kept policy of a run folder (its ``config.json`` and ``policy.pt``)."""
    directory = Path(checkpoint)
    config = KnockOutPPOConfig(**json.loads((directory / "config.json").read_text()))
    net = make_net(config)
    net.load_state_dict(torch.load(directory / "policy.pt", weights_only=True))
    return KnockOutPPOPolicy(net.eval())
