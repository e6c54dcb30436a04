import json
import types

import numpy as np
import pytest
import torch

from circuit_gym.ablation import ABLATIONS, AblationEngine, ContrastiveScorer, Evaluation
from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.tables import sweep_key, sweep_table
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task
from circuit_gym.tasks.reference import reference_batch


@pytest.mark.parametrize("kind", ABLATIONS)
@pytest.mark.parametrize("name", ["induction", "ioi", "docstring"])
def test_fast_sweep_equals_the_naive_loop(tiny_model, kind, name):
    task = get_task(name)
    engine = AblationEngine(
        tiny_model, Evaluation.for_task(task, task.batch(tiny_model, "train", 6, seed=1)), kind
    )
    assert engine._fast is not None  # the attention-only model takes the SDPA replay
    np.testing.assert_allclose(engine.sweep(), engine.naive_sweep(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ABLATIONS)
def test_fast_sweep_equals_the_naive_loop_on_gpt2_shape(random_gpt2_dir, kind):
    model = load_model("gpt2", path=random_gpt2_dir)
    task = get_task("ioi")
    engine = AblationEngine(model, Evaluation.for_task(task, task.batch(model, "train", 4, seed=0)), kind)
    assert engine._fast is None  # GPT-2's blocks have MLPs: the bridge's blocks are called
    np.testing.assert_allclose(engine.sweep(), engine.naive_sweep(), rtol=1e-4, atol=1e-4)


def test_reference_sweep_equals_the_naive_loop(tiny_model):
    engine = AblationEngine(tiny_model, Evaluation.for_reference(reference_batch(tiny_model)), "zero")
    np.testing.assert_allclose(engine.sweep(), engine.naive_sweep(), rtol=1e-5, atol=1e-5)


def test_set_ablation_matches_hooks_on_a_full_forward(tiny_model):
    task = get_task("ioi")
    batch = task.batch(tiny_model, "train", 6, seed=2)
    engine = AblationEngine(tiny_model, Evaluation.for_task(task, batch), "zero")
    heads = [1, 6, 13]  # layers 0, 1, 3

    def hook(z, hook):
        layer = int(hook.name.split(".")[1])
        for h in heads:
            if h // tiny_model.cfg.n_heads == layer:
                z[:, :, h % tiny_model.cfg.n_heads] = 0
        return z

    names = {f"blocks.{h // tiny_model.cfg.n_heads}.attn.hook_z" for h in heads}
    logits = tiny_model.run_with_hooks(batch.tokens, fwd_hooks=[(n, hook) for n in names])
    expected = float(task.score(logits, batch).mean())
    assert engine.score(heads) == pytest.approx(expected, abs=1e-5)
    assert engine.score([]) == engine.clean_score
    with pytest.raises(ValueError, match="head id"):
        engine.score([10_000])


def _hand_ablated_forward(model, tokens, layer, head, replacement):
    """Logits with one head's hook_z replaced, by a hook written here (not the engine's)."""

    def hook(z, hook):
        z = z.clone()
        z[:, :, head] = replacement[:, :, head]
        return z

    return model.run_with_hooks(tokens, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)])


def test_table_matches_a_hand_computed_ablation(tiny_model):
    """Task damage, general damage and reward of a few heads from plain hooked forward passes."""
    import torch.nn.functional as F

    task = get_task("docstring")
    batch = task.batch(tiny_model, "train", 6, seed=0)
    ref = reference_batch(tiny_model)
    table = ContrastiveScorer(tiny_model, task, batch, ref, "zero", lam=0.5).sweep()
    n_heads = tiny_model.cfg.n_heads

    def ref_loss(logits):
        return float(F.cross_entropy(logits[:, :-1].flatten(0, 1), ref.tokens[:, 1:].flatten()))

    clean_metric = float(task.score(tiny_model(batch.tokens), batch).mean())
    clean_loss = ref_loss(tiny_model(ref.tokens))
    for h in (0, 5, 15, table.oracle_head):
        layer, head = divmod(h, n_heads)
        zeros = torch.zeros(1, 1, n_heads, tiny_model.cfg.d_head)
        metric = float(
            task.score(_hand_ablated_forward(tiny_model, batch.tokens, layer, head, zeros), batch).mean()
        )
        loss = ref_loss(_hand_ablated_forward(tiny_model, ref.tokens, layer, head, zeros))
        assert table.task_damage[h] == pytest.approx(clean_metric - metric, abs=1e-4)
        assert table.general_damage[h] == pytest.approx(loss - clean_loss, abs=1e-4)
        assert table.reward[h] == pytest.approx((clean_metric - metric) - 0.5 * (loss - clean_loss), abs=1e-4)
    with pytest.raises(ValueError, match="lam"):
        ContrastiveScorer(tiny_model, task, batch, ref, lam=float("nan"))
    with pytest.raises(ValueError, match="ablation"):
        ContrastiveScorer(tiny_model, task, batch, ref, "gaussian")


@pytest.mark.parametrize("name", ["ioi", "induction"])
def test_resample_equals_an_independent_patch_from_the_counterfactual_run(tiny_model, name):
    """Resample ablation = the head's hook_z taken from a separate run on the counterfactual prompts."""
    task = get_task(name)
    batch = task.batch(tiny_model, "eval", 5, seed=3)
    engine = AblationEngine(tiny_model, Evaluation.for_task(task, batch), "resample")
    swept = engine.sweep()
    n_heads = tiny_model.cfg.n_heads
    for h in (1, 6, 11, 14):
        layer, head = divmod(h, n_heads)
        _, cf_cache = tiny_model.run_with_cache(batch.counterfactual)
        donor = cf_cache[f"blocks.{layer}.attn.hook_z"]
        logits = _hand_ablated_forward(tiny_model, batch.tokens, layer, head, donor)
        assert swept[h] == pytest.approx(float(task.score(logits, batch).mean()), abs=1e-4)


@pytest.mark.parametrize("name", ["ioi", "docstring"])
def test_mean_ablation_equals_an_independent_patch_with_the_batch_mean(tiny_model, name):
    """Mean ablation = the head's hook_z replaced by its mean over the batch's prompts, per
    position, taken here from a separate clean run (a no-op or a mean over the wrong axis fails)."""
    task = get_task(name)
    batch = task.batch(tiny_model, "train", 6, seed=4)
    engine = AblationEngine(tiny_model, Evaluation.for_task(task, batch), "mean")
    swept = engine.sweep()
    n_heads = tiny_model.cfg.n_heads
    _, clean_cache = tiny_model.run_with_cache(batch.tokens)
    by_hand = np.empty(tiny_model.cfg.n_layers * n_heads)
    for h in range(len(by_hand)):
        layer, head = divmod(h, n_heads)
        donor = clean_cache[f"blocks.{layer}.attn.hook_z"].mean(0, keepdim=True)  # [1, pos, head, d]
        logits = _hand_ablated_forward(tiny_model, batch.tokens, layer, head, donor)
        by_hand[h] = float(task.score(logits, batch).mean())
    assert np.abs(by_hand - engine.clean_score).max() > 1e-2  # some head's mean ablation matters
    np.testing.assert_allclose(swept, by_hand, rtol=0, atol=1e-4)
    for h in (2, 9):
        assert engine.score([h]) == pytest.approx(by_hand[h], abs=1e-4)


@pytest.fixture(scope="module")
def ioi_inputs(tiny_model):
    """What the cache tests sweep: IOI, its train batch (4 prompts, seed 0) and the model's reference batch."""
    task = get_task("ioi")
    return task, task.batch(tiny_model, "train", 4, seed=0), reference_batch(tiny_model)


def test_cache_round_trip_and_corruption(tiny_model, tmp_path, ioi_inputs):
    cache = SweepCache(tmp_path)
    task, batch, ref = ioi_inputs
    live = sweep_table(tiny_model, task, batch, ref, cache=None)
    first = sweep_table(tiny_model, task, batch, ref, cache=cache)
    files = sorted(tmp_path.glob("sweep-*.json"))
    assert len(files) == 1
    np.testing.assert_allclose(first.reward, live.reward)
    again = sweep_table(tiny_model, task, batch, ref, cache=cache)
    np.testing.assert_array_equal(again.reward, first.reward)

    # tamper with a number: the checksum catches it, the table is rebuilt, not used
    entry = json.loads(files[0].read_text())
    entry["payload"]["task_damage"][0] += 100.0
    files[0].write_text(json.dumps(entry))
    with pytest.warns(UserWarning, match="checksum"):
        rebuilt = sweep_table(tiny_model, task, batch, ref, cache=cache)
    np.testing.assert_allclose(rebuilt.reward, live.reward)

    files[0].write_text("{ not json")
    with pytest.warns(UserWarning, match="cannot be read"):
        rebuilt = sweep_table(tiny_model, task, batch, ref, cache=cache)
    np.testing.assert_allclose(rebuilt.reward, live.reward)

    # lam does not change the damages: the same file serves every lam, with no new sweep
    other_lam = sweep_table(tiny_model, task, batch, ref, lam=2.0, cache=cache)
    assert len(list(tmp_path.glob("sweep-*.json"))) == 1
    np.testing.assert_allclose(other_lam.task_damage, live.task_damage)
    assert other_lam.lam == 2.0 and not np.allclose(other_lam.reward, live.reward)


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
    assert (
        main(["sweep", "--model", "tiny", "--task", "ioi", "--batch-size", "4", "--out", str(tmp_path)]) == 0
    )
    stem = tmp_path / "sweep_tiny_ioi_train_s0_resample"  # the embedded model's default ablation
    table = json.loads(stem.with_suffix(".json").read_text())
    assert len(table["reward"]) == 16 and stem.with_suffix(".png").stat().st_size > 1000
    assert stem.with_suffix(".csv").read_text().startswith("head_id,head,")
    assert torch.get_num_threads() == 1


def test_resample_without_counterfactual_prompts_says_what_to_do(tiny_model):
    ev = Evaluation.for_reference(reference_batch(tiny_model))
    ev = Evaluation(ev.tokens, ev.positions, ev.score_rows, counterfactual=None)
    with pytest.raises(ValueError, match="counterfactual.*ablation='zero'"):
        AblationEngine(tiny_model, ev, "resample")


def test_cache_key_covers_everything_that_changes_the_numbers(tiny_model, monkeypatch, ioi_inputs):
    """Each of answers, distractors, positions, metric, task version and engine version changes the key."""
    import dataclasses

    import circuit_gym.ablation.tables as tables
    from circuit_gym.tasks import answer_logprob

    task, batch, ref = ioi_inputs
    base = sweep_key(tiny_model, task, batch, ref, "zero")
    assert sweep_key(tiny_model, task, batch, ref, "zero") == base  # deterministic
    variants = {
        "answers": (task, dataclasses.replace(batch, answers=batch.distractors[..., 0])),
        "distractors": (task, dataclasses.replace(batch, distractors=batch.answers[..., None])),
        "positions": (task, dataclasses.replace(batch, positions=batch.positions - 1)),
        "counterfactual": (task, dataclasses.replace(batch, counterfactual=batch.tokens.flip(0))),
        "metric": (dataclasses.replace(task, metric=answer_logprob), batch),
        "task version": (dataclasses.replace(task, version=task.version + 1), batch),
    }
    for what, (t, b) in variants.items():
        assert sweep_key(tiny_model, t, b, ref, "zero") != base, what
    assert sweep_key(tiny_model, task, batch, ref, "mean") != base
    # other weights under the same model name, and other reference tokens under the same name
    other_weights = types.SimpleNamespace(
        circuit_gym_info=dataclasses.replace(tiny_model.circuit_gym_info, weights_hash="0" * 16)
    )
    assert sweep_key(other_weights, task, batch, ref, "zero") != base, "weights"
    other_ref = dataclasses.replace(ref, tokens=ref.tokens.flip(0))
    assert other_ref.name == ref.name and sweep_key(tiny_model, task, batch, other_ref, "zero") != base
    monkeypatch.setattr(tables, "ENGINE_VERSION", tables.ENGINE_VERSION + 1)
    assert sweep_key(tiny_model, task, batch, ref, "zero") != base, "engine version"


def test_reregistered_task_with_another_metric_is_not_served_stale_tables(tiny_model, tmp_path, ioi_inputs):
    import dataclasses

    from circuit_gym.tasks import answer_logprob

    cache = SweepCache(tmp_path)
    task, batch, ref = ioi_inputs
    first = sweep_table(tiny_model, task, batch, ref, cache=cache)
    other = dataclasses.replace(task, metric=answer_logprob)
    second = sweep_table(tiny_model, other, batch, ref, cache=cache)
    live = sweep_table(tiny_model, other, batch, ref, cache=None)
    np.testing.assert_allclose(second.task_damage, live.task_damage)
    assert not np.allclose(second.task_damage, first.task_damage)


def test_unwritable_cache_directory_warns_and_still_returns_numbers(tiny_model, tmp_path, ioi_inputs):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    cache = SweepCache(blocker / "cache")  # its parent is a file: nothing can be written there
    task, batch, ref = ioi_inputs
    with pytest.warns(UserWarning, match="cannot write"):
        table = sweep_table(tiny_model, task, batch, ref, cache=cache)
    np.testing.assert_allclose(table.reward, sweep_table(tiny_model, task, batch, ref, cache=None).reward)


def test_corrupted_general_damage_file_is_rebuilt(tiny_model, tmp_path):
    import circuit_gym.ablation.tables as tables

    cache = SweepCache(tmp_path)
    ref = reference_batch(tiny_model)
    tables._GENERAL.clear()
    first = tables.general_damage(tiny_model, ref, "zero", cache).copy()
    (path,) = tmp_path.glob("general-*.json")
    entry = json.loads(path.read_text())
    entry["payload"]["general_damage"][3] = 99.0
    path.write_text(json.dumps(entry))
    tables._GENERAL.clear()  # a new process: only the disk copy is left
    with pytest.warns(UserWarning, match="checksum"):
        rebuilt = tables.general_damage(tiny_model, ref, "zero", cache)
    np.testing.assert_allclose(rebuilt, first)
