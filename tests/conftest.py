"""Shared fixtures: the embedded model and a random GPT-2 checkpoint, loaded once; the circuit
tests' IOI batch and runner; a disk cache of the test session's own."""

from __future__ import annotations

import pytest

from circuit_gym.circuits import CircuitRunner
from circuit_gym.models import load_model
from circuit_gym.models.random_checkpoint import write_random_gpt2_checkpoint
from circuit_gym.tasks import get_task


@pytest.fixture(scope="session")
def tiny_model():
    return load_model("tiny")


@pytest.fixture(scope="module")
def ioi_batch(tiny_model):
    """The circuit tests' IOI batch on ``tiny`` (test split, 8 prompts, seed 0)."""
    return get_task("ioi").batch(tiny_model, "test", 8, seed=0)


@pytest.fixture(scope="module")
def runner(tiny_model, ioi_batch):
    """The circuit runner of :func:`ioi_batch` (a module's tests share its clean and counterfactual passes)."""
    return CircuitRunner.for_task(tiny_model, get_task("ioi"), ioi_batch)


@pytest.fixture(scope="session")
def random_gpt2_dir(tmp_path_factory):
    """A GPT-2-architecture checkpoint (12 layers x 12 heads) with random weights."""
    return write_random_gpt2_checkpoint(tmp_path_factory.mktemp("gpt2"), n_embd=96)


@pytest.fixture(scope="session", autouse=True)
def private_sweep_cache(tmp_path_factory):
    """Every test reads and writes a cache (and its secret key) of this session's own, never
    the user's; a test or module fixture that sets its own directory overrides it."""
    from circuit_gym.ablation.cache import CACHE_ENV_VAR, KEY_ENV_VAR

    root = tmp_path_factory.mktemp("sweep_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CACHE_ENV_VAR, str(root / "cache"))
        mp.setenv(KEY_ENV_VAR, str(root / "secret" / "cache.key"))
        yield root
