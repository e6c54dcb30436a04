"""The general-damage reference: a fixed batch of ordinary text per model.

General damage is the rise in next-token loss on this batch when heads are ablated. What
the batch contains decides what the contrastive reward subtracts:

- ``stdlib``: held-out standard-library code (shipped, so every machine agrees);
- ``taskstyle``: ordinary sentences and code that use the tasks' names and parameter
  words without the task structure. Heads that merely *read the synthetic vocabulary*
  hurt this text too, so they stop looking like task circuits;
- ``prose``: English prose written for this package (MIT, like the code);
- combinations joined with ``+`` take equal numbers of rows from each part.

Defaults: ``stdlib+taskstyle`` for the embedded model (it was trained on code and the
tasks' vocabulary), ``prose`` for every other model.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from importlib import resources

import torch

from circuit_gym.embedded import is_embedded
from circuit_gym.tasks import corpus

REFERENCE_PARTS = ("stdlib", "taskstyle", "prose")
REFERENCE_CHOICES = ("stdlib", "taskstyle", "prose", "stdlib+taskstyle", "prose+taskstyle")


@dataclass(frozen=True)
class ReferenceBatch:
    name: str
    tokens: torch.Tensor  # [rows, row_len], BOS first

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.tokens.numpy().tobytes()).hexdigest()[:16]


def default_reference(model_name: str) -> str:
    return "stdlib+taskstyle" if is_embedded(model_name) else "prose"


def _texts(part: str) -> list[str]:
    data = resources.files("circuit_gym") / "data"
    if part == "stdlib":
        return json.loads((data / "stdlib_heldout.json").read_text())["snippets"]
    if part == "prose":
        return [p for p in (data / "prose.txt").read_text().split("\n") if p.strip()]
    if part == "taskstyle":
        return corpus.task_style_reference_text(random.Random(20260101), 400)
    raise ValueError(f"reference part must be one of {REFERENCE_PARTS}, got {part!r}")


def reference_batch(model, name: str | None = None, *, n_rows: int = 32, row_len: int = 48) -> ReferenceBatch:
    """The fixed reference batch for ``model`` (deterministic: no seed involved)."""
    if name is None:
        name = default_reference(model.circuit_gym_info.name)
    if name not in REFERENCE_CHOICES:
        raise ValueError(f"reference must be one of {REFERENCE_CHOICES}, got {name!r}")
    if row_len > int(model.cfg.n_ctx):
        raise ValueError(f"row_len {row_len} exceeds the model's context {model.cfg.n_ctx}")
    tok = model.tokenizer
    parts = name.split("+")
    rows: list[list[int]] = []
    for i, part in enumerate(parts):
        want = n_rows // len(parts) + (1 if i < n_rows % len(parts) else 0)
        stream = tok.encode("\n\n".join(_texts(part)), add_special_tokens=False)
        chunks = [stream[j : j + row_len - 1] for j in range(0, len(stream), row_len - 1)]
        chunks = [c for c in chunks if len(c) == row_len - 1]
        if len(chunks) < want:
            raise ValueError(
                f"reference part {part!r} has only {len(chunks)} rows of {row_len} tokens under this model's "
                f"tokenizer, {want} are needed. Ways out: another reference (reference='stdlib' or "
                f"'prose'), fewer rows (reference_batch(..., n_rows=...)), shorter rows (row_len=...), or "
                "more text in circuit_gym/data/"
            )
        rows += [[tok.bos_token_id, *c] for c in chunks[:want]]
    return ReferenceBatch(name=name, tokens=torch.tensor(rows, dtype=torch.long))
