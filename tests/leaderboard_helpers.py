"""Test support for the leaderboard's tests: the benchmark in force made small, a reference
manifest for result files a test wrote, a small board scored by a track's scorer."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.references import TRACKS, Reference, References, manifest_entry
from circuit_gym.leaderboard.scoring import write_result


def manifest_for(results: Path, references: dict, track: str) -> References:
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


SMALL_TASK = "docstring"  # the 4 x 4 model's tokenizer has this task's fillers (not every task's)


def small_in_force(mp, cache: Path, *, seeds: tuple[int, ...] = (0, 1), private_seeds: int = 2,
                   timeout_s: float = 5.0, fast_start: bool = True) -> B.TransferBenchmark:  # fmt: skip
    """The benchmark in force's single-head and circuit tracks (its row of
    ``benchmark.TRANSFER_BENCHMARKS``, which the live scorer reads) made small for one test
    (``mp``: a MonkeyPatch context): the 4 x 4 model ``tiny`` is its one public model, serving one
    held-out task; ``seeds`` public and ``private_seeds`` private batches on both tracks; a circuit
    budget of 3 heads and 2 random rankings; ``timeout_s`` per call; the disk cache ``cache``;
    ``fast_start``: the sandbox imports nothing before the policy (for policies that import numpy
    only; one importing the package, e.g. the baselines', then needs a longer ``timeout_s``). It
    ranks on one private model, :func:`private_tiny`, whatever the row in force's count. Returns the small row."""
    from circuit_gym.leaderboard import sandbox
    from circuit_gym.leaderboard import transfer_scorer as TS
    from circuit_gym.models import cards

    row = dataclasses.replace(
        B.transfer_benchmark(B.IN_FORCE), train_models=("tiny",), held_out_models=(), train_tasks=(),
        held_out_tasks=(SMALL_TASK,), seeds=tuple(seeds), circuit_seeds=tuple(seeds), private_seeds=private_seeds,
        circuit_private_seeds=private_seeds, private_models=1,  # one stand-in (tests/test_two_private_models.py: two)
    )  # fmt: skip
    mp.setitem(B.TRANSFER_BENCHMARKS, B.IN_FORCE, row)
    gated = cards.gated_tasks  # tiny's card measures no inclusion gate: it serves the one task
    mp.setattr(cards, "gated_tasks", lambda name: (SMALL_TASK,) if name == "tiny" else gated(name))
    mp.setattr(TS, "MIN_PRIVATE_TASKS", 1)  # the one held-out task is all a private model can serve
    mp.setattr(B, "CALL_TIMEOUT_S", timeout_s)
    mp.setattr(B, "CIRCUIT_BUDGET", 3)
    mp.setattr(B, "CIRCUIT_N_RANDOM", 2)
    if fast_start:
        mp.setattr(sandbox, "PRELOAD", ())
    mp.setenv("CIRCUIT_GYM_CACHE", str(cache))
    return row


def private_tiny(folder: Path) -> Path:
    """A stand-in private model for :func:`small_in_force`: a copy of ``tiny`` (what matters is that
    it is scored as the private model, from its directory, without disk cache) whose card serves
    the small benchmark's task."""
    from circuit_gym.models.loading import embedded_dir

    model = folder / "private_model"
    shutil.copytree(embedded_dir("tiny"), model)
    card = json.loads((model / "card_metrics.json").read_text())
    card["suite"] = {"included": [SMALL_TASK]}
    (model / "card_metrics.json").write_text(json.dumps(card))
    return model
