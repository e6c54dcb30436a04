"""Test support for the leaderboard's tests: a reference manifest for result files a test wrote."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.references import TRACKS, Reference, References, manifest_entry
from circuit_gym.leaderboard.scoring import write_result


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


def score_small_board(score: Callable[..., dict], directory: Path, references: dict[str, dict], entry_policy: str,
                      imposter_of: str, private_seeds: list[int]) -> tuple[Path, Path]:  # fmt: skip
    """A small board's result files in ``directory/results``, scored by a track's ``score(name,
    **kwargs)``, in this order: each reference (``references``: name -> the scorer's arguments),
    ``entry`` playing ``entry_policy`` with private scores on ``private_seeds`` (written to
    ``directory/private_seeds.json``), and ``imposter``: the same policy under a reference's name
    (``imposter_of``). Returns the results folder and the private seed file."""
    results, seeds = directory / "results", directory / "private_seeds.json"
    seeds.write_text(json.dumps(private_seeds))
    plays = {
        **{name: (name, kwargs) for name, kwargs in references.items()},
        "entry": ("entry", dict(policy_spec=entry_policy, private_seeds=seeds)),
        "imposter": (imposter_of, dict(policy_spec=entry_policy)),
    }
    for file, (name, kwargs) in plays.items():
        write_result(score(name, **kwargs), results / f"{file}.json")
    return results, seeds


def edited_result(source: Path, name: str, edit: Callable[[dict], None], rehash: bool) -> dict:
    """The result file ``source`` renamed ``name`` and changed by ``edit``, its content hash
    recomputed with ``rehash`` (a forgery that hides) and left stale without (one that shows)."""
    r = json.loads(source.read_text())
    r["name"] = name
    edit(r)
    if rehash:
        r["content_hash"] = content_hash(r)
    return r


def small_circuit_track(mp, cache: Path) -> None:
    """The circuit track on the 4 x 4 model for one test module (``mp``: a MonkeyPatch context):
    docstring held out, 2 public and 2 private seeds, a budget of 3 heads, fast policy starts."""
    from circuit_gym.leaderboard import sandbox

    mp.setattr(B, "MODEL", "tiny")
    mp.setattr(B, "HELD_OUT_TASKS", ("docstring",))
    mp.setattr(B, "CALL_TIMEOUT_S", 10.0)
    mp.setattr(B, "CIRCUIT_EVAL_SEEDS", (0, 1))
    mp.setattr(B, "CIRCUIT_BUDGET", 3)
    mp.setattr(B, "CIRCUIT_N_RANDOM", 2)
    mp.setattr(B, "CIRCUIT_PRIVATE_SEEDS", 2)
    mp.setattr(sandbox, "PRELOAD", ())  # the policies here import numpy only: start them fast
    mp.setenv("CIRCUIT_GYM_CACHE", str(cache))
