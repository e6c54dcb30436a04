"""Attribution patching and the prediction features, against independent computations."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from test_envs import independent_scorer

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.envs.features import FEATURE_SETS, N_FEATURES, prediction_features
from circuit_gym.tasks import get_task


def _z_and_margin(model, tokens):
    names = {f"blocks.{layer}.attn.hook_z" for layer in range(model.cfg.n_layers)}
    with torch.no_grad():
        logits, cache = model.run_with_cache(tokens, names_filter=lambda n: n in names)
    top2 = logits[:, -1].topk(2, dim=-1).indices

    def margin(lg: torch.Tensor) -> torch.Tensor:
        final = lg[:, -1].double().gather(-1, top2)
        return (final[:, 0] - final[:, 1]).mean()

    return [cache[n] for n in sorted(names, key=lambda n: int(n.split(".")[1]))], margin


def test_attribution_is_the_derivative_along_the_ablation(tiny_model):
    """For a few heads, a central finite difference of the score along ``z + eps (repl - z)``
    (plain forward hooks, no autograd) equals the attribution-patching estimate."""
    tokens = get_task("ioi").batch(tiny_model, "train", 4, seed=0).tokens
    clean_z, margin = _z_and_margin(tiny_model, tokens)
    repl = [z.mean((0, 1), keepdim=True).expand_as(z) for z in clean_z]
    est = attribution_patching(tiny_model, tokens, clean_z, repl, margin)
    assert est.shape == (16,) and np.abs(est).max() > 1e-3  # not trivially zero

    def moved(layer: int, h: int, eps: float) -> float:
        def hook(z, hook):
            z = z.clone()
            z[:, :, h] += eps * (repl[layer][:, :, h] - clean_z[layer][:, :, h])
            return z

        with torch.no_grad():
            return float(
                margin(tiny_model.run_with_hooks(tokens, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)]))
            )

    for head in (1, 6, 13):
        layer, h = divmod(head, 4)
        eps = 1e-2
        finite_difference = (moved(layer, h, eps) - moved(layer, h, -eps)) / (2 * eps)
        assert est[head] == pytest.approx(finite_difference, rel=2e-2, abs=2e-3)


def test_top_direct_against_a_per_prompt_loop(tiny_model):
    """``top_direct`` recomputed prompt by prompt and head by head in numpy (an independent
    path through the head ordering, the top-two choice and the per-head normalisation)."""
    tokens = get_task("docstring").batch(tiny_model, "train", 4, seed=0).tokens
    feats = prediction_features(tiny_model, tokens)
    with torch.no_grad():
        logits, cache = tiny_model.run_with_cache(tokens)
    W_O, W_U = tiny_model.W_O.double().numpy(), tiny_model.W_U.double().numpy()
    expected = np.zeros(16)
    for b in range(tokens.shape[0]):
        final = logits[b, -1].double().numpy()
        first, second = np.argsort(-final)[:2]
        for head in range(16):
            layer, h = divmod(head, 4)
            z = cache[f"blocks.{layer}.attn.hook_z"][b, -1, h].double().numpy()
            direct = z @ W_O[layer, h] @ W_U
            expected[head] += (direct[first] - direct[second]) / direct.std(ddof=1) / tokens.shape[0]
    assert np.abs(expected).max() > 0.1  # some head moves the prediction
    np.testing.assert_allclose(feats[:, 0], expected, rtol=1e-3, atol=1e-4)


def test_prediction_ids_extend_the_attention_observation(tiny_model):
    """``features="prediction"``: the first 12 columns are the attention set's observation,
    column 14 is each head's general damage, measured here by an exact ablation."""
    plain = gym.make("CircuitDiscovery-Toy-IOI-v1", pool_size=2, batch_size=4)
    rich = gym.make("CircuitDiscovery-Toy-IOI-v1", features="prediction", pool_size=2, batch_size=4)
    obs_plain, _ = plain.reset(seed=3)
    obs_rich, _ = rich.reset(seed=3)
    assert rich.observation_space.shape == (16, len(FEATURE_SETS["prediction"])) == obs_rich.shape
    assert rich.observation_space.contains(obs_rich)
    np.testing.assert_array_equal(obs_rich[:, :N_FEATURES], obs_plain)
    scorer = independent_scorer(tiny_model, rich, 1.0)
    general = [scorer.damages([h])[1] for h in range(16)]
    np.testing.assert_allclose(obs_rich[:, N_FEATURES + 2], general, rtol=1e-4, atol=1e-5)
    obs_next, *_ = rich.step(5)
    assert obs_next[5, 10] == 1.0 and np.array_equal(obs_next[:, N_FEATURES:], obs_rich[:, N_FEATURES:])
    with pytest.raises(ValueError, match="features"):
        gym.make("CircuitDiscovery-Toy-IOI-v1", features="labels")
