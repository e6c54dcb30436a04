"""Custody of the private evaluation model: sealed with the maintainers' key, committed, opened
by the scorer into a private temporary directory (issue 58).

Zoo v1's private model, and then zoo v2's, lived on one machine outside the repository and were lost with
it. From v8 on, the private model's directory (weights, tokenizer, card) and the private seed file
are committed as **one encrypted file** (``cryptography.fernet``: AES-128-CBC with an HMAC-SHA256
over the whole token, so a changed byte is refused, not decrypted into something else), with the
maintainers' key (``../shared/private/board.key`` from the repository root; never in the
repository, never printed, never bound into a policy's sandbox, which shows only the paths
``circuit_gym/leaderboard/sandbox.py`` lists).

File layout: a first line ``circuit-gym-sealed-private/1``, a second line of JSON (the header:
the key's id, the weights hash, the seed file's SHA-256 and the file names; all of it already
public in the board's results, never a seed or a weight), then the Fernet token of a tar archive
holding ``model/...``, ``seeds/<name>`` and ``manifest.json`` (the header again and every file's
SHA-256). The header is checked against the manifest once decrypted, so an edited header is
refused too. The key id (:func:`key_id`, a salted SHA-256 of the key, 16 hex digits) tells a
wrong key ("sealed with another key") from a changed file ("the file was changed").
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

FORMAT = "circuit-gym-sealed-private/1"
SEALED_SUFFIX = ".enc"
# Where the maintainers keep the key, relative to the repository root (../shared/private/README.md).
DEFAULT_KEY = Path("..") / "shared" / "private" / "board.key"


class CustodyError(ValueError):
    """A sealed private model that cannot be opened: wrong key, changed file, wrong format."""


def read_key(path: str | Path) -> bytes:
    """The Fernet key in ``path`` (32 url-safe base64 bytes); messages never show the key."""
    from cryptography.fernet import Fernet

    try:
        key = Path(path).read_bytes().strip()
    except OSError as err:
        raise CustodyError(f"cannot read the key file {path} ({type(err).__name__})") from None
    try:
        Fernet(key)
    except (ValueError, TypeError):
        raise CustodyError(
            f"key file {path} does not hold a Fernet key (32 url-safe base64-encoded bytes)"
        ) from None
    return key


def key_id(key: bytes) -> str:
    """A public name of ``key``: which key sealed a file, without revealing it."""
    return hashlib.sha256(b"circuit-gym board key id\0" + key).hexdigest()[:16]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def model_weights_hash(model_dir: Path) -> str:
    """The weights hash the board records for a private model in ``model_dir`` (as the scorer loads it)."""
    from circuit_gym.envs.pool import shared_model
    from circuit_gym.leaderboard.transfer_scorer import PRIVATE

    return shared_model(PRIVATE, str(model_dir)).circuit_gym_info.weights_hash


def _model_files(model_dir: Path) -> list[Path]:
    files = sorted(p for p in model_dir.rglob("*") if p.is_file())
    if not files:
        raise FileNotFoundError(f"private model directory {model_dir} holds no files")
    return files


def seal_private(model_dir: str | Path, seeds: str | Path, key_file: str | Path, out: str | Path,
                 weights_hash: Callable[[Path], str] = model_weights_hash) -> dict:  # fmt: skip
    """Encrypt the private model directory ``model_dir`` and the private seed file ``seeds`` into
    ``out`` with the key in ``key_file``; returns the header (what ``out``'s second line says).
    ``weights_hash`` names the model's weights (default: as the board records them)."""
    from cryptography.fernet import Fernet

    from circuit_gym.leaderboard.scoring import read_private_seeds

    model_dir, seeds, out = Path(model_dir), Path(seeds), Path(out)
    if not model_dir.is_dir():
        raise FileNotFoundError(f"private model directory {model_dir} does not exist")
    seed_sha = read_private_seeds(seeds)[1]  # a valid seed file, or a clear error (never the seeds)
    key = read_key(key_file)
    files = {f"model/{p.relative_to(model_dir).as_posix()}": p.read_bytes() for p in _model_files(model_dir)}
    files[f"seeds/{seeds.name}"] = seeds.read_bytes()
    header = {
        "format": FORMAT, "key_id": key_id(key), "weights_hash": weights_hash(model_dir),
        "seed_file_sha256": seed_sha, "seed_file": seeds.name,
        "model_files": sorted(name[len("model/"):] for name in files if name.startswith("model/")),
    }  # fmt: skip
    manifest = {"header": header, "sha256": {name: _sha256(data) for name, data in files.items()}}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in sorted(
            {**files, "manifest.json": json.dumps(manifest, sort_keys=True).encode()}.items()
        ):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o600, 0  # no machine's time or owner in the file
            tar.addfile(info, io.BytesIO(data))
    token = Fernet(key).encrypt(buffer.getvalue())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(
        FORMAT.encode() + b"\n" + json.dumps(header, sort_keys=True).encode() + b"\n" + token + b"\n"
    )
    return header


def read_header(path: str | Path) -> dict:
    """The public header of a sealed file (no key needed; checked against the manifest on opening)."""
    lines = Path(path).read_bytes().split(b"\n", 2)
    if len(lines) < 3 or lines[0] != FORMAT.encode():
        raise CustodyError(f"{path}: not a sealed private model ({FORMAT})")
    try:
        header = json.loads(lines[1])
    except ValueError:
        raise CustodyError(f"{path}: its header is not JSON; the file was changed") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CustodyError(f"{path}: its header is not a {FORMAT} header; the file was changed")
    return header


@dataclass(frozen=True)
class OpenedPrivate:
    """A sealed private model, decrypted: the model's directory and the seed file, both inside
    ``root`` (a 0700 temporary directory removed when the ``open_private`` block ends)."""

    root: Path
    model_dir: Path
    seeds: Path
    header: dict


def _safe_name(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or not path.parts or any(p in ("", ".", "..") for p in path.parts):
        raise CustodyError(f"a sealed file names {name!r}: not a plain relative path")
    return path


def _decrypt(path: Path, key_file: str | Path) -> tuple[dict, dict[str, bytes]]:
    from cryptography.fernet import Fernet, InvalidToken

    header = read_header(path)
    key = read_key(key_file)
    if header.get("key_id") != key_id(key):
        raise CustodyError(
            f"{path} was sealed with another key (key id {header.get('key_id')}, the key in {key_file}: "
            f"{key_id(key)}); use the maintainers' key"
        )
    token = path.read_bytes().split(b"\n", 2)[2].strip()
    try:
        data = Fernet(key).decrypt(token)
    except InvalidToken:
        raise CustodyError(
            f"{path}: the encrypted part fails its authentication: the file was changed"
        ) from None
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                raise CustodyError(f"{path}: holds {member.name!r}, not a regular file")
            handle = tar.extractfile(member)
            assert handle is not None
            files[str(_safe_name(member.name))] = handle.read()
    manifest = json.loads(files.pop("manifest.json", b"null"))
    if not isinstance(manifest, dict) or manifest.get("header") != header:
        raise CustodyError(f"{path}: its header does not match the sealed manifest: the file was changed")
    if manifest.get("sha256") != {name: _sha256(b) for name, b in files.items()}:
        raise CustodyError(f"{path}: a sealed file does not match its manifest's SHA-256")
    return header, files


@contextmanager
def open_private(path: str | Path, key_file: str | Path) -> Iterator[OpenedPrivate]:
    """Decrypt the sealed private model ``path`` with the key in ``key_file`` into a private
    temporary directory (0700, files 0600), yield it, and remove it afterwards, whatever happens."""
    header, files = _decrypt(Path(path), key_file)
    root = Path(tempfile.mkdtemp(prefix="circuit-gym-private-"))  # mode 0700: this user only
    try:
        os.chmod(root, 0o700)
        for name, data in files.items():
            target = root / name
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        yield OpenedPrivate(root, root / "model", root / "seeds" / header["seed_file"], header)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def is_sealed(path: str | Path | None) -> bool:
    """Whether ``path`` is a sealed private model file (not a model directory)."""
    if path is None or not Path(path).is_file():
        return False
    with open(path, "rb") as f:
        return f.read(len(FORMAT)) == FORMAT.encode()


SECRET_FORMAT = "circuit-gym-sealed-secret/1"


def seal_secret(secret: dict, what: str, key_file: str | Path, out: str | Path) -> dict:
    """Encrypt a small JSON secret (a private model's draw, before the model exists) into ``out``;
    the header names the key and says ``what`` it is, nothing of the secret. Returns the header."""
    from cryptography.fernet import Fernet

    key = read_key(key_file)
    header = {"format": SECRET_FORMAT, "key_id": key_id(key), "what": what}
    token = Fernet(key).encrypt(json.dumps({"header": header, "secret": secret}, sort_keys=True).encode())
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(
        SECRET_FORMAT.encode() + b"\n" + json.dumps(header, sort_keys=True).encode() + b"\n" + token + b"\n"
    )
    return header


def open_secret(path: str | Path, key_file: str | Path) -> dict:
    """The secret :func:`seal_secret` wrote to ``path``; a wrong key or a changed file is refused."""
    from cryptography.fernet import Fernet, InvalidToken

    lines = Path(path).read_bytes().split(b"\n")
    if len(lines) < 3 or lines[0] != SECRET_FORMAT.encode():
        raise CustodyError(f"{path} is not a sealed secret ({SECRET_FORMAT})")
    header = json.loads(lines[1])
    key = read_key(key_file)
    if header.get("key_id") != key_id(key):
        raise CustodyError(f"{path} was sealed with another key")
    try:
        body = json.loads(Fernet(key).decrypt(lines[2]))
    except InvalidToken:
        raise CustodyError(f"{path} was changed after sealing (its token does not verify)") from None
    if body["header"] != header:
        raise CustodyError(f"{path}'s header was changed after sealing")
    return body["secret"]
