"""GIM's backward rules (circuit_gym.ablation.gim) against independent computations: the package's
softmax rule written out, attribution patching with the rules off, a finite difference of a model
whose LayerNorm scales are held at the clean run's, and two hand-built models with self-repair."""

import json
import shutil
import warnings

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.ablation.gim import GIM_OFF, GimRules, gim_attribution, softmax_at_temperature_backward
from circuit_gym.models.loading import embedded_dir, load_model
from circuit_gym.tasks import get_task


def test_temperature_rule_is_the_packages():
    """Backward through softmax then the rule = the Jacobian of softmax at x / T applied to the
    incoming gradient (gim-explain's ``_SoftmaxBackwardTOnly``), causal mask included."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 5, dtype=torch.float64) * 3
    x = x.masked_fill(torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), float("-inf"))
    weights = torch.randn(2, 3, 5, 5, dtype=torch.float64)
    for temperature in (1.0, 2.0, 3.5):
        leaf = x.clone().requires_grad_(True)
        pattern = softmax_at_temperature_backward(torch.softmax(leaf, -1), temperature)
        assert torch.equal(pattern.detach(), torch.softmax(x, -1))  # forward unchanged
        (got,) = torch.autograd.grad((pattern * weights).sum(), leaf)
        y = (x / temperature).detach().requires_grad_(True)
        (expected,) = torch.autograd.grad((torch.softmax(y, -1) * weights).sum(), y)
        assert torch.allclose(got, expected.nan_to_num(0.0), atol=1e-10)


def _z_and_score(model, task_name: str):
    task = get_task(task_name)
    batch = task.batch(model, "train", 4, seed=0)
    names = [f"blocks.{layer}.attn.hook_z" for layer in range(model.cfg.n_layers)]
    with torch.no_grad():
        _, cache = model.run_with_cache(batch.tokens, names_filter=lambda n: n in names)
    clean_z = [cache[n] for n in names]
    repl = [z.mean((0, 1), keepdim=True).expand_as(z) for z in clean_z]

    def score(logits):
        return task.metric(logits[:, batch.positions], batch).mean()

    return batch.tokens, clean_z, repl, score


def test_off_equals_attribution_patching(tiny_model):
    tokens, clean_z, repl, score = _z_and_score(tiny_model, "ioi")
    plain = attribution_patching(tiny_model, tokens, clean_z, repl, score)
    off = gim_attribution(tiny_model, tokens, clean_z, repl, score, GIM_OFF)
    assert np.abs(plain).max() > 1e-2
    np.testing.assert_allclose(off, plain, rtol=1e-4, atol=1e-5)
    # each rule alone changes the gradient: its hooks sit inside the computation
    for rules in (GimRules(True, 1.0, 1.0, 1.0, 1.0), GimRules(False, 2.0, 1.0, 1.0, 1.0),
                  GimRules(False, 1.0, 0.25, 1.0, 1.0), GimRules(False, 1.0, 1.0, 1.0, 0.5)):  # fmt: skip
        assert np.abs(gim_attribution(tiny_model, tokens, clean_z, repl, score, rules) - plain).max() > 1e-2


def test_frozen_norm_gradient_is_a_finite_difference(tiny_model):
    """With only the frozen-norm rule, GIM's estimate of a head = the derivative along
    ``z + eps (repl - z)`` of a model whose every LayerNorm divides by the clean run's scale."""
    tokens, clean_z, repl, score = _z_and_score(tiny_model, "docstring")
    frozen = gim_attribution(tiny_model, tokens, clean_z, repl, score, GimRules(True, 1.0, 1.0, 1.0, 1.0))
    plain = attribution_patching(tiny_model, tokens, clean_z, repl, score)
    with torch.no_grad():
        _, cache = tiny_model.run_with_cache(tokens, names_filter=lambda n: n.endswith("hook_scale"))
    scales = {name: cache[name] for name in cache}
    assert len(scales) == tiny_model.cfg.n_layers + 1

    def moved(layer: int, head: int, eps: float) -> float:
        def perturb(z, hook):
            z = z.clone()
            z[:, :, head] += eps * (repl[layer][:, :, head] - clean_z[layer][:, :, head])
            return z

        hooks = [(f"blocks.{layer}.attn.hook_z", perturb)]
        hooks += [(name, lambda s, hook, c=value: c.clone()) for name, value in scales.items()]
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the bridge warns that a hook edits hook_scale
            return float(score(tiny_model.run_with_hooks(tokens, fwd_hooks=hooks)))

    checked = 0
    for head in np.argsort(-np.abs(frozen - plain))[:3]:  # where freezing matters most
        layer, h = divmod(int(head), tiny_model.cfg.n_heads)
        eps = 1e-2
        difference = (moved(layer, h, eps) - moved(layer, h, -eps)) / (2 * eps)
        assert frozen[head] == pytest.approx(difference, rel=2e-2, abs=2e-3)
        assert abs(frozen[head] - plain[head]) > 5 * (2e-2 * abs(difference) + 2e-3)  # tells them apart
        checked += 1
    assert checked == 3


# ---- hand-built self-repair -------------------------------------------------------------------
# A 2-layer, 2-head attention-only model (d_model 12; each feature is e_i - e_{i+6}, so LayerNorm's
# centring leaves it alone). Prompt [t0, tA, t3, t3]; the metric is the logit of token 2 at the
# last position. Head 0.0 (W) writes WANT everywhere; head 0.1 (D) writes DIRECT, which the
# answer logit reads; head 1.0 (R) queries WANT against keys ISA (only tA has it), reads ISA and
# writes ANSWER, which the answer logit reads too. Head 1.1 is silent.
D, PAIR = 12, 6
ISA, WANT, CONST, ANSWER, DIRECT = 0, 1, 3, 4, 5
TOKENS = torch.tensor([[0, 1, 3, 3]])


def _feature(i: int) -> torch.Tensor:
    v = torch.zeros(D)
    v[i], v[i + PAIR] = 1.0, -1.0
    return v


def _hand_built(directory, *, s: float, r_gain: float, d_gain: float, const: float):
    tok = embedded_dir("toy")
    vocab = json.loads((tok / "config.json").read_text())["d_vocab"]
    config = {"n_layers": 2, "n_heads": 2, "d_model": D, "d_head": 4, "n_ctx": 8, "d_vocab": vocab,
              "attn_only": True, "normalization_type": "LN", "positional_embedding_type": "standard",
              "act_fn": "gelu", "architecture": "TransformerLensNative"}  # fmt: skip
    state = {"tok_embed.weight": const * _feature(CONST).repeat(vocab, 1), "pos.weight": torch.zeros(8, D)}
    state["tok_embed.weight"][1] += _feature(ISA)
    for layer in range(2):
        q, k, v, o = torch.zeros(8, D), torch.zeros(8, D), torch.zeros(8, D), torch.zeros(D, 8)
        if layer == 0:  # W and D attend uniformly (no query or key)
            v[0, CONST], o[:, 0] = 1.0, 0.3 * _feature(WANT)
            v[4, CONST], o[:, 4] = 1.0, d_gain * _feature(DIRECT)
        else:
            q[0, WANT], k[0, ISA] = s, s
            v[0, ISA], o[:, 0] = 1.0, r_gain * _feature(ANSWER)
        p = f"layers.{layer}"
        state.update({f"{p}.ln1.weight": torch.ones(D), f"{p}.ln1.bias": torch.zeros(D),
                      f"{p}.attn.o.weight": o, f"{p}.attn.o.bias": torch.zeros(D)})  # fmt: skip
        for name, w in (("q", q), ("k", k), ("v", v)):
            state[f"{p}.attn.{name}.weight"], state[f"{p}.attn.{name}.bias"] = w, torch.zeros(8)
    head = torch.zeros(vocab, D)
    head[2, ANSWER] = head[2, DIRECT] = 1.0
    state.update({"ln_out.weight": torch.ones(D), "ln_out.bias": torch.zeros(D), "head.weight": head})
    (directory / "config.json").write_text(json.dumps(config))
    save_file({k: t.contiguous() for k, t in state.items()}, str(directory / "model.safetensors"))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tok / name, directory / name)
    return load_model("hand-built", path=directory)


SELF_REPAIR = {
    # R dominates the final residual: ablating it, the final LayerNorm scales the rest up
    "layernorm": {"s": 3.0, "r_gain": 4.0, "d_gain": 0.1, "const": 1.0, "target": 2},
    # a large constant keeps LayerNorm nearly linear; R's pattern on tA is saturated (0.97), so
    # the gradient of W (which makes R's query) is small while ablating W spreads R's attention
    "softmax": {"s": 6.0, "r_gain": 1.0, "d_gain": 0.03, "const": 4.0, "target": 0},
}


@pytest.mark.parametrize("case", SELF_REPAIR)
def test_gim_ranks_a_self_repaired_head_as_ablation_does(case, tmp_path):
    """The target head's exact ablation damage (plain hooks) beats D's; plain gradients rank it
    below D, GIM (published rules) above D, in the exact ablation's order of all four heads."""
    settings = dict(SELF_REPAIR[case])
    target = settings.pop("target")
    model = _hand_built(tmp_path, **settings)
    names = ["blocks.0.attn.hook_z", "blocks.1.attn.hook_z"]
    with torch.no_grad():
        logits, cache = model.run_with_cache(TOKENS, names_filter=lambda n: n in names)
    clean_z = [cache[n] for n in names]
    zeros = [torch.zeros_like(z) for z in clean_z]

    def score(lg):
        return lg[:, -1, 2].mean()

    def damage(head: int) -> float:
        layer, h = divmod(head, 2)

        def ablate(z, hook):
            z = z.clone()
            z[:, :, h] = 0.0
            return z

        with torch.no_grad():
            return float(score(logits)) - float(
                score(model.run_with_hooks(TOKENS, fwd_hooks=[(names[layer], ablate)]))
            )

    exact = np.array([damage(h) for h in range(4)])
    plain = -attribution_patching(model, TOKENS, clean_z, zeros, score)
    gim = -gim_attribution(model, TOKENS, clean_z, zeros, score)
    direct = 1  # D: its whole effect is linear, so every method sees it
    assert exact[target] > 1.5 * exact[direct]
    assert plain[target] < plain[direct]
    assert gim[target] > gim[direct]
    assert list(np.argsort(-gim)) == list(np.argsort(-exact))
