"""What a result file says about how it was made, and the content hash that seals it.

``provenance`` records the track's benchmark definition and scorer protocol (which decide
whether the entry is current, ``circuit_gym/leaderboard/protocol.py``), the model's weights hash, what
was scored (policy spec or builtin, checkpoint and its digest), and, as provenance only, the
package version, the git commit, a hash of the policy's source files and the numeric platform
(``platform``: CPU model, torch's kernel set and threads, torch and numpy versions,
``circuit_gym.machine``): float32 kernels round differently from one CPU to another, so a
rescore reproduces the scores, and so the scores digest, bit for bit only where these match.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import circuit_gym
from circuit_gym.leaderboard import paths
from circuit_gym.leaderboard.protocol import SCORER_PROTOCOL
from circuit_gym.leaderboard.sandbox import policy_files
from circuit_gym.machine import numeric_platform

REPO_ROOT = paths.REPO_ROOT


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)


def content_hash(result: dict) -> str:
    """SHA-256 of the result without its ``content_hash`` field."""
    body = {k: v for k, v in result.items() if k != "content_hash"}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _checkpoint_files(checkpoint: str | Path, base: Path | None) -> tuple[Path, list[Path]]:
    cp = Path(checkpoint)
    cp = cp if cp.is_absolute() or base is None else base / cp
    files = sorted(cp.rglob("*")) if cp.is_dir() else [cp]
    # tensorboard logs are training diagnostics, not what the policy loads
    return cp, [f for f in files if f.is_file() and "tensorboard" not in f.relative_to(cp).parts]


def checkpoint_digest(checkpoint: str | Path | None, base: Path | None = None) -> str | None:
    """SHA-256 of a checkpoint file, or of every file of a checkpoint directory (relative path
    and bytes, in path order, tensorboard logs left out); None without a checkpoint. A relative
    ``checkpoint`` is resolved against ``base`` (default: the working directory). A missing
    checkpoint is a FileNotFoundError."""
    if checkpoint is None:
        return None
    cp, files = _checkpoint_files(checkpoint, base)
    if not cp.exists():
        raise FileNotFoundError(f"checkpoint {cp} does not exist")
    h = hashlib.sha256()
    for f in files:
        h.update((f.relative_to(cp).as_posix() if f != cp else f.name).encode() + b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


def files_hash(spec: str | None, checkpoint: str | Path | None, base: Path | None = None) -> str:
    """Hash of the policy's module file(s) and checkpoint (provenance only: it names what ran,
    it decides nothing). The module is located without importing it (``sandbox.policy_files``):
    a wrong path is a ModuleNotFoundError here, and nothing of a submission runs in the scorer."""
    h = hashlib.sha256()
    if spec:
        for f in policy_files(spec):
            h.update(f.read_bytes())
    if checkpoint:
        for f in _checkpoint_files(checkpoint, base)[1]:
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def shown_checkpoint(checkpoint: str | Path | None) -> str | None:
    """A checkpoint as a result records it: relative to the repository when it lies inside it
    (committed results name no machine's path), as given otherwise."""
    if not checkpoint:
        return None
    path = Path(checkpoint)
    if path.is_absolute() and path.resolve().is_relative_to(REPO_ROOT.resolve()):
        return str(path.resolve().relative_to(REPO_ROOT.resolve()))
    return str(checkpoint)


def make_provenance(definition: dict, model, policy: str, checkpoint: str | Path | None, policy_hash: str,
                    white_box: bool) -> dict:  # fmt: skip
    """A result's provenance: the track's definition and the scorer protocol, the model's
    weights, what was scored (``policy``: a spec or ``builtin:NAME``), and where and with which
    code (provenance only)."""
    info = model.circuit_gym_info
    return {
        **definition, "scorer_protocol": SCORER_PROTOCOL, "model": info.name, "weights_hash": info.weights_hash,
        "policy": policy, "checkpoint": shown_checkpoint(checkpoint),
        "checkpoint_digest": checkpoint_digest(checkpoint), "white_box": white_box,
        "package_version": circuit_gym.__version__, "git_commit": git_commit(), "policy_files_hash": policy_hash,
        "platform": numeric_platform(),
    }  # fmt: skip
