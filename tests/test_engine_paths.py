"""The ablation engine's rarely taken paths, forced on the 4 x 4 model and checked against
plain hooked forward passes: the bridge's ``start_at_layer`` fallback, a layer's heads split
across several stacked passes (small residual budget), and logits unembedded a few rows at a
time (small logit budget)."""

import numpy as np
import pytest
import torch

import circuit_gym.ablation.engine as engine_module
from circuit_gym.ablation import ABLATIONS, AblationEngine, Evaluation
from circuit_gym.tasks import get_task


class BridgeFallbackEngine(AblationEngine):
    """An engine that takes the path used when calling blocks directly does not reproduce
    the clean pass: the bridge's own ``forward(start_at_layer=...)``."""

    def _check_direct_blocks(self, clean_logits: torch.Tensor) -> bool:
        super()._check_direct_blocks(clean_logits)
        self._fast, self._direct_blocks = None, False
        return False


def _per_row_by_hand(model, engine: AblationEngine, heads_by_layer: dict[int, list[int]]) -> np.ndarray:
    """Per-row scores of one full forward pass with ``heads_by_layer`` replaced by the engine's
    replacement values (hooks written here, not the engine's)."""

    def hook(z, hook):
        layer = int(hook.name.split(".")[1])
        z = z.clone()
        for head in heads_by_layer[layer]:
            z[:, :, head] = engine.replacement[layer][:, :, head]
        return z

    names = [f"blocks.{layer}.attn.hook_z" for layer in heads_by_layer]
    with torch.no_grad():
        logits = model.run_with_hooks(engine.ev.tokens, fwd_hooks=[(n, hook) for n in names])
    return engine.ev.score(logits[:, engine.ev.positions]).double().numpy()


def _sweep_rows_by_hand(model, engine: AblationEngine) -> np.ndarray:
    n_heads = int(model.cfg.n_heads)
    return np.stack(
        [
            _per_row_by_hand(model, engine, {h // n_heads: [h % n_heads]})
            for h in range(engine.n_layers * n_heads)
        ]
    )


def _engine(model, cls, kind: str, name: str = "ioi") -> AblationEngine:
    task = get_task(name)
    return cls(model, Evaluation.for_task(task, task.batch(model, "eval", 5, seed=2)), kind)


@pytest.mark.parametrize("kind", ABLATIONS)
def test_bridge_start_at_layer_fallback_equals_plain_hooked_passes(tiny_model, kind):
    engine = _engine(tiny_model, BridgeFallbackEngine, kind)
    assert engine._fast is None and engine._direct_blocks is False  # the fallback is what runs
    by_hand = _sweep_rows_by_hand(tiny_model, engine)
    assert np.abs(by_hand.mean(1) - engine.clean_score).max() > 1e-2  # some head matters
    np.testing.assert_allclose(engine.sweep_rows(), by_hand, rtol=0, atol=1e-4)
    # a set across layers restarts at its lowest layer
    heads = {1: [0, 3], 3: [2]}
    assert engine.score([4, 7, 14]) == pytest.approx(
        _per_row_by_hand(tiny_model, engine, heads).mean(), abs=1e-4
    )


@pytest.mark.parametrize("path", ["fast", "bridge"])
def test_a_layer_split_across_passes_equals_plain_hooked_passes(tiny_model, monkeypatch, path):
    """A residual budget of 3 copies of the batch: each layer's 4 heads run as 3 + 1 (the
    split's index arithmetic); a logit budget of one row's logits: unembedded row by row."""
    probe = _engine(tiny_model, AblationEngine, "resample", "docstring")
    batch, seq = probe.ev.tokens.shape
    one_copy = batch * seq * int(tiny_model.cfg.d_model)
    monkeypatch.setattr(engine_module, "RESID_BUDGET", 3 * one_copy)
    monkeypatch.setattr(engine_module, "LOGIT_BUDGET", len(probe.ev.positions) * int(tiny_model.cfg.d_vocab))
    cls = AblationEngine if path == "fast" else BridgeFallbackEngine
    engine = _engine(tiny_model, cls, "resample", "docstring")
    assert (engine._fast is not None) == (path == "fast")
    calls = []
    chunk = engine._sweep_layer_chunk

    def counted(layer, heads):
        calls.append((layer, tuple(heads)))
        return chunk(layer, heads)

    monkeypatch.setattr(engine, "_sweep_layer_chunk", counted)
    rows = engine.sweep_rows()
    assert calls == [(layer, heads) for layer in range(4) for heads in ((0, 1, 2), (3,))]
    np.testing.assert_allclose(rows, _sweep_rows_by_hand(tiny_model, engine), rtol=0, atol=1e-4)
