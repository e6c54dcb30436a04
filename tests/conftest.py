"""Shared fixtures: the embedded model and a random GPT-2 checkpoint, loaded once."""

from __future__ import annotations

import pytest

from circuit_gym.models import load_model
from circuit_gym.models.random_checkpoint import write_random_gpt2_checkpoint


@pytest.fixture(scope="session")
def tiny_model():
    return load_model("tiny")


@pytest.fixture(scope="session")
def random_gpt2_dir(tmp_path_factory):
    """A GPT-2-architecture checkpoint (12 layers x 12 heads) with random weights."""
    return write_random_gpt2_checkpoint(tmp_path_factory.mktemp("gpt2"), n_embd=96)
