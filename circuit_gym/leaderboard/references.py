"""The reviewed reference manifest: which result files are the board's reference entries.

``leaderboard/references.json`` lists, per track, each reference entry's name with

- ``policy``: what scores it now (``package.module:factory`` or ``builtin:NAME``), the spec the
  canary and ``rescore-references`` run; a refactor that moves a policy edits this line;
- ``checkpoint`` and ``checkpoint_digest``: its checkpoint (relative to the repository root) and
  the SHA-256 of its files (``provenance.checkpoint_digest``): new weights are a new reference;
- ``result``: its committed result file (relative to the repository root);
- ``scores_digest``: the SHA-256 of that file's status, scores and private scores
  (:func:`scores_digest`): the numbers a reviewer accepted;
- ``features`` (only when not the environments' default, ``envs.features.DEFAULT_FEATURES``): the observation the policy is scored
  with (``transfer_scorer.feature_sets``), so rescoring and the canary give it the same one.

A result file is the reference entry ``name`` of its track when the manifest lists that name
and the file's scores digest and checkpoint digest are the manifest's, and the checkpoint in
this checkout still has that digest. A file that uses a reference's name without all of that
is refused (the name is reserved). Source bytes are not consulted: whether this checkout's code
still produces the reviewed numbers is the canary's question (``circuit_gym/leaderboard/canary.py``).

The manifest changes only with the result files it names, written together by
``circuit-gym leaderboard rescore-references`` (:func:`manifest_entry`, :func:`write_manifest`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from circuit_gym.envs.features import DEFAULT_FEATURES  # unsaid in the manifest
from circuit_gym.leaderboard import paths
from circuit_gym.leaderboard.provenance import REPO_ROOT, canonical_json, checkpoint_digest
from circuit_gym.leaderboard.tracks import TRACKS as _TRACK_TABLE

MANIFEST = paths.BOARD_DIR / "references.json"
TRACKS = tuple(_TRACK_TABLE)  # every board track (circuit_gym/leaderboard/tracks.py)
_FIELDS = ("policy", "checkpoint", "checkpoint_digest", "result", "scores_digest")
_ABOUT = (
    "Reviewed list of the board's reference entries (circuit_gym/leaderboard/references.py). Written by "
    "`circuit-gym leaderboard rescore-references`; review a change like a change of the numbers."
)


class ReferenceMismatchError(ValueError):
    """A result uses a reference entry's name but is not that reference."""


@dataclass(frozen=True)
class Reference:
    track: str
    name: str
    policy: str  # package.module:factory, or builtin:NAME
    checkpoint: str | None  # relative to the repository root
    checkpoint_digest: str | None
    result: str  # the committed result file, relative to the repository root
    scores_digest: str
    features: str = DEFAULT_FEATURES  # the observation it is scored with

    @property
    def builtin(self) -> str | None:
        return self.policy.removeprefix("builtin:") if self.policy.startswith("builtin:") else None

    @property
    def policy_spec(self) -> str | None:
        return None if self.builtin else self.policy

    def result_path(self, root: Path = REPO_ROOT) -> Path:
        return root / self.result

    def checkpoint_path(self, root: Path = REPO_ROOT) -> str | None:
        return None if self.checkpoint is None else str(root / self.checkpoint)


References = dict[str, dict[str, Reference]]  # track -> name -> reference


def scores_digest(result: dict) -> str:
    """SHA-256 of what a reviewer accepts of a result: its status, scores and private scores."""
    body = {k: result.get(k) for k in ("status", "scores", "private")}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def load_manifest(path: Path = MANIFEST) -> References:
    """The manifest at ``path``, checked field by field (ValueError naming what is wrong)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"reference manifest {path}: not readable JSON ({err})") from None
    out: References = {}
    for track in TRACKS:
        entries = data.get(track, {})
        if not isinstance(entries, dict):
            raise ValueError(f"reference manifest {path}: {track!r} must map names to entries")
        out[track] = {}
        for name, entry in entries.items():
            if not isinstance(entry, dict) or not set(_FIELDS) <= set(entry) <= {*_FIELDS, "features"}:
                raise ValueError(
                    f"reference manifest {path}: {track}/{name} must have exactly the fields {_FIELDS} "
                    "(and optionally 'features')"
                )
            if not isinstance(entry.get("features", DEFAULT_FEATURES), str):
                raise ValueError(f"reference manifest {path}: {track}/{name}: features must be a string")
            if not isinstance(entry["policy"], str) or not isinstance(entry["result"], str):
                raise ValueError(
                    f"reference manifest {path}: {track}/{name}: policy and result must be strings"
                )
            out[track][name] = Reference(track, name, **entry)
    unknown = set(data) - set(TRACKS) - {"about"}
    if unknown:
        raise ValueError(f"reference manifest {path}: unknown tracks {sorted(unknown)}")
    return out


def manifest_entry(result: dict, policy: str, checkpoint: str | None, result_file: str,
                   root: Path = REPO_ROOT) -> dict:  # fmt: skip
    """The manifest's entry for ``result`` (scored with ``policy`` and ``checkpoint``, written to
    ``result_file``; paths relative to ``root``)."""
    entry = {"policy": policy, "checkpoint": checkpoint, "checkpoint_digest": checkpoint_digest(checkpoint, root),
             "result": result_file, "scores_digest": scores_digest(result)}  # fmt: skip
    features = recorded_features(result.get("provenance", {}))
    return entry if features == DEFAULT_FEATURES else {**entry, "features": features}


def recorded_features(provenance: dict) -> str:
    """The observation an entry was scored with, as a request's ``features``: its provenance's
    ``features`` (transfer tracks), or on a knock-out track its ``observation_scores`` when not the
    track's default (the knock-out rows read a request's features as those scores: tracks.py)."""
    from circuit_gym.envs.knockout import SCORES

    scores = provenance.get("observation_scores", SCORES[0])
    return provenance.get("features", DEFAULT_FEATURES if scores == SCORES[0] else scores)


def write_manifest(entries: dict[str, dict[str, dict]], path: Path = MANIFEST) -> Path:
    """Write ``{track: {name: manifest_entry(...)}}`` as the manifest (sorted, one field a line)."""
    body = {"about": _ABOUT, **{t: dict(sorted(entries.get(t, {}).items())) for t in TRACKS}}
    Path(path).write_text(json.dumps(body, indent=1, sort_keys=False) + "\n")
    return Path(path)


def as_entries(references: References) -> dict[str, dict[str, dict]]:
    """The manifest's JSON form of ``references`` (for editing one entry and writing it back)."""
    return {t: {n: _entry(r) for n, r in refs.items()} for t, refs in references.items()}


def _entry(reference: Reference) -> dict:
    entry = {k: v for k, v in asdict(reference).items() if k in _FIELDS}
    return entry if reference.features == DEFAULT_FEATURES else {**entry, "features": reference.features}


def recognise(result: dict, track: str, references: References, root: Path = REPO_ROOT) -> str | None:
    """The reference entry ``result`` is, or None when its name is not a reference's; raises
    :class:`ReferenceMismatchError` when it uses a reference's name without being that reference."""
    name = result.get("name")
    reference = references.get(track, {}).get(name)
    if reference is None:
        return None
    reserved = f"the name {name!r} is reserved for the {track} reference entry ({reference.policy})"
    if scores_digest(result) != reference.scores_digest:
        raise ReferenceMismatchError(
            f"{reserved}, and this file's scores are not the reviewed ones (scores digest "
            f"{scores_digest(result)[:12]}, leaderboard/references.json: {reference.scores_digest[:12]})"
        )
    recorded = (result.get("provenance") or {}).get("checkpoint_digest")
    if recorded != reference.checkpoint_digest:
        raise ReferenceMismatchError(
            f"{reserved}, and this file was scored with another checkpoint (digest {str(recorded)[:12]}, "
            f"leaderboard/references.json: {str(reference.checkpoint_digest)[:12]})"
        )
    try:
        current = checkpoint_digest(reference.checkpoint, root)
    except FileNotFoundError as err:
        raise ReferenceMismatchError(f"{reserved}, and its checkpoint is missing: {err}") from None
    if current != reference.checkpoint_digest:
        raise ReferenceMismatchError(
            f"{reserved}, and its checkpoint {reference.checkpoint} changed since the manifest was reviewed "
            f"(digest now {str(current)[:12]}, leaderboard/references.json: {str(reference.checkpoint_digest)[:12]}): "
            "rescore the reference (`circuit-gym leaderboard rescore-references`)"
        )
    return name
