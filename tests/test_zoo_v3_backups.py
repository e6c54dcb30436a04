"""Zoo v3's dormant backups (issue 55), checked with plain TransformerLens hooks, not the package's
ablation engine: per shipped v3 member and recorded pair (task, primary P, backup Q), the damages
of ablating P, Q and both (resample ablation: each head's ``hook_z`` replaced by its value on the
counterfactual prompts) and P's direct effect (its output's change added to the final residual
stream, the final LayerNorm's scale frozen at the clean run) are recomputed here on the report's
batch and compared with the committed report (docs/results/zoo/zoo_v3.json); the bar issue 55
sets (redundancy >= 2 and P's self-repair >= 0.5) is then judged from these numbers alone, and the
report's count of pairs that meet it must be that count. The report says whether the targets are
met; this test checks that what it says is what the model does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from circuit_gym.embedded import ZOO_GENERATIONS
from circuit_gym.models.loading import load_model
from circuit_gym.tasks import get_task

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "docs" / "results" / "zoo" / "zoo_v3.json"
MEMBERS = ZOO_GENERATIONS.get("v3", ())
# float32 on another CPU moves these by ~1e-5 of the metric's scale; a wrong head, a wrong layer,
# or replacing from another prompt moves them by more than 0.05 (checked by making those bugs).
TOL = 2e-3


def _report() -> dict:
    return json.loads(REPORT.read_text())


def _z(model, tokens, layers: set[int]) -> dict[int, torch.Tensor]:
    names = {f"blocks.{layer}.attn.hook_z" for layer in layers}
    _, cache = model.run_with_cache(tokens, names_filter=lambda n: n in names)
    return {layer: cache[f"blocks.{layer}.attn.hook_z"] for layer in layers}


def _metric_with(model, task, batch, heads: list[int], n_heads: int) -> float:
    """The mean task metric with ``heads`` resample-ablated, by hooks on ``hook_z``."""
    layers = {h // n_heads for h in heads}
    counterfactual = _z(model, batch.counterfactual, layers)
    hooks = []
    for layer in layers:
        idx = [h % n_heads for h in heads if h // n_heads == layer]

        def replace(z, hook, idx=idx, layer=layer):
            z = z.clone()
            z[:, :, idx] = counterfactual[layer][:, :, idx]
            return z

        hooks.append((f"blocks.{layer}.attn.hook_z", replace))
    logits = model.run_with_hooks(batch.tokens, fwd_hooks=hooks)
    return float(task.metric(logits[:, batch.positions], batch).mean())


def _direct_metric(model, task, batch, head: int, n_heads: int) -> float:
    """The mean task metric when only ``head``'s direct path to the logits carries its ablation."""
    layer, index = divmod(head, n_heads)
    final = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
    _, cache = model.run_with_cache(batch.tokens, names_filter=lambda n: n in (final, "ln_final.hook_scale"))
    clean_z = _z(model, batch.tokens, {layer})[layer][:, :, index]
    cf_z = _z(model, batch.counterfactual, {layer})[layer][:, :, index]
    moved = (cf_z - clean_z) @ model.blocks[layer].attn.W_O[index]
    resid = (cache[final] + moved)[:, batch.positions]
    centred = resid - resid.mean(-1, keepdim=True)
    ln = model.ln_final
    bias = getattr(getattr(ln, "original_component", ln), "bias", None)
    normalised = centred / cache["ln_final.hook_scale"][:, batch.positions] * ln.weight
    if bias is not None:
        normalised = normalised + bias
    logits = normalised @ model.W_U + model.b_U
    return float(task.metric(logits, batch).mean())


def test_the_report_covers_every_shipped_v3_member():
    if not MEMBERS:
        pytest.skip("no zoo v3 member shipped yet")
    assert set(MEMBERS) <= set(_report()["models"])


@pytest.mark.parametrize("member", MEMBERS)
def test_each_recorded_pair_is_what_the_report_says(member):
    report = _report()
    setup, entry = report["setup"], report["models"][member]
    model = load_model(member)
    n_heads = int(model.cfg.n_heads)
    log = json.loads((ROOT / "circuit_gym" / "models" / "zoo" / member / "training_log.json").read_text())
    recorded = {p["task"]: (p["primary"], p["backup"]) for p in log["backup_pairs"]}
    meets = 0
    with torch.no_grad():
        for name, row in entry["tasks"].items():
            if not row["performed"]:
                continue
            m = row["measures"]
            assert (m["primary"], m["backup"]) == recorded[name]  # the trained truth, as the log records it
            task = get_task(name)
            batch = task.batch(model, setup["measure_split"], setup["prompts"], seed=setup["seed"])
            p, q = recorded[name]
            clean = _metric_with(model, task, batch, [], n_heads)
            damage_p = clean - _metric_with(model, task, batch, [p], n_heads)
            damage_q = clean - _metric_with(model, task, batch, [q], n_heads)
            damage_pq = clean - _metric_with(model, task, batch, [p, q], n_heads)
            direct = clean - _direct_metric(model, task, batch, p, n_heads)
            scale = max(1.0, abs(clean))
            assert m["clean_metric"] == pytest.approx(clean, abs=TOL * scale), name
            assert m["primary_damage"] == pytest.approx(damage_p, abs=TOL * scale), name
            assert m["backup_damage"] == pytest.approx(damage_q, abs=TOL * scale), name
            assert m["pair_damage"] == pytest.approx(damage_pq, abs=TOL * scale), name
            assert m["primary_direct"] == pytest.approx(direct, abs=TOL * scale), name
            singles = damage_p + damage_q
            super_additive = damage_pq > 0 and damage_pq >= 2 * singles
            self_repair = 1 - damage_p / direct if direct > 0 else None
            meets += bool(
                super_additive and self_repair is not None and self_repair >= setup["self_repair_bar"]
            )
    assert entry["summary_all"]["meet_bar"] == meets
