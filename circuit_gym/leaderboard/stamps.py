"""Skip re-making a chart ``render`` draws whose inputs are unchanged (edge exports: their committed source record, ``edge_tables.mib_export_is_current``).

A stamp per output, in this user's cache (``circuit_gym.ablation.cache.cache_dir``, never committed),
records a digest of what made it (the caller's input bytes, this package's Python sources and the
versions of the libraries that write the bytes) and the SHA-256 of the bytes it wrote. The output is
made again unless the stamp matches both the inputs and the file as it is now: a changed result,
chart data or code, or an output edited or deleted since, re-makes it. Making a file is
deterministic (the board's files are byte-identical for unchanged inputs), so skipping it changes
nothing but the time: re-compressing the edge exports took most of a render's CPU. A stamp carries an
HMAC under the sweep cache's per-user secret (``cache.secret_key``), so whoever can write the cache but
not read the secret (a sandboxed policy) cannot make ``render`` keep a file it did not make.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import circuit_gym
from circuit_gym.ablation.cache import cache_dir, secret_key

# the libraries whose version can change the bytes of a board file (PNG writer, compressors)
_WRITERS = ("matplotlib", "numpy", "pillow")


def sources_digest(root: Path) -> str:
    """SHA-256 of every Python source under ``root`` (relative path and bytes)."""
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


@functools.cache
def code_digest() -> str:
    """The package's :func:`sources_digest`, Python's version and the writers' versions."""
    h = hashlib.sha256(sys.version.encode())
    for name in _WRITERS:
        try:
            h.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name}=absent".encode())
    h.update(sources_digest(Path(circuit_gym.__file__).resolve().parent).encode())
    return h.hexdigest()


def _stamp_path(output: Path) -> Path:
    key = hashlib.sha256(str(output.resolve()).encode()).hexdigest()[:32]
    return cache_dir() / "board_stamps" / f"{key}.json"


def _inputs_digest(inputs: bytes) -> str:
    return hashlib.sha256(code_digest().encode() + b"\0" + inputs).hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _mac(output_digest: str, inputs_digest: str) -> str:
    return hmac.new(secret_key(), f"{output_digest}\0{inputs_digest}".encode(), hashlib.sha256).hexdigest()


def is_current(output: Path, inputs: bytes) -> bool:
    """Whether ``output`` was made from ``inputs`` by this code and is unchanged since."""
    try:
        stamp = json.loads(_stamp_path(output).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(stamp, dict):
        return False
    digest, wanted = _file_digest(output), _inputs_digest(inputs)
    return (
        digest is not None
        and stamp.get("output") == digest
        and stamp.get("inputs") == wanted
        and hmac.compare_digest(str(stamp.get("mac")), _mac(digest, wanted))
    )


def record(output: Path, inputs: bytes) -> None:
    """Stamp ``output`` (as it is now) as made from ``inputs``; nothing when it does not exist."""
    digest = _file_digest(output)
    if digest is None:
        return
    path = _stamp_path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        wanted = _inputs_digest(inputs)
        json.dump(
            {"output": digest, "inputs": wanted, "mac": _mac(digest, wanted), "path": str(output.resolve())},
            fh,
        )
    os.replace(tmp, path)


def refresh(output: Path, inputs: bytes, make: Callable[[], object]) -> bool:
    """Call ``make`` (which writes ``output``) unless ``output`` is current for ``inputs``;
    True when it was made."""
    if is_current(output, inputs):
        return False
    make()
    record(output, inputs)
    return True
