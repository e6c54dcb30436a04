"""One network for both environments: attention across heads, conditioned on the episode state.

:class:`~circuit_gym.baselines.ppo.HeadScorer` (single-head PPO) embeds every column of a head's
row alike, so the columns that are the same in every row (the step fraction; in the circuit
environment the circuit's faithfulness, the budget used, ...) reach each head's logit only
as one more input of its row. :class:`StateScorer` separates them:

- the **head columns** (attention features, membership, position in the circuit, and, with
  ``features="causal"``, attribution patching and EAP-IG) are embedded per head with shared
  weights, then mixed by ``layers`` self-attention layers across heads (no head index: the same
  network ranks 16 or 144 heads, on tasks it never saw);
- the **state columns** (:data:`~circuit_gym.envs.features.STATE_FEATURES`: read from the first
  row) are embedded once and added to every head's embedding before the attention, and feed
  the STOP logit (``stop=True``, the circuit environment) and the critic.

Which columns are which follows from the environment's feature names
(:func:`state_columns`), so one class serves the single-head and the circuit-building
environments, with or without the causal features.
"""

from __future__ import annotations

import torch
from torch import nn

from circuit_gym.envs.features import CIRCUIT_FEATURE_SETS, FEATURE_SETS, STATE_FEATURES


def state_columns(environment: str, features: str) -> tuple[int, ...]:
    """Indices of the observation columns that are the same in every row, for ``environment``
    (``"single_head"`` or ``"circuit"``) observed with ``features``."""
    sets = {"single_head": FEATURE_SETS, "circuit": CIRCUIT_FEATURE_SETS}[environment]
    return tuple(i for i, name in enumerate(sets[features]) if name in STATE_FEATURES)


class StateScorer(nn.Module):
    """A logit per head (and a STOP logit with ``stop=True``) and a state value."""

    def __init__(self, n_features: int, state: tuple[int, ...], hidden: int = 64, layers: int = 2,
                 attention_heads: int = 4, stop: bool = False) -> None:  # fmt: skip
        super().__init__()
        if not state or max(state) >= n_features:
            raise ValueError(f"state columns must be non-empty indices below {n_features}, got {state}")
        per_head = [i for i in range(n_features) if i not in set(state)]
        self.register_buffer("state_index", torch.tensor(state, dtype=torch.long), persistent=False)
        self.register_buffer("head_index", torch.tensor(per_head, dtype=torch.long), persistent=False)
        self.embed = nn.Sequential(
            nn.Linear(len(per_head), hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.state_embed = nn.Sequential(nn.Linear(len(state), hidden), nn.Tanh())
        self.mix = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(hidden, attention_heads, dim_feedforward=2 * hidden, dropout=0.0,
                                       batch_first=True),
            layers, enable_nested_tensor=False,
        )  # fmt: skip
        self.logit = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.stop = (
            nn.Sequential(nn.Linear(3 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1)) if stop else None
        )
        # The critic has its own embedding (as HeadScorer's): its squared-error gradients would
        # otherwise swamp the policy gradient in shared layers.
        self.value_embed = nn.Sequential(nn.Linear(len(per_head), hidden), nn.Tanh())
        self.value_state = nn.Sequential(nn.Linear(len(state), hidden), nn.Tanh())
        self.value = nn.Sequential(nn.Linear(3 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def _split(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(per-head columns [batch, heads, h], state columns of the first row [batch, s])."""
        return obs.index_select(-1, self.head_index), obs[..., 0, :].index_select(-1, self.state_index)

    def logits(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``[batch, heads (+ 1 with STOP)]``; actions whose ``mask`` is 0 get -1e9."""
        heads, state = self._split(obs)
        s = self.state_embed(state)
        x = self.embed(heads) + s[:, None]
        mixed = self.mix(x)
        out = self.logit(torch.cat([x, mixed], dim=-1)).squeeze(-1)
        if self.stop is not None:
            pooled = torch.cat([mixed.mean(-2), mixed.max(-2).values, s], dim=-1)
            out = torch.cat([out, self.stop(pooled)], dim=-1)
        return out if mask is None else out.masked_fill(mask == 0, -1e9)

    def state_value(self, obs: torch.Tensor) -> torch.Tensor:
        heads, state = self._split(obs)
        x = self.value_embed(heads)
        return self.value(torch.cat([x.mean(-2), x.max(-2).values, self.value_state(state)], dim=-1))
