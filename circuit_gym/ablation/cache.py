"""Disk cache of sweep tables, keyed by everything that changes the numbers.

A file holds ``{"key": {...}, "mac": HMAC-SHA256(secret, key + payload), "payload": {...}}``.
It is written atomically (temp file + ``os.replace``) and on reading is used only if it
parses, its key equals the requested key field by field, and its MAC matches; otherwise it
is reported (a warning), deleted and recomputed — never silently used.

The MAC is keyed with a per-user secret (:func:`secret_key`) kept *outside* the cache
directory, so whoever can write the cache but cannot read that secret (a sandboxed policy,
another user sharing the directory) cannot forge an entry: a plain checksum of the payload,
which anyone can recompute, would not stop that. Files from another secret (or an older
version, which wrote a plain SHA-256) are rebuilt, once. A key with a None field (a part of
it that could not be fingerprinted, e.g. a task's metric) is never stored or served.

Location: ``$CIRCUIT_GYM_CACHE``, else ``~/.cache/circuit_gym``; the secret:
``$CIRCUIT_GYM_CACHE_KEY``, else ``~/.config/circuit_gym/cache.key`` (created on first use,
mode 0600).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

CACHE_ENV_VAR = "CIRCUIT_GYM_CACHE"
KEY_ENV_VAR = "CIRCUIT_GYM_CACHE_KEY"
_KEY_BYTES = 32


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "circuit_gym")


def key_path() -> Path:
    return Path(os.environ.get(KEY_ENV_VAR) or Path.home() / ".config" / "circuit_gym" / "cache.key")


def secret_key() -> bytes:
    """This user's cache secret: read from :func:`key_path`, created there (0600) if absent."""
    path = key_path()
    try:
        key = path.read_bytes()
        if len(key) >= _KEY_BYTES:
            return key
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")  # created 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(_KEY_BYTES))
        os.link(tmp, path)  # fails if another process created it first: then use theirs
    except FileExistsError:
        pass
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path.read_bytes()


def _mac(secret: bytes, key: dict, payload: dict) -> str:
    message = _canonical(key).encode() + b"\n" + _canonical(payload).encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


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
        if None in key.values() or not path.exists():
            return None
        try:
            entry = json.loads(path.read_text())
            problem = None
            if _canonical(entry["key"]) != _canonical(key):
                problem = "its key does not match the request"
            elif not hmac.compare_digest(str(entry.get("mac")), _mac(secret_key(), key, entry["payload"])):
                problem = "its checksum (HMAC with this user's secret) does not match its content"
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
        if None in key.values():
            return None
        entry = {"key": key, "mac": _mac(secret_key(), key, payload), "payload": payload}
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
