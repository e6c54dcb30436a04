import json

import numpy as np
import pytest
import torch

from circuit_gym.ablation import ABLATIONS, AblationEngine, ContrastiveScorer, Evaluation
from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.tables import sweep_table
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task
from circuit_gym.tasks.reference import reference_batch


@pytest.mark.parametrize("kind", ABLATIONS)
@pytest.mark.parametrize("name", ["induction", "ioi", "docstring"])
def test_fast_sweep_equals_the_naive_loop(toy_model, kind, name):
    task = get_task(name)
    engine = AblationEngine(
        toy_model, Evaluation.for_task(task, task.batch(toy_model, "train", 6, seed=1)), kind
    )
    np.testing.assert_allclose(engine.sweep(), engine.naive_sweep(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ABLATIONS)
def test_fast_sweep_equals_the_naive_loop_on_gpt2_shape(random_gpt2_dir, kind):
    model = load_model("gpt2", path=random_gpt2_dir)
    task = get_task("ioi")
    engine = AblationEngine(model, Evaluation.for_task(task, task.batch(model, "train", 4, seed=0)), kind)
    np.testing.assert_allclose(engine.sweep(), engine.naive_sweep(), rtol=1e-4, atol=1e-4)


def test_reference_sweep_equals_the_naive_loop(toy_model):
    engine = AblationEngine(toy_model, Evaluation.for_reference(reference_batch(toy_model)), "zero")
    np.testing.assert_allclose(engine.sweep(), engine.naive_sweep(), rtol=1e-5, atol=1e-5)


def test_set_ablation_matches_hooks_on_a_full_forward(toy_model):
    task = get_task("ioi")
    batch = task.batch(toy_model, "train", 6, seed=2)
    engine = AblationEngine(toy_model, Evaluation.for_task(task, batch), "zero")
    heads = [1, 6, 13]  # layers 0, 1, 3

    def hook(z, hook):
        layer = int(hook.name.split(".")[1])
        for h in heads:
            if h // toy_model.cfg.n_heads == layer:
                z[:, :, h % toy_model.cfg.n_heads] = 0
        return z

    names = {f"blocks.{h // toy_model.cfg.n_heads}.attn.hook_z" for h in heads}
    logits = toy_model.run_with_hooks(batch.tokens, fwd_hooks=[(n, hook) for n in names])
    expected = float(task.score(logits, batch).mean())
    assert engine.score(heads) == pytest.approx(expected, abs=1e-5)
    assert engine.score([]) == engine.clean_score
    with pytest.raises(ValueError, match="head id"):
        engine.score([10_000])


def test_contrastive_reward_and_oracle(toy_model):
    task = get_task("docstring")
    batch = task.batch(toy_model, "train", 6, seed=0)
    scorer = ContrastiveScorer(toy_model, task, batch, reference_batch(toy_model), "zero", lam=0.5)
    table = scorer.sweep()
    np.testing.assert_allclose(table.reward, table.task_damage - 0.5 * table.general_damage)
    assert table.oracle_reward == pytest.approx(table.reward.max())
    h = table.oracle_head
    td, gd = scorer.damages([h])
    assert td == pytest.approx(table.task_damage[h], abs=1e-5)
    assert scorer.reward([h]) == pytest.approx(table.oracle_reward, abs=1e-5)
    with pytest.raises(ValueError, match="lam"):
        ContrastiveScorer(toy_model, task, batch, reference_batch(toy_model), lam=float("nan"))
    with pytest.raises(ValueError, match="ablation"):
        ContrastiveScorer(toy_model, task, batch, reference_batch(toy_model), "gaussian")


def test_cache_round_trip_and_corruption(toy_model, tmp_path):
    cache = SweepCache(tmp_path)
    task = get_task("ioi")
    batch = task.batch(toy_model, "train", 4, seed=0)
    ref = reference_batch(toy_model)
    live = sweep_table(toy_model, task, batch, ref, cache=None)
    first = sweep_table(toy_model, task, batch, ref, cache=cache)
    files = sorted(tmp_path.glob("sweep-*.json"))
    assert len(files) == 1
    np.testing.assert_allclose(first.reward, live.reward)
    again = sweep_table(toy_model, task, batch, ref, cache=cache)
    np.testing.assert_array_equal(again.reward, first.reward)

    # tamper with a number: the checksum catches it, the table is rebuilt, not used
    entry = json.loads(files[0].read_text())
    entry["payload"]["task_damage"][0] += 100.0
    files[0].write_text(json.dumps(entry))
    with pytest.warns(UserWarning, match="checksum"):
        rebuilt = sweep_table(toy_model, task, batch, ref, cache=cache)
    np.testing.assert_allclose(rebuilt.reward, live.reward)

    files[0].write_text("{ not json")
    with pytest.warns(UserWarning, match="cannot be read"):
        rebuilt = sweep_table(toy_model, task, batch, ref, cache=cache)
    np.testing.assert_allclose(rebuilt.reward, live.reward)

    # a different lam is a different key, hence a different file
    sweep_table(toy_model, task, batch, ref, lam=2.0, cache=cache)
    assert len(list(tmp_path.glob("sweep-*.json"))) == 2


def test_cache_rejects_a_mismatched_key(tmp_path):
    cache = SweepCache(tmp_path)
    key = {"kind": "sweep", "a": 1}
    path = cache.store(key, {"x": [1.0]})
    other = {"kind": "sweep", "a": 2}
    path.rename(cache.path_for(other))  # a file under the wrong name
    with pytest.warns(UserWarning, match="key does not match"):
        assert cache.load(other) is None
    assert not cache.path_for(other).exists()


def test_sweep_cli_writes_table_and_heatmap(tmp_path, monkeypatch):
    from circuit_gym.cli import main

    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    assert main(["sweep", "--task", "ioi", "--batch-size", "4", "--out", str(tmp_path)]) == 0
    stem = tmp_path / "sweep_toy_ioi_train_s0_resample"  # the embedded model's default ablation
    table = json.loads(stem.with_suffix(".json").read_text())
    assert len(table["reward"]) == 16 and stem.with_suffix(".png").stat().st_size > 1000
    assert stem.with_suffix(".csv").read_text().startswith("head_id,head,")
    assert torch.get_num_threads() == 1


def test_resample_without_counterfactual_prompts_says_what_to_do(toy_model):
    ev = Evaluation.for_reference(reference_batch(toy_model))
    ev = Evaluation(ev.tokens, ev.positions, ev.score_rows, counterfactual=None)
    with pytest.raises(ValueError, match="counterfactual.*ablation='zero'"):
        AblationEngine(toy_model, ev, "resample")
