"""The ablation engine's rarely taken paths, forced on the 4 x 4 model and checked against
plain hooked forward passes: the bridge's ``start_at_layer`` fallback, a layer's heads split
across several stacked passes (small residual budget), and logits unembedded a few rows at a
time (small logit budget).

And the replay's two attention paths (issue 46), with their tolerances (float32): a head's output ``z`` recomputed from the bridge's own
``hook_q`` / ``hook_k`` / ``hook_v`` must match its ``hook_z`` to 1e-5 (absolute and
relative), on every model family: the embedded models (``tiny``, ``toy``), a zoo member, the
fixed planted model (32-dim heads) and a generated planted seed, and a GPT-2-architecture
checkpoint. Sweeps and circuit scores on the matmul path must match the plain hooked loop to
1e-4 in the task metric (the engine's own replay check uses the same bound); a swapped
softmax axis, a mask off by one position or a missing ``1 / sqrt(d_head)`` breaks both by
orders of magnitude more.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import circuit_gym.ablation.engine as engine_module
from circuit_gym.ablation import ABLATIONS, AblationEngine, Evaluation, tables
from circuit_gym.ablation.engine import ATTENTION_ENV_VAR, attention_cache_fields, default_attention
from circuit_gym.ablation.fast_blocks import (
    MATMUL_MAX_D_HEAD,
    MATMUL_MAX_SEQ,
    causal_attention,
    matmul_attention,
    uses_matmul,
)
from circuit_gym.circuits import Circuit, CircuitRunner
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task
from circuit_gym.tasks.reference import reference_batch


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


# ---------------------------------------------------------------- attention paths (issue 46)
Z_TOL = 1e-5
SCORE_TOL = 1e-4


def _hooked_qkvz(model, tokens: torch.Tensor, layer: int) -> tuple[torch.Tensor, ...]:
    """The bridge's own q, k, v (as [batch, head, seq, d_head]) and z ([batch, seq, head, d_head])."""
    names = [f"blocks.{layer}.attn.hook_{x}" for x in "qkvz"]
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens, names_filter=lambda n: n in names)
    q, k, v = (cache[n].transpose(1, 2) for n in names[:3])
    return q, k, v, cache[names[3]]


def _family(name: str, random_gpt2_dir):
    if name == "gpt2_shape":
        return load_model("gpt2", path=random_gpt2_dir)
    if name == "planted_fixed":
        from circuit_gym.models.planted.fixed import load_planted_model

        return load_planted_model()
    if name == "planted_seed":
        from circuit_gym.models.planted.generator import model_name, planted_checkpoint

        path, _ = planted_checkpoint(7)
        return load_model(model_name(7), path=path)
    return load_model(name)


FAMILIES = ["tiny", "toy", "zoo1", "planted_fixed", "planted_seed", "gpt2_shape"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("path", ["sdpa", "matmul"])
def test_attention_reproduces_the_bridges_hook_z_on_every_model_family(family, path, random_gpt2_dir):
    model = _family(family, random_gpt2_dir)
    n_layers = int(model.cfg.n_layers)
    tokens = torch.randint(0, int(model.cfg.d_vocab), (3, 13), generator=torch.Generator().manual_seed(0))
    for layer in (0, n_layers - 1):
        q, k, v, z = _hooked_qkvz(model, tokens, layer)
        assert uses_matmul(path, tokens.shape[1], q.shape[3]) == (
            path == "matmul" and q.shape[3] <= MATMUL_MAX_D_HEAD
        )
        torch.testing.assert_close(causal_attention(q, k, v, path), z, atol=Z_TOL, rtol=Z_TOL)


@pytest.mark.parametrize("seq, d_head", [(MATMUL_MAX_SEQ + 1, 12), (MATMUL_MAX_SEQ, MATMUL_MAX_D_HEAD + 1)])
def test_shapes_outside_the_rule_stay_on_sdpa_bit_for_bit(seq, d_head):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, seq, d_head, generator=g) for _ in range(3))
    assert not uses_matmul("matmul", seq, d_head) and uses_matmul("matmul", MATMUL_MAX_SEQ, MATMUL_MAX_D_HEAD)
    assert torch.equal(causal_attention(q, k, v, "matmul"), causal_attention(q, k, v, "sdpa"))
    with pytest.raises(ValueError, match="attention must be one of"):
        causal_attention(q, k, v, "flash")


def test_each_row_and_head_is_computed_on_its_own():
    """The masked replay computes subsets of rows and heads and expects the full call's numbers
    bit for bit."""
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(6, 5, 15, 12, generator=g) for _ in range(3))
    full = matmul_attention(q, k, v)
    rows, heads = [1, 4], [0, 3]
    part = matmul_attention(q[rows][:, heads], k[rows][:, heads], v[rows][:, heads])
    assert torch.equal(part, full[rows][:, :, heads])


def _tiny_engine(tiny_model, attention: str) -> AblationEngine:
    task = get_task("ioi")
    batch = task.batch(tiny_model, "test", 4, seed=0)
    return AblationEngine(tiny_model, Evaluation.for_task(task, batch), "resample", attention)


def test_matmul_sweep_equals_the_hooked_loop_on_the_tiny_model(tiny_model):
    engine = _tiny_engine(tiny_model, "matmul")
    assert engine._fast is not None and engine._fast.attention == "matmul"
    np.testing.assert_allclose(engine.sweep(), engine.naive_sweep(), atol=SCORE_TOL, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["toy", "zoo1", "planted_fixed"])
def test_matmul_sweep_equals_the_hooked_loop_on_144_head_models(family, random_gpt2_dir):
    model = _family(family, random_gpt2_dir)
    from circuit_gym.models.planted.fixed import PLANTED_TASK

    task = PLANTED_TASK if family == "planted_fixed" else get_task("ioi")
    batch = task.batch(model, "test", 2, seed=0)
    engine = AblationEngine(model, Evaluation.for_task(task, batch), "resample", "matmul")
    assert engine._fast is not None
    np.testing.assert_allclose(engine.sweep(), engine.naive_sweep(), atol=SCORE_TOL, rtol=0)


def test_gpt2_blocks_ignore_the_setting(random_gpt2_dir):
    """GPT-2's MLP blocks run through the bridge on both settings: the same numbers, bit for bit."""
    model = load_model("gpt2", path=random_gpt2_dir)
    task = get_task("ioi")
    ev = Evaluation.for_task(task, task.batch(model, "test", 2, seed=0))
    sdpa, matmul = (AblationEngine(model, ev, "zero", a) for a in ("sdpa", "matmul"))
    assert sdpa._fast is None and matmul._fast is None
    assert sdpa.score([5, 40, 143]) == matmul.score([5, 40, 143])


def test_masked_replay_is_bit_identical_to_the_plain_pass_on_the_matmul_path(tiny_model):
    runner = CircuitRunner(_tiny_engine(tiny_model, "matmul"))
    rng = np.random.default_rng(0)
    circuits = [Circuit.of(np.flatnonzero(rng.random(16) < p), 4, 4) for p in (0.1, 0.3, 0.5, 0.7, 0.9)]
    masked = CircuitRunner(runner.engine, "masked").metric_rows(circuits)
    plain = CircuitRunner(runner.engine, "plain").metric_rows(circuits)
    assert np.array_equal(masked, plain)
    hooked = [runner.engine.score(np.flatnonzero(~c.mask)) for c in circuits]  # ablate what is outside
    np.testing.assert_allclose(masked.mean(1), hooked, atol=SCORE_TOL, rtol=0)


def test_the_setting_follows_the_environment_and_names_its_cache_entries(tiny_model, monkeypatch, tmp_path):
    task = get_task("ioi")
    batch = task.batch(tiny_model, "train", 4, seed=0)
    ref = reference_batch(tiny_model)
    monkeypatch.delenv(ATTENTION_ENV_VAR, raising=False)
    assert default_attention() == "sdpa"
    sdpa_key = tables.sweep_key(tiny_model, task, batch, ref, "zero")
    assert "attention" not in sdpa_key and attention_cache_fields("sdpa") == {}  # issue 46 kept the old keys
    monkeypatch.setenv(ATTENTION_ENV_VAR, "matmul")
    assert _tiny_engine(tiny_model, None).attention == "matmul"  # type: ignore[arg-type]
    matmul_key = tables.sweep_key(tiny_model, task, batch, ref, "zero")
    assert matmul_key["attention"] == "matmul" and matmul_key != sdpa_key
    cache = tables.SweepCache(tmp_path)
    # the process's general-damage memo starts empty: another test in this process (a pytest-xdist
    # worker runs several files) may have computed the sdpa table already, which then never reaches disk
    monkeypatch.setattr(tables, "_GENERAL", {})
    on_matmul = tables.sweep_table(tiny_model, task, batch, ref, cache=cache)
    monkeypatch.setenv(ATTENTION_ENV_VAR, "sdpa")
    on_sdpa = tables.sweep_table(tiny_model, task, batch, ref, cache=cache)
    assert len(list(tmp_path.glob("sweep-*.json"))) == 2  # one table per path, never shared
    assert len(list(tmp_path.glob("general-*.json"))) == 2
    np.testing.assert_allclose(on_matmul.task_damage, on_sdpa.task_damage, atol=SCORE_TOL, rtol=0)
    monkeypatch.setenv(ATTENTION_ENV_VAR, "typo")
    with pytest.raises(ValueError, match="attention must be one of"):
        default_attention()
