"""One-off (2026-11-27): committed result files named their checkpoint by this machine's absolute
path (``provenance.checkpoint``, as the scorer was given it); the scorer now records a checkpoint
inside the repository relative to it (``provenance.shown_checkpoint``). This rewrites that one
field in every committed result, adds a ``migration`` record (what changed, by which script, the
content hash before) and re-seals the file (new content hash). A score is never touched, so the
manifest's scores digests stay what they are (checked). A file whose content hash does not match
its content is refused, not migrated.

    python scripts/migrate_checkpoint_paths.py
"""

from __future__ import annotations

import json
import sys

from circuit_gym.leaderboard.provenance import REPO_ROOT, content_hash, shown_checkpoint
from circuit_gym.leaderboard.references import scores_digest


def main() -> int:
    changed = 0
    for path in sorted((REPO_ROOT / "leaderboard" / "results").rglob("*.json")):
        result = json.loads(path.read_text())
        prov = result.get("provenance") or {}
        before = prov.get("checkpoint")
        after = shown_checkpoint(before)
        if before == after:
            continue
        if result.get("content_hash") != content_hash(result):
            print(f"refused (content hash does not match): {path.relative_to(REPO_ROOT)}", file=sys.stderr)
            return 1
        digest = scores_digest(result)
        migrated = {**result, "provenance": {**prov, "checkpoint": after}}
        migrated["migration"] = [*result.get("migration", []), {
            "script": "scripts/migrate_checkpoint_paths.py", "changed": "provenance.checkpoint made relative",
            "content_hash_before": result["content_hash"]}]  # fmt: skip
        migrated["content_hash"] = content_hash(migrated)
        assert scores_digest(migrated) == digest  # no score moved
        path.write_text(json.dumps(migrated, indent=1, sort_keys=True, allow_nan=True) + "\n")
        changed += 1
        print(f"{path.relative_to(REPO_ROOT)}: {after}")
    print(f"{changed} files migrated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
