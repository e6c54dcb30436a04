"""One-off (issue 30): bring the committed reference result files under the scorer protocol.

The files in leaderboard/results/ were scored before scorer protocols existed; the board then
judged them by package version and by hashes of the baselines' source. This script adds what
the new rules read, without touching a score:

- ``provenance.scorer_protocol``: ``SCORER_PROTOCOL`` (v1 is defined as what the scorer computed
  when these files were written; the canary, ``tests/test_leaderboard_canary.py``, re-scores the
  first episodes of each with this checkout and compares the rows);
- ``provenance.checkpoint_digest``: the SHA-256 of the reference's checkpoint in this checkout;
- ``migration``: what was added, by which script, and the file's content hash before;

then re-seals the file (new content hash) and writes leaderboard/references.json, the reviewed
manifest, with each file's scores digest. Files already under a protocol are left as they are.
A file whose content hash does not match its content is refused, not migrated.

The lead's rescore (``circuit-gym leaderboard rescore-references``) replaces these files with
freshly scored ones, without a ``migration`` record.

    python scripts/migrate_results_to_scorer_protocol.py
"""

from __future__ import annotations

import json
import sys

from circuit_gym.leaderboard.protocol import SCORER_PROTOCOL
from circuit_gym.leaderboard.provenance import REPO_ROOT, checkpoint_digest, content_hash
from circuit_gym.leaderboard.references import manifest_entry, write_manifest
from circuit_gym.leaderboard.scoring import write_result

# The reference lists benchmark.py held before the manifest: name -> (policy, checkpoint).
OLD_REFERENCES = {
    "single-head": {
        "random": ("circuit_gym.baselines.random_policy:make_policy", None),
        "fixed": ("circuit_gym.baselines.fixed_policy:make_policy", "docs/results/fixed_policy.json"),
        "greedy": ("builtin:greedy", None),
        "ppo": ("circuit_gym.baselines.ppo:load_policy", "docs/results/ppo"),
    },
    "circuit": {
        "greedy_search": ("builtin:greedy_search", None),
        "attribution": ("builtin:attribution", None),
        "random": ("circuit_gym.baselines.circuit_random_policy:make_policy", None),
        "ppo": ("circuit_gym.baselines.circuit_ppo:load_policy", "docs/results/circuit/ppo"),
    },
}
RESULT_DIRS = {"single-head": "leaderboard/results", "circuit": "leaderboard/results/circuit"}


def migrate(result: dict, checkpoint: str | None) -> dict:
    """``result`` with the protocol fields added and re-sealed (a new dict)."""
    if result.get("content_hash") != content_hash(result):
        raise ValueError(f"{result.get('name')}: content hash mismatch; not migrating an edited file")
    if "scorer_protocol" in result["provenance"]:
        return result
    prov = {**result["provenance"], "scorer_protocol": SCORER_PROTOCOL,
            "checkpoint_digest": checkpoint_digest(checkpoint, REPO_ROOT)}  # fmt: skip
    out = {k: v for k, v in result.items() if k != "content_hash"}
    out["provenance"] = prov
    out["migration"] = {
        "script": "scripts/migrate_results_to_scorer_protocol.py",
        "added": ["provenance.scorer_protocol", "provenance.checkpoint_digest"],
        "content_hash_before": result["content_hash"],
    }
    out["content_hash"] = content_hash(out)
    return out


def main() -> int:
    manifest: dict[str, dict[str, dict]] = {}
    for track, references in OLD_REFERENCES.items():
        for name, (policy, checkpoint) in references.items():
            rel = f"{RESULT_DIRS[track]}/{name}.json"
            result = migrate(json.loads((REPO_ROOT / rel).read_text()), checkpoint)
            write_result(result, REPO_ROOT / rel)
            manifest.setdefault(track, {})[name] = manifest_entry(result, policy, checkpoint, rel, REPO_ROOT)
            print(f"{rel}: scorer protocol {result['provenance']['scorer_protocol']}")
    print(f"wrote {write_manifest(manifest)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
