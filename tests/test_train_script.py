"""The embedded model's training script: smoke run, exact resume, and its fast attention path."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from circuit_gym.models import load_model

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "train_toy_model.py"
SMALL = ["--smoke", "--n-layers", "2", "--n-heads", "2", "--d-model", "32", "--n-ctx", "64", "--eval-every", "2",
         "--save-every", "2", "--seed-layers", "1", "--max-phase1-steps", "2"]  # fmt: skip


def _train(out: Path, work: Path, *extra: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--work", str(work), *SMALL, *extra],
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.slow
def test_training_runs_resumes_exactly_and_its_export_loads(tmp_path):
    _train(tmp_path / "a", tmp_path / "work_a", "--steps", "4")
    # the same run stopped after step 2 and started again continues from its checkpoint
    first = _train(tmp_path / "b", tmp_path / "work_b", "--steps", "4", "--stop-after", "2")
    assert "stopped after step 2" in first.stdout and not (tmp_path / "b" / "model.safetensors").exists()
    second = _train(tmp_path / "b", tmp_path / "work_b", "--steps", "4")
    assert "resumed from" in second.stdout
    a = (tmp_path / "a" / "model.safetensors").read_bytes()
    assert a == (tmp_path / "b" / "model.safetensors").read_bytes(), (
        "a resumed run must end with the same weights"
    )
    log = json.loads((tmp_path / "a" / "training_log.json").read_text())
    assert [e["step"] for e in log["log"]] == [2, 4]
    assert {"ioi_accuracy", "greater_than_accuracy", "brackets_accuracy"} <= set(log["log"][-1])
    model = load_model("toy", path=tmp_path / "a")
    assert (model.cfg.n_layers, model.cfg.n_heads) == (2, 2)
    # another setting with the same work directory is refused, not silently mixed
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "c"), "--work",
                           str(tmp_path / "work_b"), *SMALL, "--steps", "6"], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode != 0 and "other settings" in proc.stderr


@pytest.mark.slow
def test_init_from_starts_at_the_given_weights_and_records_them(tmp_path):
    """--init-from (run F's recipe): with a zero learning rate the export is the starting model
    (fp16 both ways), phase 1 is skipped, and the start's file hash is part of the setup."""
    _train(tmp_path / "start", tmp_path / "work_start", "--steps", "2")
    start = tmp_path / "start"
    _train(
        tmp_path / "tuned", tmp_path / "work_tuned", "--steps", "2", "--lr", "0", "--init-from", str(start)
    )
    from safetensors.torch import load_file

    a, b = (
        load_file(str(start / "model.safetensors")),
        load_file(str(tmp_path / "tuned" / "model.safetensors")),
    )
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    log = json.loads((tmp_path / "tuned" / "training_log.json").read_text())
    assert log["phase_switch_step"] == 0 and {e["phase"] for e in log["log"]} == {2}
    assert log["setup"]["init_from"] == str(start) and len(log["setup"]["init_from_sha256"]) == 64
    # a learning rate above zero moves away from the start
    _train(tmp_path / "moved", tmp_path / "work_moved", "--steps", "2", "--init-from", str(start))
    c = load_file(str(tmp_path / "moved" / "model.safetensors"))
    assert any(not torch.equal(a[k], c[k]) for k in a)


def _train_module():
    from circuit_gym.models import training

    return training


def _small_model(vocab: int, **settings) -> tuple[torch.nn.Module, argparse.Namespace]:
    """A small model built by the training code (context 16, seed 0, no seed stack and no identity
    layers unless ``settings`` say otherwise) and the settings it was built from."""
    args = argparse.Namespace(**{"n_ctx": 16, "seed": 0, "seed_layers": 0, "identity_layers": 0, **settings})
    model, _ = _train_module().build_model(vocab, args)
    return model, args


def _next_token_loss(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(model(x)[:, :-1].flatten(0, 1), x[:, 1:].flatten())


def test_layers_beyond_the_seed_stack_are_identities_until_phase_2():
    train = _train_module()
    model, _ = _small_model(40, n_layers=3, n_heads=2, d_model=16, seed_layers=1)
    x = torch.randint(0, 40, (2, 16), generator=torch.Generator().manual_seed(1))
    # a phase-1 step through the first layer only: the skipped layers get no gradient
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    with train.only_layers(model, 0, 1):
        _next_token_loss(model, x).backward()
    opt.step()
    assert len(model.layers) == 3
    assert all(p.grad is None for p in model.layers[1:].parameters())
    with train.only_layers(model, 0, 1):
        shallow = model(x)
    torch.testing.assert_close(model(x), shallow, atol=0, rtol=0)  # growing changes nothing
    # and the full stack is a different function once a later layer's output is non-zero
    with torch.no_grad():
        model.layers[2].attn.o.weight.normal_()
    assert not torch.allclose(model(x), shallow)


def test_fast_training_attention_equals_the_models_own():
    train = _train_module()
    model, _ = _small_model(50, n_layers=3, n_heads=4, d_model=32)
    x = torch.randint(0, 50, (3, 16), generator=torch.Generator().manual_seed(0))
    reference = model(x)
    train.use_fast_attention(model)
    fast = model(x)
    train.use_reference_attention(model)
    torch.testing.assert_close(fast, reference, atol=1e-5, rtol=1e-5)
    assert torch.equal(model(x), reference)


def test_identity_layers_hold_the_first_layers_as_exact_identities_until_released():
    """The zoo's placement knob: layers below --identity-layers are exact identities (skipping them
    changes nothing), stay so while frozen however the optimiser runs, and train only after the
    release, with a learning rate that ramps from zero."""
    train = _train_module()
    model, args = _small_model(40, n_layers=4, n_heads=2, d_model=16, seed_layers=1, identity_layers=2,
                               release_step=10)  # fmt: skip
    assert train.seed_stack(args) == (2, 3)
    x = torch.randint(0, 40, (2, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model.layers[3].attn.o.weight.normal_()  # a trained layer above the seed stack
    with train.only_layers(model, 2, 4):
        skipped = model(x)
    torch.testing.assert_close(model(x), skipped, atol=0, rtol=0)
    # frozen: a few optimiser steps with weight decay leave the held layers exactly zero
    train.hold_identities(model, args, frozen=train.identity_frozen(args, 5))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.1)
    for _ in range(3):
        opt.zero_grad()
        _next_token_loss(model, x).backward()
        opt.step()
    assert all(float(b.attn.o.weight.abs().max()) == 0.0 for b in model.layers[:2])
    assert all(p.grad is None for b in model.layers[:2] for p in b.parameters())
    # released: the held layers get gradients again; their learning rate ramps from 0
    assert not train.identity_frozen(args, 10)
    train.hold_identities(model, args, frozen=False)
    assert all(p.requires_grad for b in model.layers[:2] for p in b.parameters())
    ramp = [train.release_ramp(args, s) for s in (0, 9, 10, 10 + train.RELEASE_RAMP // 2, 10_000)]
    assert ramp[:2] == [0.0, 0.0] and 0 < ramp[2] < ramp[3] < 1 and ramp[4] == 1.0


def test_targeted_dropout_ablates_only_its_targets_and_draws_nothing_when_off():
    """``--top-head-dropout``: only the targeted heads are ever ablated, each about as often as its
    probability says; both knobs at 0 draw no random number (a recipe without them is unchanged)."""
    train = _train_module()
    model, _ = _small_model(40, n_layers=3, n_heads=4, d_model=16)
    targets = torch.zeros(3, 4, dtype=torch.bool)
    targets[0, 1] = targets[2, 3] = True
    state = torch.get_rng_state()
    train.draw_head_dropout(model, 0.0, targets, 0.0)
    assert torch.equal(torch.get_rng_state(), state)
    assert all(getattr(b.attn, "dropped_heads", None) is None for b in model.layers)
    train.draw_head_dropout(model, 0.0, targets, 0.999999)
    assert torch.equal(torch.stack([b.attn.dropped_heads for b in model.layers[::2]]), targets[::2])
    assert model.layers[1].attn.dropped_heads is None  # no target there: nothing to ablate
    counts = torch.zeros(3, 4)
    for _ in range(400):
        train.draw_head_dropout(model, 0.0, targets, 0.3)
        for i, b in enumerate(model.layers):
            if b.attn.dropped_heads is not None:
                counts[i] += b.attn.dropped_heads
    assert float(counts[~targets].sum()) == 0.0
    assert all(80 < float(c) < 160 for c in counts[targets])  # 0.3 x 400 = 120, ~5 sd of slack


@pytest.mark.slow
def test_targeted_dropout_ranks_heads_as_their_exact_ablations_do():
    """The targets come from attribution patching (one backward pass); on a trained zoo member its
    estimates must agree with each head's exact resample ablation (144 forward passes), the
    independent measure: high rank correlation, and the estimate's top head among the exact top 3.
    No parameter gets a gradient."""
    import numpy as np
    from scipy.stats import spearmanr
    from tokenizers import Tokenizer

    from circuit_gym.tasks import get_task

    train = _train_module()
    directory = ROOT / "circuit_gym" / "models" / "zoo" / "zoo2"
    config = json.loads((directory / "config.json").read_text())
    model, _ = _small_model(config["d_vocab"], n_layers=12, n_heads=12, d_model=config["d_model"], n_ctx=64)
    train.init_weights(model, directory)
    train.use_fast_attention(model)
    hf = train._hf_tokenizer(Tokenizer.from_file(str(directory / "tokenizer.json")))
    task = get_task("ioi")
    batch = task.make_batch(hf, "train", 16, np.random.default_rng(0))
    estimate = train.attribution_damage(model, task, batch)
    assert all(p.grad is None for p in model.parameters())
    with torch.no_grad():
        clean = float(task.score(model(batch.tokens), batch).mean())
        exact = torch.zeros(12, 12)
        for layer in range(12):
            for head in range(12):
                mask = torch.zeros(12, dtype=torch.bool)
                mask[head] = True
                model.layers[layer].attn.dropped_heads = mask
                exact[layer, head] = clean - float(task.score(model(batch.tokens), batch).mean())
                model.layers[layer].attn.dropped_heads = None
    rho = spearmanr(estimate.flatten(), exact.flatten()).statistic
    assert rho > 0.6
    assert int(estimate.argmax()) in exact.flatten().topk(3).indices.tolist()
    targets = train.rank_task_heads(model, hf, ["ioi", "induction"], seed=0)
    assert targets.shape == (12, 12) and 1 <= int(targets.sum()) <= 2


def test_flooding_aims_at_its_level_and_is_off_at_zero():
    """``--flood B``: losses above B are unchanged; below B the gradient is reversed (the
    model is pushed back to confidence exp(-B)); the flooded loss never falls below B; B = 0 is the
    plain loss."""
    train = _train_module()
    loss = torch.tensor([0.01, 0.05, 0.2, 0.5, 3.0], requires_grad=True)
    out = train.flooded(loss, 0.1)
    assert torch.equal(out[2:], loss[2:]) and bool((out >= 0.1 - 1e-7).all())
    out.sum().backward()
    assert loss.grad.tolist() == [-1.0, -1.0, 1.0, 1.0, 1.0]
    assert train.flooded(loss, 0.0) is loss


def test_mlp_layers_outside_the_seed_stack_start_as_exact_identities():
    """``--d-mlp`` (pilot round 4): a model with MLPs grows as the attention-only one does: layers
    outside phase 1's seed stack write nothing (attention and MLP outputs zero), so skipping them
    changes nothing, and the MLPs inside the stack are live."""
    train = _train_module()
    model, _ = _small_model(40, n_layers=3, n_heads=2, d_model=16, seed_layers=1, d_mlp=32)
    assert all(hasattr(b, "mlp") for b in model.layers)
    assert all(float(b.mlp.fc_out.weight.abs().max()) == 0.0 for b in model.layers[1:])
    assert float(model.layers[0].mlp.fc_out.weight.abs().max()) > 0.0
    x = torch.randint(0, 40, (2, 16), generator=torch.Generator().manual_seed(1))
    with train.only_layers(model, 0, 1):
        shallow = model(x)
    torch.testing.assert_close(model(x), shallow, atol=0, rtol=0)
    with torch.no_grad():
        model.layers[0].mlp.fc_out.weight.zero_()
        model.layers[0].mlp.fc_out.bias.zero_()
    assert not torch.allclose(model(x), shallow)  # the seed layer's MLP was part of the function
