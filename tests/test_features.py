import numpy as np
import pytest
import torch

from circuit_gym.envs.features import (
    FEATURE_NAMES,
    N_STATIC,
    _mean_where_defined,
    head_features,
    prediction_features,
)
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


def _static_features_by_hand(model, tokens: torch.Tensor) -> np.ndarray:
    """Columns 0-9 of ``head_features``, prompt by prompt, head by head and query by query
    in float64 numpy from the attention patterns and head outputs of a plain cached run."""
    n_layers, n_heads = int(model.cfg.n_layers), int(model.cfg.n_heads)
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens)
    toks = tokens.numpy()
    batch, seq = toks.shape
    W_O, W_U = model.W_O.double().numpy(), model.W_U.double().numpy()
    out = np.zeros((n_layers * n_heads, N_STATIC))
    norms = np.zeros(n_layers * n_heads)

    def entropy(p: np.ndarray, q: int) -> float:
        p = p[: q + 1]  # causal: keys 0..q
        p = p[p > 0]
        return float(-(p * np.log(p)).sum() / np.log(q + 1))

    for layer in range(n_layers):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"].double().numpy()  # [b, h, q, k]
        z = cache[f"blocks.{layer}.attn.hook_z"].double().numpy()  # [b, pos, h, d_head]
        for h in range(n_heads):
            row = out[layer * n_heads + h]
            bos, prev, ent, dup, ind = [], [], [], [], []
            last_bos, last_ent, last_copy, norm = [], [], [], []
            for b in range(batch):
                p = pattern[b, h]
                for q in range(1, seq):  # position 0 can only attend to itself
                    bos.append(p[q, 0])
                    prev.append(p[q, q - 1])
                    ent.append(entropy(p[q], q))
                    copies = [k for k in range(q) if toks[b, k] == toks[b, q]]
                    if copies:
                        dup.append(p[q, copies].sum())
                    followers = [k for k in range(1, q + 1) if toks[b, k - 1] == toks[b, q]]
                    if followers:
                        ind.append(p[q, followers].sum())
                last_bos.append(p[-1, 0])
                last_ent.append(entropy(p[-1], seq - 1))
                direct = z[b, -1, h] @ W_O[layer, h] @ W_U  # the head's direct logits, final position
                standard = (direct - direct.mean()) / direct.std(ddof=1)
                last_copy.append(sum(p[-1, k] * standard[toks[b, k]] for k in range(seq)))
                norm.extend(np.linalg.norm(z[b, pos, h] @ W_O[layer, h]) for pos in range(seq))
            row[:9] = [np.mean(bos), np.mean(prev), np.mean(dup) if dup else 0.0, np.mean(ind) if ind else 0.0,
                       np.mean(ent), np.mean(last_bos), np.mean(last_ent), np.mean(last_copy), 0.0]  # fmt: skip
            row[9] = layer / (n_layers - 1)
            norms[layer * n_heads + h] = np.mean(norm)
    out[:, 8] = norms / norms.max()
    return out


@pytest.mark.parametrize("name", ["induction", "ioi"])
def test_static_features_equal_a_by_hand_recomputation(tiny_model, name):
    tokens = get_task(name).batch(tiny_model, "eval", 3, seed=1).tokens
    feats = head_features(tiny_model, tokens)
    expected = _static_features_by_hand(tiny_model, tokens)
    assert np.abs(expected[:, 2]).max() > 0.05  # the prompts have duplicate tokens to attend to
    for i, column in enumerate(FEATURE_NAMES[:N_STATIC]):
        np.testing.assert_allclose(feats[:, i], expected[:, i], rtol=1e-4, atol=1e-5, err_msg=column)


def test_top_attribution_is_the_derivative_of_the_top_margin_under_mean_replacement(tiny_model):
    """Column 13 (``top_attribution``) = minus the slope of the model's own top-1 minus top-2
    logit at the final position as a head's output moves towards its mean over the batch and
    positions: a central finite difference with plain hooks, no autograd."""
    tokens = get_task("docstring").batch(tiny_model, "eval", 3, seed=0).tokens
    feats = prediction_features(tiny_model, tokens)
    assert feats.shape == (16, 2)
    with torch.no_grad():
        logits, cache = tiny_model.run_with_cache(tokens)
    top2 = logits[:, -1].topk(2, dim=-1).indices  # fixed: the clean run's top two

    def margin(eps: float, layer: int, head: int) -> float:
        def hook(z, hook):
            z = z.clone()
            z[:, :, head] += eps * (z[:, :, head].mean((0, 1), keepdim=True) - z[:, :, head])
            return z

        with torch.no_grad():
            lg = tiny_model.run_with_hooks(tokens, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)])
        final = lg[:, -1].double().gather(-1, top2)
        return float((final[:, 0] - final[:, 1]).mean())

    eps = 1e-2
    slope = np.array(
        [(margin(eps, *divmod(h, 4)) - margin(-eps, *divmod(h, 4))) / (2 * eps) for h in range(16)]
    )
    assert np.abs(slope).max() > 0.1  # some head moves the prediction
    np.testing.assert_allclose(feats[:, 1], -slope, rtol=2e-2, atol=2e-3 * np.abs(slope).max())
