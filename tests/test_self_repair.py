"""Self-repair measures (circuit_gym.circuits.self_repair) against plain-hook computations."""

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from circuit_gym.ablation.attribution import attribution_patching
from circuit_gym.ablation.engine import AblationEngine, Evaluation
from circuit_gym.circuits.self_repair import agreement, direct_effect, self_repair_measures
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task

MLP_MODEL = Path(__file__).resolve().parents[1] / "docs/results/zoo/models/pilot_mlp_t00"  # round 4's


def _engine(model) -> AblationEngine:
    task = get_task("ioi")
    batch = task.batch(model, "train", 8, seed=0)
    return AblationEngine(model, Evaluation.for_task(task, batch), "resample")


@pytest.fixture(scope="module")
def engine(tiny_model):
    return _engine(tiny_model)


@pytest.fixture(scope="module")
def mlp_engine():
    """A model with MLP layers (pilot round 4): the direct path must skip them as it skips heads."""
    model = load_model("pilot_mlp_t00", path=MLP_MODEL, threads=1)
    assert not model.cfg.attn_only
    return _engine(model)


def _metric(engine, fwd_hooks) -> float:
    ev = engine.ev
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bridge warns that a hook edits hook_scale
        logits = engine.model.run_with_hooks(ev.tokens, fwd_hooks=fwd_hooks)
    return float(ev.score(logits[:, ev.positions]).mean())


def _ablate(engine, heads):
    hooks = []
    for head in heads:
        layer, index = divmod(head, engine.n_heads)

        def hook(z, hook, layer=layer, index=index):
            z = z.clone()
            z[:, :, index] = engine.replacement[layer][:, :, index]
            return z

        hooks.append((f"blocks.{layer}.attn.hook_z", hook))
    return hooks


@pytest.mark.parametrize("name", ["engine", "mlp_engine"])
def test_direct_effect_against_plain_hooks(name, request):
    """The head's output change is read off ``hook_attn_out`` of a run with only that head
    resampled, added to the clean final residual, and normalised by the clean final LayerNorm
    scale (a hook holds it); no W_O product as in the module. On the MLP model the MLPs after the
    head would carry its change on; the hooks never run them on it, as the direct path must not."""
    engine = request.getfixturevalue(name)
    model = engine.model
    last = f"blocks.{engine.n_layers - 1}.hook_resid_post"
    with torch.no_grad():
        _, clean = model.run_with_cache(engine.ev.tokens, names_filter=lambda n: n == "ln_final.hook_scale")
    scale = clean["ln_final.hook_scale"]
    checked = []
    # the four heads of largest single damage (a model's early layers may be idle)
    for head in np.argsort(engine.sweep())[:4].tolist():
        layer = head // engine.n_heads
        out = f"blocks.{layer}.hook_attn_out"
        with torch.no_grad():
            _, base = model.run_with_cache(engine.ev.tokens, names_filter=lambda n, out=out: n == out)
            with model.hooks(fwd_hooks=_ablate(engine, [head])):
                _, moved = model.run_with_cache(engine.ev.tokens, names_filter=lambda n, out=out: n == out)
        delta = moved[out] - base[out]
        hooks = [
            (last, lambda x, hook, d=delta: x + d),
            ("ln_final.hook_scale", lambda s, hook: scale.clone()),
        ]
        expected = engine.clean_score - _metric(engine, hooks)
        assert direct_effect(engine, head) == pytest.approx(expected, rel=1e-3, abs=1e-4)
        checked.append(abs(expected))
    assert max(checked) > 1e-2  # not all trivially zero


def test_measures_against_plain_hooks(engine):
    m = self_repair_measures(engine)
    naive = engine.clean_score - engine.naive_sweep()  # one full pass per head, plain hooks
    assert m["top_head"] == int(np.argmax(naive))
    assert m["top_head_total"] == pytest.approx(naive.max(), abs=1e-4)
    first, second = m["top_pair"]
    assert sorted(naive)[-2] == pytest.approx(naive[second], abs=1e-4)
    pair = engine.clean_score - _metric(engine, _ablate(engine, [first, second]))
    assert m["pair_damage"] == pytest.approx(pair, abs=1e-4)
    assert m["redundancy"] == pytest.approx(pair / (naive[first] + naive[second]), rel=1e-3)
    assert m["self_repair"] == pytest.approx(m["top_head_direct"] - m["top_head_total"])
    ev = engine.ev
    attribution = -attribution_patching(engine.model, ev.tokens, engine.clean_z, engine.replacement,
                                        lambda lg: ev.score(lg[:, ev.positions]).mean())  # fmt: skip
    assert m["agreement"]["attribution"] == agreement(naive, attribution)
    assert set(m["agreement"]) == {"attribution", "eap_ig", "gim"}


def test_agreement_by_hand():
    oracle = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0, -1.0])
    same = agreement(oracle, oracle * 2 + 1)
    assert same == {"spearman": pytest.approx(1.0), "top1": True, "top5_overlap": 5}
    reverse = agreement(oracle, -oracle)
    assert reverse["spearman"] == pytest.approx(-1.0) and not reverse["top1"]
    assert reverse["top5_overlap"] == 3  # {2, 3, 4} are in both top-5 sets


def _row(redundancy, ratio, training, top1=True):
    a = {"spearman": 0.5, "top1": top1, "top5_overlap": 4}
    return {"included": True, "training_task": training,
            "measures": {"redundancy": redundancy, "total_over_direct": ratio,
                         "agreement": {"attribution": a, "eap_ig": a, "gim": a}}}  # fmt: skip


def test_pilot_summary_counts_and_merge_checks_the_setup():
    from circuit_gym.reporting.self_repair_pilot import merge, summary

    tasks = {"a": _row(1.6, 0.5, True), "b": _row(1.4, 1.0, False, top1=False), "c": {"included": False}}
    tasks["c"]["training_task"] = True
    every, training = summary(tasks, False), summary(tasks, True)
    assert (every["gated"], every["redundant"], training["gated"], training["redundant"]) == (2, 1, 1, 1)
    assert every["mean_total_over_direct"] == pytest.approx(0.75)
    assert every["gim"]["top1"] == 1 and training["gim"]["top1"] == 1
    one = {"setup": {"x": 1}, "models": {"m1": 1}}
    assert merge(one, {"setup": {"x": 1}, "models": {"m2": 2}})["models"] == {"m1": 1, "m2": 2}
    with pytest.raises(ValueError, match="setups differ"):
        merge(one, {"setup": {"x": 2}, "models": {}})


def test_knob_values_come_from_the_training_log_and_show_in_the_tables(tmp_path):
    """Both knobs are read from the model's own training log (absent: trained without it); an
    unknown knob is an error, not a silent 0; the tables show the targeted knob where it was used."""
    import json

    from circuit_gym.reporting.self_repair_pilot import knob_value, summary, summary_table

    (tmp_path / "training_log.json").write_text(json.dumps({"setup": {"top_head_dropout": 0.25}, "log": []}))
    assert knob_value(tmp_path) == 0.0 and knob_value(tmp_path, "top_head_dropout") == 0.25
    with pytest.raises(ValueError, match="unknown knob"):
        knob_value(tmp_path, "dropout")
    tasks = {"a": _row(1.6, 0.5, True)}
    entry = {"knob_head_dropout": 0.0, "trained_steps": 8000, "summary_all": summary(tasks, False),
             "summary_training_tasks": summary(tasks, True)}  # fmt: skip
    old = summary_table({"models": {"zoo2": entry}})  # written before the second knob existed
    new = summary_table({"models": {"ft": {**entry, "knob_top_head_dropout": 0.25, "knob_flood": 0.1}}})
    assert "| `zoo2` | 0.00 | 8,000 |" in old and "| `ft` | 0.00 / T 0.25 / F 0.10 | 8,000 |" in new
