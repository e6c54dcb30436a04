import numpy as np
import torch

from circuit_gym.envs.features import FEATURE_NAMES, N_STATIC, _mean_where_defined, head_features
from circuit_gym.tasks import get_task


def test_mean_where_defined_averages_only_over_queries_that_have_a_key():
    # one prompt, one head, 3 queries: only query 2 has a key (position 0)
    pattern = torch.tensor([[[[1.0, 0, 0], [0.5, 0.5, 0], [0.25, 0.25, 0.5]]]])
    keys = torch.zeros(1, 3, 3, dtype=torch.bool)
    keys[0, 2, 0] = True
    assert torch.allclose(_mean_where_defined(pattern, keys), torch.tensor([0.25]))
    assert torch.equal(_mean_where_defined(pattern, torch.zeros_like(keys)), torch.zeros(1))


def test_features_find_the_embedded_models_induction_and_previous_token_heads(tiny_model):
    batch = get_task("induction").batch(tiny_model, "eval", 8, seed=0)
    feats = head_features(tiny_model, batch.tokens)
    assert feats.shape == (16, N_STATIC) and np.isfinite(feats).all()
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    induction = feats[:, col["induction_attn"]]
    # the model card's induction heads (3.1 = 13, 1.3 = 7) lead the induction stripe
    assert set(np.argsort(-induction)[:2]) == {13, 7} and induction[13] > 0.5
    assert int(np.argmax(feats[:, col["prev_attn"]])) == 1  # head 0.1, the previous-token head
    np.testing.assert_allclose(feats[:, col["depth"]], np.repeat([0, 1 / 3, 2 / 3, 1], 4), rtol=1e-6)
