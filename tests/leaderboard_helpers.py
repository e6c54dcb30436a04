"""Test support for the leaderboard's tests: a reference manifest for result files a test wrote."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.references import TRACKS, Reference, References, manifest_entry


def manifest_for(results: Path, references: dict, track: str = "single-head") -> References:
    """A reference manifest (``references.load_manifest``'s form) naming the result files
    ``results/NAME.json`` of ``references`` (name -> (policy, checkpoint)) as that track's references."""
    out: References = {t: {} for t in TRACKS}
    for name, (policy, checkpoint) in references.items():
        path = results / f"{name}.json"
        entry = manifest_entry(json.loads(path.read_text()), policy, checkpoint, str(path))
        out[track][name] = Reference(track, name, **entry)
    return out


def shrink_transfer(monkeypatch, **fields) -> None:
    """Every transfer benchmark row with ``fields`` replaced (e.g. ``seeds=(0,)``) for one test:
    the rows (``benchmark.TRANSFER_BENCHMARKS``) hold the seeds the scorer plays."""
    for version, row in list(B.TRANSFER_BENCHMARKS.items()):
        monkeypatch.setitem(B.TRANSFER_BENCHMARKS, version, dataclasses.replace(row, **fields))
