"""Exact edge patching against an independent implementation written here with plain
TransformerLens hooks: the bridge's own blocks run, and hooks on ``hook_q`` / ``hook_k`` /
``hook_v`` give every head its own per-port input, built sender by sender from the names
(``{sender}->a{L}.h{H}<{port}>``) and the activations this very run records."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from circuit_gym.edges import EdgeCircuit, EdgeGraph
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task

# floats of a model's kernels, compared to tolerance: `make test` reruns them as another CPU
# rounds (ATEN_CPU_CAPABILITY=default, one thread; issue 58)
pytestmark = pytest.mark.numerics


def _names_by_hand(n_layers: int, n_heads: int) -> list[str]:
    senders = ["input"] + [f"a{layer}.h{h}" for layer in range(n_layers) for h in range(n_heads)]
    out = []
    for layer in range(n_layers):
        before = senders[: 1 + layer * n_heads]
        out += [f"{s}->a{layer}.h{h}<{p}>" for s in before for h in range(n_heads) for p in "qkv"]
    return out + [f"{s}->logits" for s in senders]


def hook_patched_metric(
    model, task, batch, ablation: str, kept: set[str], weights: dict[str, float] | None = None
) -> float:
    """m(C) by plain hooks: every receiver port's input is the residual stream of this run plus,
    for each sender whose edge into the port is not kept, (corrupt - current) of that sender
    (times ``weights[edge]`` for the edges named there: a partly patched edge, for gradients)."""
    weights = weights or {}
    n_layers, n_heads = int(model.cfg.n_layers), int(model.cfg.n_heads)
    w_o = [model.blocks[layer].attn.W_O.detach() for layer in range(n_layers)]  # [H, d_head, d]
    z_names = [f"blocks.{layer}.attn.hook_z" for layer in range(n_layers)]
    with torch.no_grad():
        _, clean = model.run_with_cache(batch.tokens)
        source = clean
        if ablation == "resample":
            _, source = model.run_with_cache(batch.counterfactual)

        def outputs(cache) -> list[torch.Tensor]:  # every sender's output, sender order
            outs = [cache["blocks.0.hook_resid_pre"]]
            for layer in range(n_layers):
                z = cache[z_names[layer]]
                outs += [z[:, :, h] @ w_o[layer][h] for h in range(n_heads)]
            return outs

        corrupt = outputs(source)
        if ablation == "mean":
            corrupt = [c.mean(0, keepdim=True).expand_as(c) for c in corrupt]
        elif ablation == "zero":
            corrupt = [torch.zeros_like(c) for c in corrupt]

        current: list[torch.Tensor] = []  # sender outputs of this patched run, as they appear
        resid: dict[int, torch.Tensor] = {}

        def port_input(layer: int, receiver: str) -> torch.Tensor:
            x = resid[layer].clone()
            for index, sender in enumerate(
                ["input"] + [f"a{earlier}.h{h}" for earlier in range(layer) for h in range(n_heads)]
            ):
                edge = f"{sender}->{receiver}"
                if edge in weights:
                    x = x + weights[edge] * (corrupt[index] - current[index])
                elif edge not in kept:
                    x = x + corrupt[index] - current[index]
            return x

        def record_resid(x, hook):
            layer = int(hook.name.split(".")[1])
            resid[layer] = x
            if layer == 0:
                current.append(x)
            return x

        def qkv(port: str):
            weight, bias = {"q": ("W_Q", "b_Q"), "k": ("W_K", "b_K"), "v": ("W_V", "b_V")}[port]

            def hook(value, hook):
                layer = int(hook.name.split(".")[1])
                block = model.blocks[layer]
                value = value.clone()
                for h in range(n_heads):
                    x = block.ln1(port_input(layer, f"a{layer}.h{h}<{port}>"))
                    value[:, :, h] = x @ getattr(block.attn, weight)[h] + getattr(block.attn, bias)[h]
                return value

            return hook

        def record_z(z, hook):
            layer = int(hook.name.split(".")[1])
            current.extend(z[:, :, h] @ w_o[layer][h] for h in range(n_heads))
            return z

        def final(x, hook):
            resid[n_layers] = x
            return port_input(n_layers, "logits")

        hooks = [(f"blocks.{layer}.hook_resid_pre", record_resid) for layer in range(n_layers)]
        hooks += [(f"blocks.{layer}.attn.hook_{p}", qkv(p)) for layer in range(n_layers) for p in "qkv"]
        hooks += [(name, record_z) for name in z_names] + [("ln_final.hook_in", final)]
        logits = model.run_with_hooks(batch.tokens, fwd_hooks=hooks)
        return float(task.metric(logits[:, batch.positions], batch).mean())


def _circuits(graph: EdgeGraph, seed: int) -> list[EdgeCircuit]:
    rng = np.random.default_rng(seed)
    return [EdgeCircuit.from_mask(rng.random(graph.n_edges) < share, graph) for share in (0.03, 0.5, 0.97)]


def _check(model, task_name: str, ablation: str, batch_size: int = 3) -> None:
    task = get_task(task_name)
    batch = task.batch(model, "eval", batch_size, seed=1)
    patcher = EdgePatcher.for_task(model, task, batch, ablation)
    graph = patcher.graph
    assert list(graph.names) == _names_by_hand(graph.n_layers, graph.n_heads)
    circuits = _circuits(graph, 0)
    ours = patcher.metric(circuits)
    for circuit, value in zip(circuits, ours, strict=True):
        expected = hook_patched_metric(model, task, batch, ablation, set(circuit.names()))
        assert value == pytest.approx(expected, abs=1e-5, rel=1e-5), (circuit.size, value, expected)
    # every edge kept, computed through the patching pass (no shortcut) = the clean metric
    full = patcher.masks_metric_rows(np.ones((1, graph.n_edges), dtype=bool)).mean()
    with torch.no_grad():
        clean = float(task.metric(model(batch.tokens)[:, batch.positions], batch).mean())
    assert full == pytest.approx(clean, abs=1e-5) and patcher.full_metric == pytest.approx(clean, abs=1e-5)
    empty = float(patcher.metric([EdgeCircuit.empty(graph)])[0])
    assert empty == pytest.approx(
        hook_patched_metric(model, task, batch, ablation, set()), abs=1e-5, rel=1e-5
    )
    if ablation == "resample":  # the empty circuit is the counterfactual prompt's own run
        with torch.no_grad():
            corrupted = float(task.metric(model(batch.counterfactual)[:, batch.positions], batch).mean())
        assert empty == pytest.approx(corrupted, abs=1e-5)


@pytest.mark.parametrize("ablation", ["resample", "mean", "zero"])
def test_edge_patching_matches_plain_hooks_on_tiny(tiny_model, ablation):
    _check(tiny_model, "ioi", ablation, batch_size=4)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["toy", "zoo2"])
def test_edge_patching_matches_plain_hooks_on_12x12_models(name):
    _check(load_model(name), "ioi", "resample")


@pytest.mark.slow
def test_edge_patching_matches_plain_hooks_on_a_planted_model():
    from circuit_gym.models.planted import PLANTED_TASKS, make_planted_model

    planted = make_planted_model(0)
    _check(planted.model, PLANTED_TASKS["redundant"].name, "resample")


def test_patching_is_pure_and_batches_circuits(tiny_model):
    task = get_task("ioi")
    patcher = EdgePatcher.for_task(tiny_model, task, task.batch(tiny_model, "eval", 4, seed=2))
    circuits = _circuits(patcher.graph, 3)
    before = [c.mask.copy() for c in circuits]
    together = patcher.metric(circuits)
    alone = np.array([patcher.metric([c])[0] for c in circuits])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    assert all((c.mask == m).all() for c, m in zip(circuits, before, strict=True))
    with pytest.raises(ValueError):
        patcher.metric([EdgeCircuit.empty(EdgeGraph(2, 2))])
