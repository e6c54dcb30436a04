"""Which result files go on the board: each verified, references recognised, optionally rescored.

:func:`verify`: the entry name, the content hash, the status, and whether the entry is current
(``circuit_gym/leaderboard/protocol.py``: scorer protocol, the track's benchmark definition; the
public models' weights, checked here per kind of track). :func:`collect`: every file verified, reference entries recognised by the reviewed
manifest (``circuit_gym/leaderboard/references.py``), names unique per track, every other entry's
private scoring checked against the committed ledger (``circuit_gym/leaderboard/private_ledger.py``),
and with ``rescore`` every entry re-scored (:func:`rescore_matches`), ``jobs`` at once.
:func:`missing_references`: the board refuses to show a track without its references.

Rescoring is strict (issue 58): given the maintainers' seed file (and private model), a private
part of a track in force scored on another seed file or another model is refused, naming both
hashes, never skipped (the private part of a track the board does not rank on yet, scored on its
own benchmark's seed file, is recomputed only with that file and model, else its public part is
rescored as before);
and what the board shows of an entry (status, scores, failure, the white-box tag, isolation, the
policy's CPU record, the private scores) is compared, not only the public scores.

A track whose benchmark ranks on several private models (v8: two, issue 55) needs them all: every
file's private record must name that many models of distinct weights whose episodes add up to its
overall summary (:func:`verify`: anyone can recompute a content hash), and a rescore takes the
models in any order, matched to the record's by their weights (:func:`matched_models`), each on
the seed file its record names.
"""

from __future__ import annotations

import json
from pathlib import Path

from circuit_gym.benchmark import transfer_tracks
from circuit_gym.leaderboard import tracks
from circuit_gym.leaderboard.compare import differences
from circuit_gym.leaderboard.edge_benchmark import EDGE_TRACKS, edge_benchmark
from circuit_gym.leaderboard.private_ledger import LEDGER, entry_refusal, load_ledger
from circuit_gym.leaderboard.private_models import (
    MODELS_KEY,
    PrivateModel,
    PrivateModelArg,
    as_private_models,
    record_problem,
    recorded_weights,
    required,
)
from circuit_gym.leaderboard.protocol import stale_reason
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.references import (
    Reference,
    ReferenceMismatchError,
    References,
    load_manifest,
    recognise,
    recorded_features,
)
from circuit_gym.leaderboard.scoring import check_name, read_private_seeds, sealed_private

# The single-head and circuit tracks of every version (``circuit_gym/leaderboard/transfer_scorer.py``):
# the zoo's public models, four quadrants, and the maintainers' private model. The edge and knock-out
# tracks rank on the private model too, with their own results (edge_scorer.py, knockout_scorer.py),
# so the list is the transfer rows', not "every track ranked on the private model".
TRANSFER_TRACKS = transfer_tracks()


def definition_of(track_name: str) -> dict:
    """The benchmark definition a result of ``track_name`` must have been scored under."""
    return tracks.track(track_name).definition()


def public_weights(definition: dict) -> dict[str, str]:
    """The weights hashes of the public zoo members a transfer track's ``definition`` scores (as shipped)."""
    from circuit_gym.envs.pool import shared_model

    models = definition["train_models"] + definition["held_out_models"]
    return {m: shared_model(m).circuit_gym_info.weights_hash for m in models}


def check_private_weights(path: Path, result: dict, private_weights_hash: str | tuple[str, ...]) -> None:
    """RefusedResultError unless ``result``'s private scores were scored on the private model
    whose weights hash is ``private_weights_hash`` (several: on those models, in that order; a
    result scored on one private model never verifies against another)."""
    given = (private_weights_hash,) if isinstance(private_weights_hash, str) else tuple(private_weights_hash)
    recorded = recorded_weights(result.get("private"))
    if recorded != given:
        what = "another private model" if len(given) == 1 else "other private models"
        raise RefusedResultError(
            f"{path}: its private scores were scored on {what} (weights {', '.join(h[:12] for h in recorded)}, "
            f"the model{'s' * (len(given) != 1)} given: {', '.join(h[:12] for h in given)}); verify it with the "
            "models it was scored on"
        )


def matched_models(models: tuple[PrivateModel, ...], hashes: tuple[str, ...], result: dict
                   ) -> tuple[tuple[PrivateModel, ...], tuple[str, ...]]:  # fmt: skip
    """``models`` (with their weights ``hashes``) in the order ``result``'s private record names
    them, where they are the same set of weights; else as given (the check then refuses them)."""
    recorded = recorded_weights(result.get("private"))
    if len(models) < 2 or sorted(recorded) != sorted(hashes) or len(set(hashes)) != len(hashes):
        return models, hashes
    order = [hashes.index(h) for h in recorded]
    return tuple(models[i] for i in order), tuple(hashes[i] for i in order)


def check_model_seed_files(path: Path, result: dict, models: tuple[PrivateModel, ...]) -> None:
    """RefusedResultError unless each private model of a several-model record was scored on the
    seed file given with it (the models in the record's order)."""
    records = (result.get("private") or {}).get(MODELS_KEY, ())
    for i, (model, record) in enumerate(zip(models, records, strict=False)):
        sha = read_private_seeds(model.seeds)[1]
        if record.get("seed_file_sha256") != sha:
            raise RefusedResultError(
                f"{path}: its private model {i + 1} was scored on another seed file (sha256 "
                f"{str(record.get('seed_file_sha256'))[:12]}, the seed file given with it: {sha[:12]})"
            )


class RefusedResultError(ValueError):
    pass


def private_weights_hash(private_model: Path) -> str:
    """The weights hash of the private model in ``private_model``, as the scorer loads it."""
    from circuit_gym.leaderboard.custody import model_weights_hash

    return model_weights_hash(private_model)


def verify(path: Path) -> dict:
    """The result in ``path`` if it is authentic and current; else :class:`RefusedResultError`."""
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise RefusedResultError(f"{path}: not a readable JSON result ({type(err).__name__})") from None
    if not isinstance(result, dict) or "content_hash" not in result:
        raise RefusedResultError(
            f"{path}: no content hash; only files written by `circuit-gym leaderboard score` count"
        )
    try:
        check_name(result.get("name"))
    except ValueError as err:
        raise RefusedResultError(f"{path}: {err}") from None
    if content_hash(result) != result["content_hash"]:
        raise RefusedResultError(f"{path}: content hash mismatch: the file was edited after scoring")
    track = result.get("track")
    if track not in tracks.TRACKS:
        raise RefusedResultError(f"{path}: unknown track {track!r}")
    if result.get("status") not in ("scored", "failed"):
        raise RefusedResultError(
            f"{path}: status {result.get('status')!r}: only scored or failed results go on the board "
            "(a canary's sample run is not an entry)"
        )
    prov = result.get("provenance")
    if not isinstance(prov, dict):
        raise RefusedResultError(f"{path}: no provenance")
    transfer = track in TRANSFER_TRACKS
    # the public models' weights: the zoo's (transfer) or the held-out members' (edges) below;
    # the Planted track's models are generated from their seeds
    stale = stale_reason(prov, definition_of(track))
    if stale is None and transfer:
        stale = _transfer_stale(result, prov, definition_of(track))
    if stale is None and track in EDGE_TRACKS:
        stale = _edge_stale(result, prov)
    if stale is None and tracks.TRACKS[track].private_model:  # as many private models as the row ranks on
        stale = record_problem(result.get("private"), required(track))
    if stale is not None:
        raise RefusedResultError(f"{path}: {stale}")
    return result


def _transfer_stale(result: dict, prov: dict, definition: dict) -> str | None:
    """Why a transfer result is not a whole, current scoring of the public zoo, or None."""
    if "partial" in result:
        return f"scored on some public models only ({result['partial']}): not an entry"
    if prov.get("weights_hashes") != public_weights(definition):
        return "scored on other weights of the public zoo than this checkout ships; rescore it"
    return None


def _edge_stale(result: dict, prov: dict) -> str | None:
    """Why an edge result was not scored on the public held-out models this checkout ships, or None."""
    from circuit_gym.envs.pool import shared_model

    models = edge_benchmark(result["track"]).held_out_models
    if prov.get("weights_hashes") != {m: shared_model(m).circuit_gym_info.weights_hash for m in models}:
        return "scored on other weights of the public held-out models than this checkout ships; rescore it"
    return None


def rescore_matches(
    path: Path,
    result: dict,
    private_seeds: Path | None = None,
    require_isolation: bool = True,
    reference: Reference | None = None,
    private_model: PrivateModelArg = None,
) -> str:
    """Re-run the scorer on the recorded policy (a reference's: the manifest's policy and
    checkpoint); refuse unless the scores are the same numbers (``compare.differences``).

    A content hash proves a file was not edited by accident, but anyone can recompute
    it; re-scoring is what makes hand-edited numbers impossible to slip in. Returns
    ``"verified"`` when the entry's private scores were re-computed too (``private_seeds``
    has the SHA-256 the entry records) and matched, else ``"rescored"``. A sandboxed policy is
    rescored only with its isolation complete, unless ``require_isolation`` is False (an
    ``IsolationUnavailableError`` then stops the render: the machine, not the entry, is at fault).

    ``private_model``: the private model's directory, or, for a track ranked on several, a sequence
    of ``private_models.PrivateModel`` (each with its seed file; ``private_seeds`` then defaults
    to the first's), in any order: they are matched to the record's models by their weights.
    """
    prov = result["provenance"]
    policy = reference.policy if reference is not None else prov["policy"]
    checkpoint = reference.checkpoint_path() if reference is not None else prov.get("checkpoint")
    private = result.get("private") or None
    transfer = track(result) in TRANSFER_TRACKS
    # Every track ranked on the private model gets it, the edge tracks too (their private part
    # scores the private model beside the secret planted models). Without the maintainers' seed
    # file an entry is rescored on its public part only ("rescored"); with it, its private part
    # must be on that seed file and (ranked on the model) on the model given, or it is refused.
    row = tracks.track(track(result))
    ranked_on_model = row.private_model and bool(recorded_weights(private))
    models, hashes = _given_models(private_model, private_seeds)
    offered = len(models)
    if models and private_seeds is None:
        private_seeds = models[0].seeds  # several, each with its seed file: the first's is the run's
    if ranked_on_model and offered != required(track(result)):
        models = ()  # another benchmark's count of private models: not this entry's
    elif ranked_on_model and offered > 1:
        models, hashes = _matched(models, result)  # in the record's order, each with its seed file
        private_seeds = models[0].seeds
    with_private = private is not None and private_seeds is not None
    if with_private and tracks.not_ranking(track(result)):
        # A benchmark not in force keeps its own private material (its seed file and model need not
        # be the ones in force): its private scores are recomputed only with its own, else the public part.
        assert private is not None and private_seeds is not None
        with_private = read_private_seeds(private_seeds)[1] == private.get("seed_file_sha256") and (
            bool(models) or not ranked_on_model
        )
    if with_private:
        check_private_seeds(path, result, read_private_seeds(private_seeds)[1])
        if ranked_on_model and not models:
            n = required(track(result))
            raise RefusedResultError(
                f"{path}: its private scores were scored on {n} private model{'s' * (n != 1)} (weights "
                f"{', '.join(h[:12] for h in recorded_weights(private))}); give the maintainers' --private-model "
                f"({n} of them, {offered} given) to verify them"
            )
    if with_private and ranked_on_model:
        assert models  # refused above otherwise
        if transfer and not hashes:  # (several: checked when matched)
            from circuit_gym.benchmark import transfer_benchmark
            from circuit_gym.leaderboard.transfer_scorer import check_private_model

            bench = transfer_benchmark(tracks.track(track(result)).benchmark)
            check_private_model(models[0].directory, bench)  # its shape and gate, before loading it
        check_private_weights(path, result, hashes or private_weights_hash(models[0].directory))
        check_model_seed_files(path, result, models)
    # one model: its directory (on ``private_seeds``); several: each with its seed file
    given: PrivateModelArg = None
    if with_private and ranked_on_model:
        given = models if len(models) > 1 else models[0].directory
    request = tracks.reference_request(track(result), policy, checkpoint, recorded_features(prov),
                                       private_seeds=private_seeds if with_private else None,
                                       private_model=given, require_isolation=require_isolation)  # fmt: skip
    try:
        fresh = tracks.score_reference(track(result), result["name"], request)
    except (ImportError, ValueError) as err:  # e.g. the policy's module is gone
        raise RefusedResultError(f"{path}: cannot re-score {policy}: {err}") from None
    found = differences(shown(fresh), shown(result)) + cpu_differences(fresh, result)
    if found:
        raise RefusedResultError(
            f"{path}: re-scoring {policy} gives different scores than the file claims ({'; '.join(found[:3])})"
        )
    if with_private:
        # a record written before issue 58 kept more than the sealed part: compare what it publishes now
        found = differences(fresh.get("private"), sealed_private(private), "private")
        if found:
            raise RefusedResultError(
                f"{path}: re-scoring {policy} on the private seeds gives different scores than the file claims "
                f"({'; '.join(found[:3])})"
            )
        return "verified"
    return "rescored"


def _given_models(private_model: PrivateModelArg, private_seeds: Path | None
                  ) -> tuple[tuple[PrivateModel, ...], tuple[str, ...]]:  # fmt: skip
    """The private models given (none for a lone directory without a seed file: its private part
    is then not recomputed) and no hashes yet (read where an entry needs them)."""
    if private_model is None or (isinstance(private_model, str | Path) and private_seeds is None):
        return (), ()
    return as_private_models(private_model, private_seeds), ()


def _matched(
    models: tuple[PrivateModel, ...], result: dict
) -> tuple[tuple[PrivateModel, ...], tuple[str, ...]]:
    """Several private models, checked (shape, gate) and hashed, in the order ``result`` records them."""
    from circuit_gym.benchmark import transfer_benchmark
    from circuit_gym.leaderboard.transfer_scorer import check_private_model

    bench = transfer_benchmark(tracks.BENCHMARKS[tracks.track(track(result)).benchmark].transfer.version)
    for model in models:
        check_private_model(model.directory, bench)  # its shape and gate, before loading it
    hashes = tuple(private_weights_hash(m.directory) for m in models)
    return matched_models(models, hashes, result)


def check_private_seeds(path: Path, result: dict, seed_sha: str) -> None:
    """RefusedResultError unless ``result``'s private part was scored on the seed file whose
    SHA-256 is ``seed_sha`` (the maintainers'): a private part on any other seed file (the
    submitter's own, or a forged one) is refused, never shown as rescored."""
    recorded = (result.get("private") or {}).get("seed_file_sha256")
    if recorded != seed_sha:
        raise RefusedResultError(
            f"{path}: its private scores were scored on another seed file (sha256 {str(recorded)[:12]}, the "
            f"maintainers' seed file given: {seed_sha[:12]}); only private scores the maintainers can re-compute "
            "go on the board"
        )


# CPU seconds are not reproducible to the bit: a rescore's must lie within this factor of the
# file's, give or take CPU_SLACK_S (a policy claiming 0.1 s that takes 60 s is far outside).
CPU_FACTOR = 3.0
CPU_SLACK_S = 2.0


def shown(result: dict) -> dict:
    """What the board shows of ``result`` that a rescore reproduces exactly: status, scores,
    failure, the white-box tag and the policy's call count (its isolation and CPU seconds:
    :func:`cpu_differences`)."""
    cpu = (result.get("diagnostics") or {}).get("policy_cpu") or {}
    return {
        "status": result.get("status"), "scores": result.get("scores"), "failure": result.get("failure"),
        "white_box": (result.get("provenance") or {}).get("white_box"),
        "policy_calls": {k: cpu.get(k) for k in ("calls", "measured", "limit_per_call_s")},
    }  # fmt: skip


def cpu_differences(fresh: dict, recorded: dict) -> list[str]:
    """Where the file claims more isolation than the rescore had, or CPU seconds
    (``diagnostics.policy_cpu``) other than the rescore measured, within :data:`CPU_FACTOR` and
    :data:`CPU_SLACK_S`."""
    a = (fresh.get("diagnostics") or {}).get("policy_cpu") or {}
    b = (recorded.get("diagnostics") or {}).get("policy_cpu") or {}
    out = []
    if (recorded.get("isolation") or {}).get("complete") and not (fresh.get("isolation") or {}).get(
        "complete"
    ):
        out.append("isolation: the file claims complete isolation, the rescore had none")
    for key in ("loading_s", "calls_s"):
        x, y = a.get(key), b.get(key)
        if x is None or y is None:
            if x != y:
                out.append(f"diagnostics.policy_cpu.{key}: {x!r} != {y!r}")
        elif not (x / CPU_FACTOR - CPU_SLACK_S <= y <= x * CPU_FACTOR + CPU_SLACK_S):
            out.append(f"diagnostics.policy_cpu.{key}: {x!r} measured, {y!r} claimed")
    return out


def collect(paths: list[Path], rescore: bool = False, private_seeds: Path | None = None,
            require_isolation: bool = True, jobs: int = 1, references: References | None = None,
            private_model: PrivateModelArg = None, ledger: Path = LEDGER) -> tuple[list[dict], list[str], list[dict]]:  # fmt: skip
    """(scored entries, refusal messages, failure records), in ``paths`` order.

    Each returned result gets ``result["board"] = {"check": ..., "reference": name or None}``
    (not part of the file). A name is refused when it repeats an earlier file's, or when it
    is a reference entry's name but the file is not the one the manifest (``references``,
    default ``leaderboard/references.json``) reviewed. With ``rescore``, ``jobs`` > 1 re-scores
    that many entries at once, each in its own process.
    """
    references = load_manifest() if references is None else references
    scorings = load_ledger(ledger)
    pending, refused, seen = [], [], set()
    for path in paths:
        try:
            result = verify(path)
            name = result["name"]
            try:
                reference = recognise(result, track(result), references)
            except ReferenceMismatchError as err:
                raise RefusedResultError(f"{path}: {err}") from None
            if (track(result), name) in seen:
                raise RefusedResultError(f"{path}: another result file already uses the name {name!r}")
            why = None if reference else entry_refusal(scorings, result)
            if why is not None:
                raise RefusedResultError(f"{path}: {why}")
        except RefusedResultError as err:
            refused.append(str(err))
            continue
        seen.add((track(result), name))
        pending.append((path, result, reference))
    if rescore:
        items = [(p, r, references[track(r)][ref] if ref else None) for p, r, ref in pending]
        checks = _rescore_all(items, private_seeds, require_isolation, jobs, private_model)
    else:
        checks = ["hash-checked"] * len(pending)
    entries, failed = [], []
    for (path, result, reference), check in zip(pending, checks, strict=True):
        if isinstance(check, RefusedResultError):
            refused.append(str(check))
            continue
        result["board"] = {"check": check, "reference": reference, "path": str(path)}
        (entries if result.get("status") == "scored" else failed).append(result)
    return entries, refused, failed


def _rescore_or_refusal(
    path: Path,
    result: dict,
    reference: Reference | None,
    private_seeds,
    require_isolation,
    private_model=None,
) -> str | RefusedResultError:
    try:
        return rescore_matches(path, result, private_seeds, require_isolation, reference, private_model)
    except RefusedResultError as err:
        return err


def _rescore_all(items: list[tuple[Path, dict, Reference | None]], private_seeds: Path | None,
                 require_isolation: bool, jobs: int, private_model: PrivateModelArg = None) -> list[str | RefusedResultError]:  # fmt: skip
    """:func:`rescore_matches` of every item (a check, or the refusal); ``jobs`` processes at once.
    Any other error (e.g. isolation unavailable: the machine is at fault) stops the render."""
    args = (private_seeds, require_isolation, private_model)
    if jobs <= 1 or len(items) <= 1:
        return [_rescore_or_refusal(*item, *args) for item in items]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn: a fresh interpreter per worker, so no scorer state is shared between entries
    with ProcessPoolExecutor(min(jobs, len(items)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_rescore_or_refusal, *item, *args) for item in items]
        return [f.result() for f in futures]


def track(result: dict) -> str:
    """The track a result was scored on (every scorer records it; :func:`verify` refuses a file without one)."""
    return result.get("track", "")


def missing_references(
    entries: list[dict], references: dict[str, Reference], refused: list[str], what: str
) -> None:
    """RefusedResultError unless every reference of ``references`` is among ``entries``."""
    present = {e["board"]["reference"] for e in entries}
    missing = [r for r in references if r not in present]
    if missing:
        files = ", ".join(references[r].result for r in missing)
        raise RefusedResultError(
            f"{what}reference entries missing from the board: {missing} (the result files the reviewed manifest "
            f"leaderboard/references.json names: {files}). Rescore them from the repository root with "
            "`circuit-gym leaderboard rescore-references`"
            + ("" if not refused else "; refused: " + " | ".join(refused))
        )
