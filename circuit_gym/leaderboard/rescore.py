"""Re-score the reference entries and write their result files and the manifest together; adopt
results already scored as a new version's references.

``circuit-gym leaderboard rescore-references`` runs the full scorer on every reference the
manifest lists (its policy and checkpoint, from the repository root), writes each result file
where the manifest says, and rewrites ``leaderboard/references.json`` with the new scores and
checkpoint digests. Review the manifest's diff like a change of the board's numbers. Needed
after a bump of the scorer protocol or a benchmark definition, new reference weights, or a
canary failure that was meant (a change of the numbers); a refactor or a version bump does not
need it.

``circuit-gym leaderboard adopt-references FILE ...`` lists result files that were scored already
(``leaderboard score``, e.g. a new version's references, scored one by one over several sessions)
as the reference entries of their tracks, without playing them again: each file must be authentic
and current (``verification.verify``: content hash, definition, private-model count), scored, in its
track's results folder, and its checkpoint in this checkout must still have the digest it was scored
with; the policy, checkpoint and observation come from its provenance. Nothing is written unless
every file passes, and an existing reference is never replaced (``rescore-references`` does that).
"""

from __future__ import annotations

from pathlib import Path

from circuit_gym.leaderboard.private_models import PrivateModelArg
from circuit_gym.leaderboard.provenance import REPO_ROOT
from circuit_gym.leaderboard.references import (
    MANIFEST,
    TRACKS,
    Reference,
    as_entries,
    load_manifest,
    manifest_entry,
    write_manifest,
)
from circuit_gym.leaderboard.tracks import reference_request, score_reference, track


def _score(reference: Reference, private_seeds: Path | None, require_isolation: bool | None,
           private_model: PrivateModelArg = None) -> dict:  # fmt: skip
    """The full scoring of ``reference`` (``tracks.score_reference``); the private model (or the
    several, v8's: ``private_models.PrivateModel`` each with its seed file) goes to the tracks ranked
    on it only."""
    row = track(reference.track)
    request = reference_request(reference.track, reference.policy, reference.checkpoint_path(), reference.features,
                                private_seeds=private_seeds, require_isolation=require_isolation,
                                private_model=private_model if row.private_model else None)  # fmt: skip
    return score_reference(reference.track, reference.name, request)


def rescore_references(tracks: tuple[str, ...] = TRACKS, private_seeds: Path | None = None, jobs: int = 1,
                       require_isolation: bool | None = None, manifest: Path = MANIFEST,
                       private_model: PrivateModelArg = None, names: tuple[str, ...] | None = None) -> list[str]:  # fmt: skip
    """Re-score every reference of ``tracks``, ``jobs`` at once (each in its own spawned process);
    write the result files and the manifest. Returns one line per reference. A reference whose
    policy fails stops the run before anything is written (its failure in the error)."""
    from circuit_gym.leaderboard.scoring import write_result

    references = load_manifest(manifest)
    todo = [ref for t in tracks for ref in references[t].values() if names is None or ref.name in names]
    if not todo:
        raise ValueError(f"no reference of tracks {list(tracks)} is named {list(names or ())}")
    if jobs <= 1 or len(todo) <= 1:
        results = [_score(ref, private_seeds, require_isolation, private_model) for ref in todo]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(
            min(jobs, len(todo)), mp_context=multiprocessing.get_context("spawn")
        ) as pool:
            futures = [
                pool.submit(_score, ref, private_seeds, require_isolation, private_model) for ref in todo
            ]
            results = [f.result() for f in futures]
    failed = [f"{r.track}/{r.name}: {res['failure']}" for r, res in zip(todo, results, strict=True)
              if res["status"] != "scored"]  # fmt: skip
    if failed:
        raise RuntimeError("reference policies failed, nothing written: " + "; ".join(failed))
    # Read again: another rescore (of other tracks) may have written the manifest meanwhile.
    entries = as_entries(load_manifest(manifest))
    lines = []
    for ref, result in zip(todo, results, strict=True):
        write_result(result, ref.result_path())
        entries[ref.track][ref.name] = manifest_entry(
            result, ref.policy, ref.checkpoint, ref.result, REPO_ROOT
        )
        lines.append(f"{ref.track}/{ref.name}: {ref.result} ({result['diagnostics']['wall_seconds']:.0f} s)")
    write_manifest(entries, manifest)
    return lines


def adopt_references(paths: list[Path], manifest: Path = MANIFEST, root: Path = REPO_ROOT) -> list[str]:
    """List the scored result files ``paths`` as reference entries (module docstring); returns one
    line per file. ValueError naming the first file refused; nothing written then."""
    from circuit_gym.leaderboard.verification import verify

    entries = as_entries(load_manifest(manifest))
    lines, seen = [], set()
    for given in paths:
        path = Path(given).resolve()
        result = verify(path)  # RefusedResultError (a ValueError) for a forged, stale or miscounted file
        if result["status"] != "scored":
            raise ValueError(f"{given}: status {result['status']!r}: only a scored result is a reference")
        name, row = result["name"], track(result["track"])
        if path.parent != row.results_dir.resolve():
            raise ValueError(f"{given}: a {row.name} reference lies in its track's folder {row.results_dir}, "
                             "where the board reads it")  # fmt: skip
        if (row.name, name) in seen:
            raise ValueError(f"{given}: a second {row.name} result named {name!r}")
        seen.add((row.name, name))
        prov = result["provenance"]
        entry = manifest_entry(
            result, prov["policy"], prov.get("checkpoint"), path.relative_to(root).as_posix(), root
        )
        if entry["checkpoint_digest"] != prov.get("checkpoint_digest"):
            raise ValueError(f"{given}: its checkpoint {prov.get('checkpoint')} changed since it was scored "
                             f"(digest now {str(entry['checkpoint_digest'])[:12]}, scored with "
                             f"{str(prov.get('checkpoint_digest'))[:12]}): score it again")  # fmt: skip
        if name in entries[row.name]:
            raise ValueError(
                f"{given}: {row.name} already has a reference {name!r}; `rescore-references` replaces one"
            )
        entries[row.name][name] = entry
        lines.append(f"{row.name}/{name}: {entry['result']}")
    write_manifest(entries, manifest)
    return lines
