"""Which private models a scoring run ranks on: one, or several (benchmark v8 ranks on two: issue 55).

One private model makes the private column swing with that model's draw (which held-out tasks its
card gates, where its circuits sit), so benchmark v8 ranks on **two**
(``TransferBenchmark.private_models``). Each private model is played on the held-out tasks its own
card gates, at the first seeds of its own seed file (the one sealed with it, unless the maintainers
name one for all), and the result's private record keeps the summary over every private episode
(what the board ranks on) beside one summary per model with its weights hash and its seed file's
SHA-256 (``private_models``; never a seed, never an episode: ``scoring.sealed_private``).

A run's models arrive in two forms: a directory (one model, its seed file the run's
``private_seeds``) or a sequence of :class:`PrivateModel` (a directory with
its own seed file) or of directories. :func:`as_private_models` reads both; :func:`check_count`
refuses a count other than the row's; :func:`distinct_weights` refuses one model scored twice
(two copies of one model are not two draws); :func:`recorded_weights` reads a record either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# The list of per-model summaries in a private record ranked on several private models.
MODELS_KEY = "private_models"
# What a per-model record keeps besides its (sealed) scores: never a seed.
MODEL_RECORD_FIELDS = frozenset({"weights_hash", "seed_file_sha256", "n_seeds", "tasks"})


@dataclass(frozen=True)
class PrivateModel:
    """A private model's directory (weights, tokenizer, card) and the seed file it is played on."""

    directory: Path
    seeds: Path


PrivateModelArg = str | Path | Sequence[str | Path | PrivateModel] | None


def as_private_models(
    private_model: PrivateModelArg, private_seeds: str | Path | None
) -> tuple[PrivateModel, ...]:
    """The private models of a request: none, one directory (on ``private_seeds``), or a sequence
    of :class:`PrivateModel` or directories (a directory on ``private_seeds``). A directory
    without a seed file is refused (a private model is scored on private seeds)."""
    if private_model is None:
        return ()
    items = [private_model] if isinstance(private_model, str | Path) else list(private_model)
    if not items:
        raise ValueError("private_model: an empty list of private models (give one or none)")
    out = []
    for item in items:
        if isinstance(item, PrivateModel):
            out.append(item)
        elif private_seeds is None:
            raise ValueError(
                "give both private_model and private_seeds (the private model is scored on private seeds), or neither"
            )
        else:
            out.append(PrivateModel(Path(item), Path(private_seeds)))
    return tuple(out)


def primary_seeds(models: tuple[PrivateModel, ...], private_seeds: str | Path | None) -> str | Path | None:
    """The run's seed file (what its probing ledger, the committed ledger and the record's
    ``seed_file_sha256`` name, and what the secret planted models are drawn from): ``private_seeds``
    when given, else the first private model's."""
    if private_seeds is not None or not models:
        return private_seeds
    return models[0].seeds


def of_run(private_model: PrivateModelArg, private_seeds: str | Path | None, wanted: int, track: str
           ) -> tuple[tuple[PrivateModel, ...], str | Path | None]:  # fmt: skip
    """A scoring run's private models (:func:`as_private_models`; exactly ``wanted`` when any is given:
    :func:`check_count`) and its seed file (:func:`primary_seeds`)."""
    models = as_private_models(private_model, private_seeds)
    check_count(models, wanted, track)
    return models, primary_seeds(models, private_seeds)


def check_count(models: tuple[PrivateModel, ...], wanted: int, track: str) -> None:
    """ValueError unless ``models`` (when any is given) are the ``wanted`` private models of ``track``'s row."""
    if models and len(models) != wanted:
        raise ValueError(
            f"the {track} track ranks on {wanted} private model{'s' * (wanted != 1)} (its benchmark's row, "
            f"TransferBenchmark.private_models; docs/private_model.md), {len(models)} given: give "
            f"--private-model once with {wanted} sealed file{'s' * (wanted != 1)} or director{'ies' if wanted != 1 else 'y'}"
        )


def distinct_weights(hashes: Sequence[str]) -> None:
    """ValueError when two private models of one run have the same weights (one model scored twice)."""
    seen: dict[str, int] = {}
    for i, h in enumerate(hashes, 1):
        if h in seen:
            raise ValueError(
                f"private models {seen[h]} and {i} have the same weights (hash {h[:12]}): one model scored twice "
                "is not two private models"
            )
        seen[h] = i


def recorded_weights(record: dict | None) -> tuple[str, ...]:
    """The weights hashes a private record names, in its order: its one model's, or each of its
    several models' (empty: no private model, e.g. an edge result's secret planted models only)."""
    record = record or {}
    if MODELS_KEY in record:
        return tuple(str(m.get("weights_hash")) for m in record[MODELS_KEY])
    return (str(record["weights_hash"]),) if "weights_hash" in record else ()


def required(track: str) -> int:
    """How many private models ``track`` ranks on (0: none, e.g. Planted): its transfer row's
    ``private_models``, read now as the scorers read it (an edge track: its edge row's transfer row)."""
    from circuit_gym import benchmark as B
    from circuit_gym.leaderboard.edge_benchmark import EDGE_BENCHMARKS

    # read from the benchmark rows, not the track table (which imports this module's callers)
    edge = next((e for e in EDGE_BENCHMARKS.values() if e.track == track), None)
    if edge is not None:
        return B.transfer_benchmark(edge.transfer_version).private_models
    from circuit_gym.leaderboard.knockout_benchmark import KNOCKOUT_BENCHMARKS  # (imports the environments)

    if track in KNOCKOUT_BENCHMARKS:  # its row's private trained models
        return KNOCKOUT_BENCHMARKS[track].private_trained_models
    try:
        bench, _ = B.transfer_track(track)
    except ValueError:
        return 0  # a track without a private model (Planted)
    return bench.private_models


def record_problem(record: dict | None, wanted: int) -> str | None:
    """Why a private record cannot be a scoring on ``wanted`` private models, or None: another
    count, two models of one weights, or an overall episode count other than the models' sum.
    Anyone can recompute a content hash, so these are checked on every file, rescored or not."""
    hashes = recorded_weights(record)
    if not hashes:
        return None
    if len(hashes) != wanted:
        return f"its private scores are on {len(hashes)} private model(s); its track ranks on {wanted}"
    try:
        distinct_weights(hashes)
    except ValueError as err:
        return f"its private record is not a scoring on {wanted} private models: {err}"
    assert record is not None
    if MODELS_KEY in record:
        total, parts = (
            _episodes(record.get("scores")),
            [_episodes(m.get("scores")) for m in record[MODELS_KEY]],
        )
        if total != sum(parts):
            return f"its private record's overall summary holds {total} episodes, its models' {' + '.join(map(str, parts))}"
    return None


def _episodes(scores: dict | None) -> int:
    """The private models' episodes an overall private summary counts (single head: ``k1``; circuit:
    ``all``; edges: ``transfer.all``; knock-out: ``summary.trained``, its secret planted models aside)."""
    scores = scores or {}
    if "transfer" in scores:
        return int((scores["transfer"].get("all") or {}).get("episodes", 0))
    if "summary" in scores:  # the knock-out track's record (knockout_scorer.TRAINED_KIND)
        return int((scores["summary"].get("trained") or {}).get("episodes", 0))
    overall = scores.get("overall") or {}
    group = overall.get("k1") or overall.get("all") or overall
    return int(group.get("episodes", 0))
