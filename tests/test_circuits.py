"""circuit_gym.circuits on the embedded "tiny" model: rankings, circuits, the runner, curves, areas."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from circuit_gym.circuits import (
    MIB_FRACTIONS,
    Circuit,
    CircuitRunner,
    FaithfulnessCurve,
    Ranking,
    circuit_scores,
    circuit_sizes,
    cmd,
    cpr,
    faithfulness,
    faithfulness_curve,
    faithfulness_curves,
    normalised_area,
    random_ranking,
    trapezoid_area,
)
from circuit_gym.circuits import runner as runner_module
from circuit_gym.passes import PassCounter
from circuit_gym.tasks import get_task


# ------------------------------------------------------------------ Ranking, Circuit
def test_ranking_orders_signed_and_absolute_with_ties_by_id():
    r = Ranking.from_array([0.5, -3.0, 2.0, 0.5], "hand", 1, 4)
    assert r.order().tolist() == [2, 0, 3, 1]  # 0 and 3 tie: lower id first
    assert r.order(absolute=True).tolist() == [1, 2, 0, 3]
    assert r.top(2).heads == {2, 0} and r.top(2, absolute=True).heads == {1, 2}
    inf = Ranking.from_array([1.0, np.inf, -np.inf, 0.0], "acdc-like", 1, 4)
    assert inf.order().tolist() == [1, 0, 3, 2]
    assert inf.order(absolute=True)[:2].tolist() == [1, 2]


def test_ranking_rejects_bad_scores_and_does_not_alias_its_input():
    with pytest.raises(ValueError, match="NaN"):
        Ranking.from_array([1.0, np.nan], "bad", 1, 2)
    with pytest.raises(ValueError, match="needs 4 scores"):
        Ranking.from_array([1.0, 2.0], "bad", 2, 2)
    scores = np.array([1.0, 2.0, 3.0, 4.0])
    r = Ranking.from_array(scores, "copy", 2, 2)
    scores[:] = 0
    assert r.scores == (1.0, 2.0, 3.0, 4.0)
    r.array[:] = -1  # a fresh array each time
    assert r.scores == (1.0, 2.0, 3.0, 4.0)
    with pytest.raises(ValueError, match="k must be"):
        r.top(5)


def test_circuit_validates_heads_and_reports_mask():
    c = Circuit.of([0, 5], 2, 3)
    assert c.mask.tolist() == [True, False, False, False, False, True]
    assert c.ablated == {1, 2, 3, 4} and c.names() == ["0.0", "1.2"]
    assert c.without(5).heads == {0}
    with pytest.raises(ValueError, match=r"head ids must be in \[0, 6\)"):
        Circuit.of([6], 2, 3)


# ------------------------------------------------------------------ the runner
def _plain_hooked_metric(model, task, batch, circuit, kind) -> float:
    """An independent computation: one full hooked forward pass with a replacement cache of
    its own (counterfactual run, batch mean or zeros), no engine."""
    names = [f"blocks.{layer}.attn.hook_z" for layer in range(circuit.n_layers)]
    _, clean = model.run_with_cache(batch.tokens, names_filter=lambda n: n in names)
    if kind == "resample":
        _, source = model.run_with_cache(batch.counterfactual, names_filter=lambda n: n in names)
        repl = {n: source[n] for n in names}
    elif kind == "mean":
        repl = {n: clean[n].mean(0, keepdim=True).expand_as(clean[n]) for n in names}
    else:
        repl = {n: torch.zeros_like(clean[n]) for n in names}
    ablated = torch.tensor(~circuit.mask).view(circuit.n_layers, circuit.n_heads)

    def hook(z, hook):
        layer = int(hook.name.split(".")[1])
        out = z.clone()
        out[:, :, ablated[layer]] = repl[names[layer]][:, :, ablated[layer]]  # hook.name is the alias's
        return out

    with torch.no_grad():
        logits = model.run_with_hooks(batch.tokens, fwd_hooks=[(n, hook) for n in names])
    return float(task.score(logits, batch).mean())


@pytest.mark.parametrize("kind", ["resample", "mean", "zero"])
def test_stacked_circuits_match_plain_hooked_passes(tiny_model, ioi_batch, kind):
    task = get_task("ioi")
    runner = CircuitRunner.for_task(tiny_model, task, ioi_batch, kind)
    rng = np.random.default_rng(0)
    circuits = [Circuit.empty(4, 4), Circuit.full(4, 4), Circuit.of([15], 4, 4)]
    circuits += [Circuit.of(np.flatnonzero(rng.random(16) < 0.5), 4, 4) for _ in range(5)]
    got = runner.metric(circuits)
    expected = [_plain_hooked_metric(tiny_model, task, ioi_batch, c, kind) for c in circuits]
    np.testing.assert_allclose(got, expected, atol=2e-4, rtol=1e-4)


@pytest.mark.slow
def test_stacked_circuits_on_gpt2_blocks(random_gpt2_dir):
    """GPT-2's blocks (MLPs, not the attention-only replay) and zero ablation, with an MIB
    export of the same circuit read back and run."""
    from circuit_gym.circuits.mib import model_layout, read_mib_json, write_mib_json
    from circuit_gym.models import load_model

    model = load_model("gpt2", path=random_gpt2_dir)
    task = get_task("ioi")
    batch = task.batch(model, "test", 2, seed=0)
    runner = CircuitRunner.for_task(model, task, batch)
    assert runner.ablation == "zero" and runner.engine._fast is None
    ranking = random_ranking(12, 12, 0)
    circuits = [Circuit.empty(12, 12), ranking.top(7), ranking.top(72)]
    expected = [_plain_hooked_metric(model, task, batch, c, "zero") for c in circuits]
    np.testing.assert_allclose(runner.metric(circuits), expected, atol=2e-4, rtol=1e-4)
    path = write_mib_json(random_gpt2_dir / "c.json", circuits[1], ranking, **model_layout(model))
    back, back_ranking = read_mib_json(path, 12, 12)
    assert back == circuits[1] and back_ranking.scores == ranking.scores


def test_runner_chunks_give_the_same_numbers(runner, monkeypatch):
    circuits = [random_ranking(4, 4, s).top(k) for s in range(3) for k in (2, 5, 9)]
    together = runner.metric(circuits)
    monkeypatch.setattr(runner_module, "RESID_BUDGET", 1)  # one circuit per pass
    np.testing.assert_allclose(runner.metric(circuits), together, atol=1e-5)


def test_runner_rejects_a_circuit_of_another_shape(runner):
    with pytest.raises(ValueError, match="cannot run"):
        runner.metric([Circuit.full(12, 12)])


# ------------------------------------------------------------------ faithfulness and curves
def test_faithfulness_formula():
    assert faithfulness(3.0, 1.0, 5.0) == pytest.approx(0.5)
    assert faithfulness(0.0, 1.0, 5.0) == pytest.approx(-0.25)
    np.testing.assert_allclose(faithfulness(np.array([1.0, 5.0]), 1.0, 5.0), [0.0, 1.0])
    assert np.isnan(faithfulness(2.0, 1.0, 1.0))


def test_sizes_follow_mibs_rounding_down():
    assert circuit_sizes(144) == (0, 0, 0, 1, 2, 7, 14, 28, 72, 144)
    assert circuit_sizes(16) == (0, 0, 0, 0, 0, 0, 1, 3, 8, 16)
    with pytest.raises(ValueError):
        circuit_sizes(144, (0.5, 0.2))


def test_curve_endpoints_and_one_stacked_pass(runner, tiny_model):
    ranking = random_ranking(4, 4, 1)
    with PassCounter(tiny_model) as counter:
        curve = faithfulness_curve(runner, ranking)
    assert counter.counts() == {"forward": 0, "partial": 1, "backward": 0}
    assert curve.sizes == circuit_sizes(16)
    assert curve.faithfulness[:6] == (0.0,) * 6  # the empty circuit, MIB's duplicated points
    assert curve.faithfulness[-1] == pytest.approx(1.0, abs=1e-5)
    # each point is f of the ranking's top-n circuit, run on its own
    m = runner.metric([ranking.top(n) for n in curve.sizes])
    np.testing.assert_allclose(
        curve.faithfulness, faithfulness(m, curve.empty_metric, curve.full_metric), atol=1e-6
    )


def test_areas_match_numpy_and_check_the_ranking_rule(runner):
    ranking = Ranking.from_array(np.linspace(-1, 1, 16), "signed", 4, 4)
    signed, absolute = faithfulness_curves(runner, [(ranking, False), (ranking, True)])
    assert signed.sizes == absolute.sizes and signed.faithfulness != absolute.faithfulness
    assert cpr(signed) == pytest.approx(np.trapezoid(signed.faithfulness, MIB_FRACTIONS))
    assert cmd(absolute) == pytest.approx(
        np.trapezoid(np.abs(1 - np.array(absolute.faithfulness)), MIB_FRACTIONS)
    )
    with pytest.raises(ValueError, match="signed"):
        cpr(absolute)
    with pytest.raises(ValueError, match="absolute"):
        cmd(signed)
    # MIB's extremes on its fractions: f = 1 everywhere gives CPR 0.999 and CMD 0
    assert trapezoid_area(MIB_FRACTIONS, [1.0] * 10) == pytest.approx(0.999)
    assert normalised_area(0.5, 0.25) == 2.0 and np.isnan(normalised_area(1.0, 0.0))


def test_cmd_counts_overshoot_above_one():
    """A circuit can beat the full model (f > 1): CMD counts that distance too."""
    f = (0.0, 0.0, 0.0, 0.5, 1.5, 1.5, 1.0, 1.0, 1.0, 1.0)
    curve = FaithfulnessCurve("hand", True, MIB_FRACTIONS, circuit_sizes(144), f, f, 0.0, 1.0)
    widths = np.diff(MIB_FRACTIONS)
    by_hand = sum(w * (abs(1 - a) + abs(1 - b)) / 2 for w, a, b in zip(widths, f[:-1], f[1:], strict=True))
    assert cmd(curve) == pytest.approx(by_hand)
    assert cpr(dataclasses.replace(curve, absolute=False)) == pytest.approx(
        sum(w * (a + b) / 2 for w, a, b in zip(widths, f[:-1], f[1:], strict=True))
    )


def test_circuit_scores_beats_random_with_the_exact_single_head_order(tiny_model):
    task = get_task("ioi")
    batches = [task.batch(tiny_model, "test", 8, seed=s) for s in range(3)]

    def exact_damage(model, task, batch):  # keep first the heads whose removal hurts most
        runner = CircuitRunner.for_task(model, task, batch)
        full = Circuit.full(4, 4)
        damage = runner.full_metric - runner.metric([full.without(h) for h in range(16)])
        return Ranking.from_array(damage, "exact_damage", 4, 4)

    out = circuit_scores(tiny_model, task, batches, exact_damage, n_random=4)
    assert out["method"] == "exact_damage" and out["batches"] == 3 and out["ablation"] == "resample"
    assert out["cpr"] > out["cpr_random"] and out["cmd"] < out["cmd_random"]
    assert out["cpr_ci95"][0] <= out["cpr"] <= out["cpr_ci95"][1]
    assert len(out["curve"]["faithfulness"]) == 10 and out["curve"]["sizes"] == list(circuit_sizes(16))
    with pytest.raises(TypeError, match="Ranking"):
        circuit_scores(tiny_model, task, batches[:1], lambda m, t, b: np.zeros(16))


def test_figure_is_written(tmp_path, runner):
    from circuit_gym.circuits.plot import faithfulness_figure
    from circuit_gym.circuits.scores import batch_scores

    result = batch_scores(runner, random_ranking(4, 4, 3), n_random=2)
    path = faithfulness_figure({"random": {**result, "curve": {**result["curve"], "random_faithfulness": result["curve_random"]}}},
                               tmp_path / "curves.png")  # fmt: skip
    assert path.stat().st_size > 1000
