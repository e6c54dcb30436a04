"""Write a randomly initialised GPT-2 checkpoint directory, for offline tests and benchmarks.

GPT-2's real weights cannot be downloaded on machines without the hub, so the GPT-2
loading path is exercised on a checkpoint with GPT-2's architecture, GPT-2's own
tokenizer (vendored in ``circuit_gym/data/gpt2_tokenizer``, 50,257 tokens) and random
weights. Only GPT-2's learned numbers are missing.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

GPT2_TOKENIZER_DIR = Path(str(resources.files("circuit_gym") / "data" / "gpt2_tokenizer"))
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
GPT2_VOCAB = 50257


def gpt2_tokenizer():
    """GPT-2's real tokenizer (vendored; no network)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(GPT2_TOKENIZER_DIR))


def write_random_gpt2_checkpoint(
    directory: str | Path,
    *,
    n_layer: int = 12,
    n_head: int = 12,
    n_embd: int = 96,
    n_positions: int = 1024,
    seed: int = 0,
) -> Path:
    """Save a random ``GPT2LMHeadModel`` with GPT-2's tokenizer via ``save_pretrained``.

    The defaults are GPT-2 small's grid and context at a narrow width (fast tests);
    ``n_embd=768`` gives GPT-2 small's full shape.
    """
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy(GPT2_TOKENIZER_DIR / name, directory / name)
    config = GPT2Config(
        n_layer=n_layer, n_head=n_head, n_embd=n_embd, n_positions=n_positions,
        vocab_size=GPT2_VOCAB, bos_token_id=GPT2_VOCAB - 1, eos_token_id=GPT2_VOCAB - 1,
    )  # fmt: skip
    torch.manual_seed(seed)
    GPT2LMHeadModel(config).save_pretrained(str(directory))
    return directory
