"""Write a randomly initialised GPT-2 checkpoint directory, for offline tests and benchmarks.

GPT-2's real weights and tokenizer cannot be downloaded on machines without the hub, so
the GPT-2 loading path is exercised on a checkpoint with GPT-2's architecture and
random weights. The tokenizer is the embedded model's byte-level BPE (GPT-2's own
tokenizer files are not available offline); the config's vocabulary may be larger.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from circuit_gym.models.loading import TOY_DIR

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def write_random_gpt2_checkpoint(
    directory: str | Path,
    *,
    n_layer: int = 12,
    n_head: int = 12,
    n_embd: int = 96,
    n_positions: int = 256,
    vocab_size: int | None = None,
    seed: int = 0,
) -> Path:
    """Save a random ``GPT2LMHeadModel`` plus a tokenizer with ``save_pretrained``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy(TOY_DIR / name, directory / name)
    from transformers import AutoTokenizer

    n_tokens = len(AutoTokenizer.from_pretrained(str(directory)))
    config = GPT2Config(
        n_layer=n_layer, n_head=n_head, n_embd=n_embd, n_positions=n_positions,
        vocab_size=max(vocab_size or n_tokens, n_tokens), bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    torch.manual_seed(seed)
    GPT2LMHeadModel(config).save_pretrained(str(directory))
    return directory
