"""Disk cache of sweep tables, keyed by everything that changes the numbers.

A file holds ``{"key": {...}, "checksum": sha256(payload), "payload": {...}}``. It is
written atomically (temp file + ``os.replace``) and on reading is used only if it parses,
its key equals the requested key field by field, and its checksum matches; otherwise it
is reported, deleted and recomputed — never silently used.

Location: ``$CIRCUIT_GYM_CACHE``, else ``~/.cache/circuit_gym``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

CACHE_ENV_VAR = "CIRCUIT_GYM_CACHE"


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "circuit_gym")


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class SweepCache:
    """Get-or-compute of JSON payloads under a key dictionary."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else cache_dir()

    def path_for(self, key: dict) -> Path:
        digest = hashlib.sha256(_canonical(key).encode()).hexdigest()[:24]
        return self.directory / f"{key.get('kind', 'entry')}-{digest}.json"

    def load(self, key: dict) -> dict | None:
        """The cached payload for ``key``, or None if absent or unusable (then removed)."""
        path = self.path_for(key)
        if not path.exists():
            return None
        try:
            entry = json.loads(path.read_text())
            problem = None
            if _canonical(entry["key"]) != _canonical(key):
                problem = "its key does not match the request"
            elif hashlib.sha256(_canonical(entry["payload"]).encode()).hexdigest() != entry["checksum"]:
                problem = "its checksum does not match its content"
        except (ValueError, KeyError, TypeError, OSError) as err:
            problem = f"it cannot be read ({type(err).__name__})"
        if problem is None:
            return entry["payload"]
        warnings.warn(f"circuit_gym cache: ignoring and rebuilding {path}: {problem}", stacklevel=2)
        path.unlink(missing_ok=True)
        return None

    def store(self, key: dict, payload: dict) -> Path | None:
        """Write atomically; on a directory that cannot be written, warn and return None
        (the caller keeps its freshly computed numbers, they are just not cached)."""
        path = self.path_for(key)
        entry = {
            "key": key,
            "checksum": hashlib.sha256(_canonical(payload).encode()).hexdigest(),
            "payload": payload,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        except OSError as err:
            warnings.warn(
                f"circuit_gym cache: cannot write to {self.directory} ({type(err).__name__}: {err}); "
                f"continuing without caching. Set ${CACHE_ENV_VAR} to a writable directory.",
                stacklevel=2,
            )
            return None
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(_canonical(entry))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def get_or_compute(self, key: dict, compute: Callable[[], dict]) -> dict:
        payload = self.load(key)
        if payload is None:
            payload = compute()
            self.store(key, payload)
        return payload
