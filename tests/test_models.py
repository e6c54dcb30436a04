import os
import subprocess
import sys
import time

import pytest
import torch

from circuit_gym.models import GPT2_ENV_VAR, ModelNotAvailableError, load_model, set_threads, weights_hash


def test_toy_model_loads_offline_with_hooks(tiny_model):
    info = tiny_model.circuit_gym_info
    assert info.name == "tiny" and info.source == "embedded"
    assert info.n_heads_total == tiny_model.cfg.n_layers * tiny_model.cfg.n_heads
    tokens = tiny_model.to_tokens(" Mary and John went to the store")
    assert tokens[0, 0] == tiny_model.tokenizer.bos_token_id
    logits, cache = tiny_model.run_with_cache(tokens)
    z = cache["blocks.0.attn.hook_z"]
    assert z.shape == (1, tokens.shape[1], info.n_heads, tiny_model.cfg.d_head)
    assert "blocks.0.attn.hook_pattern" in cache


def test_start_at_layer_reproduces_the_full_forward(tiny_model):
    tokens = tiny_model.to_tokens("def load(self, file, mode):")
    logits, cache = tiny_model.run_with_cache(tokens)
    for layer in range(tiny_model.cfg.n_layers):
        resumed = tiny_model(cache[f"blocks.{layer}.hook_resid_pre"], start_at_layer=layer)
        torch.testing.assert_close(resumed, logits)


def test_random_gpt2_checkpoint_loads_through_the_gpt2_path(random_gpt2_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv(GPT2_ENV_VAR, str(random_gpt2_dir))
    model = load_model("gpt2")
    info = model.circuit_gym_info
    assert (info.n_layers, info.n_heads, info.n_heads_total) == (12, 12, 144)
    assert info.source == str(random_gpt2_dir)
    _, cache = model.run_with_cache(model.to_tokens(" Mary and John"))
    assert cache["blocks.11.attn.hook_z"].shape[2] == 12
    # explicit path= gives the same weights as the environment variable
    monkeypatch.delenv(GPT2_ENV_VAR)
    assert load_model("gpt2", path=random_gpt2_dir).circuit_gym_info.weights_hash == info.weights_hash


def test_missing_gpt2_weights_fail_fast_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty_hf_home"))
    monkeypatch.delenv(GPT2_ENV_VAR, raising=False)
    start = time.monotonic()
    with pytest.raises(ModelNotAvailableError) as err:
        load_model("gpt2")
    assert time.monotonic() - start < 10
    message = str(err.value)
    assert GPT2_ENV_VAR in message and "path=" in message and "'toy'" in message


def test_bad_local_path_is_a_clear_error(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="model.safetensors"):
        load_model("gpt2", path=tmp_path)


def test_cli_reports_missing_weights_without_a_traceback(tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "circuit_gym.cli", "info", "--model", "gpt2"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and GPT2_ENV_VAR in proc.stderr


def test_weights_hash_changes_with_weights(tiny_model):
    """On a private copy of the weights: the session fixture is never mutated (add_(1) then
    sub_(1) is not exact in float32)."""
    import copy

    before = weights_hash(tiny_model)
    assert before == tiny_model.circuit_gym_info.weights_hash
    clone = copy.deepcopy(tiny_model)
    assert weights_hash(clone) == before
    with torch.no_grad():
        next(clone.parameters()).view(-1)[0] += 1e-3
    assert weights_hash(clone) != before
    assert weights_hash(tiny_model) == before


def test_threads_setting_takes_effect_in_a_fresh_process():
    """Each value is set from another starting value, in its own interpreter, so a no-op
    setter cannot pass; the environment variable is read when no argument is given."""
    code = (
        "import torch, circuit_gym.models as m; torch.set_num_threads({start}); "
        "print(m.set_threads({arg}), torch.get_num_threads())"
    )
    for start, arg, env, expected in ((1, "2", None, 2), (2, "None", "1", 1), (1, "None", "2", 2)):
        environ = {k: v for k, v in os.environ.items() if k != "CIRCUIT_GYM_THREADS"}
        if env is not None:
            environ["CIRCUIT_GYM_THREADS"] = env
        out = subprocess.run([sys.executable, "-c", code.format(start=start, arg=arg)], capture_output=True,
                             text=True, env=environ, timeout=120, check=True).stdout.split()  # fmt: skip
        assert out == [str(expected), str(expected)], (start, arg, env, out)
    with pytest.raises(ValueError):
        set_threads(0)


def test_device_argument_is_checked():
    with pytest.raises(ValueError, match="device"):
        load_model("tiny", device="no-such-device")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="not available"):
            load_model("tiny", device="cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_sweep_on_cuda_matches_the_cpu():
    import numpy as np

    from circuit_gym.ablation.tables import sweep_table
    from circuit_gym.tasks import get_task
    from circuit_gym.tasks.reference import reference_batch

    tables = []
    for device in ("cpu", "cuda"):
        model = load_model("toy", device=device)
        task = get_task("ioi")
        batch = task.batch(model, "eval", 8, seed=0)
        tables.append(sweep_table(model, task, batch, reference_batch(model), ablation="resample"))
    np.testing.assert_allclose(tables[0].reward, tables[1].reward, atol=1e-3)


def test_loading_a_model_leaves_the_callers_random_stream_alone():
    """Building the modules draws initial weights; a caller's seeded stream must not move."""
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    load_model("tiny")
    assert torch.equal(torch.rand(3), expected)
