"""StateScorer: one network for both environments (state columns kept apart from head columns)."""

from __future__ import annotations

import pytest
import torch

from circuit_gym.baselines.state_scorer import StateScorer, state_columns
from circuit_gym.envs.features import CIRCUIT_FEATURE_SETS, FEATURE_SETS


def test_state_columns_are_the_columns_the_same_in_every_row():
    assert state_columns("single_head", "attention") == (11,)  # step_fraction
    assert state_columns("single_head", "causal") == (11, 14)  # + steps_left
    assert state_columns("circuit", "attention") == (11, 12)  # faithfulness, budget_used
    names = CIRCUIT_FEATURE_SETS["causal"]
    assert [names[i] for i in state_columns("circuit", "causal")] == [
        "faithfulness", "budget_used", "faithfulness_change", "margin_faithfulness",
        "margin_faithfulness_change", "steps_left",
    ]  # fmt: skip
    assert all(
        "attention" not in FEATURE_SETS[f][i] for f in FEATURE_SETS for i in state_columns("single_head", f)
    )


@pytest.mark.parametrize(("environment", "features", "stop"), [("single_head", "causal", False), ("circuit", "causal", True),
                                                               ("circuit", "attention", True)])  # fmt: skip
def test_heads_are_exchangeable_and_the_state_reaches_every_logit(environment, features, stop):
    sets = FEATURE_SETS if environment == "single_head" else CIRCUIT_FEATURE_SETS
    n_features, state = len(sets[features]), state_columns(environment, features)
    torch.manual_seed(0)
    net = StateScorer(n_features, state, hidden=16, stop=stop).eval()
    obs = torch.rand(2, 16, n_features)
    obs[..., list(state)] = obs[:, :1, list(state)]  # state columns: the same in every row
    logits = net.logits(obs)
    assert logits.shape == (2, 16 + stop) and net.state_value(obs).shape == (2, 1)
    perm = torch.randperm(16)
    # permuting the heads permutes their logits (no head index) and leaves STOP and the value alone
    torch.testing.assert_close(net.logits(obs[:, perm])[:, :16], logits[:, perm], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(net.logits(obs[:, perm])[:, 16:], logits[:, 16:], atol=1e-5, rtol=1e-5)
    other = obs.clone()
    other[..., state[0]] += 0.5  # a different episode state moves every head's logit
    assert (net.logits(other)[:, :16] - logits[:, :16]).abs().min() > 0
    mask = torch.ones(2, 16 + stop, dtype=torch.int8)
    mask[:, 3] = 0
    assert (net.logits(obs, mask)[:, 3] == -1e9).all()


def test_bad_state_columns_are_refused():
    with pytest.raises(ValueError, match="state columns"):
        StateScorer(12, (), hidden=8)
    with pytest.raises(ValueError, match="state columns"):
        StateScorer(12, (12,), hidden=8)
