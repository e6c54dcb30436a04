"""When a board entry is current: the rules it was scored under, never the bytes of its source.

An entry is current when three things match this checkout:

- ``scorer_protocol``: :data:`SCORER_PROTOCOL`, the version of what a score *means* (which
  episodes, which summaries, how recovery, CPR / CMD and passes are computed and rounded);
- its track's benchmark definition (its row's ``definition()``, e.g.
  ``benchmark.TransferBenchmark.definition``: models, tasks, split, seeds, ablation, lambda, ...);
- the weights of the public models it was scored on (``verification.py`` checks them per kind of
  track: the zoo's hashes, the held-out members').

The package version, the git commit and the policy's source hash (``policy_files_hash``) stay
in the result file as provenance only: a docstring edit, a refactor of the baselines or a
version bump changes none of the three, so no entry goes stale. Whether the code still gives a
reference's numbers is the canary's job (``circuit_gym/leaderboard/canary.py``), which re-scores a sample of
episodes and compares the rows; whether a file claiming to be a reference holds the reviewed
numbers is the manifest's (``circuit_gym/leaderboard/references.py``).

Bump :data:`SCORER_PROTOCOL` only when what a score means changes (a new summary field is
not such a change unless it alters an existing one); every result file is then stale until
rescored (``circuit-gym leaderboard rescore-references`` for the references).
"""

from __future__ import annotations

SCORER_PROTOCOL = "circuit-gym-scorer-v1"
# Recorded in every result, checked by nothing: where and with which code it was scored.
PROVENANCE_ONLY = ("package_version", "git_commit", "policy_files_hash", "platform")


def stale_reason(provenance: dict, definition: dict) -> str | None:
    """Why a result with ``provenance`` is not current under the scorer protocol and ``definition``
    (its track's), or None when it is current."""
    protocol = provenance.get("scorer_protocol")
    if protocol is None:
        return (
            "scored before scorer protocols existed (no scorer_protocol in its provenance); "
            "rescore it with `circuit-gym leaderboard score`"
        )
    if protocol != SCORER_PROTOCOL:
        return f"scored under scorer protocol {protocol!r}, this board uses {SCORER_PROTOCOL!r}; rescore it"
    for key, expected in definition.items():
        if provenance.get(key) != expected:
            return f"scored under a different benchmark ({key}: {provenance.get(key)!r} != {expected!r})"
    return None
