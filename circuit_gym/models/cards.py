"""What a shipped model's card measured: read from its ``card_metrics.json``.

``scripts/model_card.py`` writes the file beside the weights (inclusion gate, oracle
structure, behaviour). Environments read the gate from here, so a task a model does not
perform is never served on it.
"""

from __future__ import annotations

import functools
import json

from circuit_gym.models.loading import embedded_dir


@functools.cache
def card_metrics(name: str) -> dict:
    """The measured card of embedded model ``name`` (a clear error if it has none)."""
    path = embedded_dir(name) / "card_metrics.json"
    if not path.is_file():
        raise FileNotFoundError(f"{name!r} has no {path.name}; run scripts/model_card.py --model {name}")
    return json.loads(path.read_text())


def gated_tasks(name: str) -> tuple[str, ...]:
    """The tasks embedded model ``name`` passes its inclusion gate on (test split)."""
    return tuple(card_metrics(name)["suite"]["included"])
