"""Custody of the private model (issue 58, item 4): sealed with a key, opened into a private
temporary directory. Every test uses a key generated here, never the maintainers' own."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from circuit_gym.leaderboard import custody
from circuit_gym.leaderboard.custody import CustodyError, open_private, seal_private
from circuit_gym.models.loading import embedded_dir

SEEDS = "# maintainers only\n912345677\n887766551\n"


@pytest.fixture
def sealed(tmp_path):
    """The packaged 4 x 4 model's directory and a seed file, sealed with a fresh key."""
    key = tmp_path / "keys" / "board.key"
    key.parent.mkdir()
    key.write_bytes(Fernet.generate_key())
    seeds = tmp_path / "secure" / "private_seeds.txt"
    seeds.parent.mkdir()
    seeds.write_text(SEEDS)
    out = tmp_path / "committed" / "private_model.enc"
    header = seal_private(embedded_dir("tiny"), seeds, key, out)
    return {"key": key, "seeds": seeds, "out": out, "header": header, "model": embedded_dir("tiny")}


def test_a_sealed_model_opens_to_the_same_bytes_and_weights(sealed):
    model = sealed["model"]
    with open_private(sealed["out"], sealed["key"]) as opened:
        files = {p.relative_to(opened.model_dir).as_posix(): p.read_bytes()
                 for p in opened.model_dir.rglob("*") if p.is_file()}  # fmt: skip
        assert files == {
            p.relative_to(model).as_posix(): p.read_bytes() for p in model.rglob("*") if p.is_file()
        }
        assert opened.seeds.read_text() == SEEDS
        # the weights hash of the opened model, loaded as the scorer loads it, is the original's
        # (computed here by the models' own hash on a fresh load of the packaged directory)
        from circuit_gym.models.loading import load_model, weights_hash

        original = weights_hash(load_model("tiny"))
        assert custody.model_weights_hash(opened.model_dir) == original == sealed["header"]["weights_hash"]
        assert sealed["header"]["seed_file_sha256"] == hashlib.sha256(SEEDS.encode()).hexdigest()
        root = opened.root
    assert not root.exists()  # removed when the block ends


def test_the_sealed_file_holds_neither_weights_nor_seeds_in_plain_text(sealed):
    data = sealed["out"].read_bytes()
    assert b"912345677" not in data and b"887766551" not in data
    weights = (sealed["model"] / "model.safetensors").read_bytes()
    assert weights[1000:1064] not in data  # a stretch of the weights
    assert sealed["key"].read_bytes() not in data


def test_the_opened_directory_is_readable_by_its_owner_only(sealed):
    with open_private(sealed["out"], sealed["key"]) as opened:
        for path in [opened.root, *opened.root.rglob("*")]:
            mode = stat.S_IMODE(path.stat().st_mode)
            assert mode & 0o077 == 0, f"{path}: mode {oct(mode)}"


def test_a_wrong_key_is_refused_clearly_and_never_shown(sealed, tmp_path):
    other = tmp_path / "other.key"
    other.write_bytes(Fernet.generate_key())
    with (
        pytest.raises(CustodyError, match="sealed with another key") as err,
        open_private(sealed["out"], other),
    ):
        pass
    assert other.read_bytes().decode() not in str(err.value)
    assert sealed["key"].read_bytes().decode() not in str(err.value)
    not_a_key = tmp_path / "garbage.key"
    not_a_key.write_text("hunter2")
    with (
        pytest.raises(CustodyError, match="does not hold a Fernet key") as err,
        open_private(sealed["out"], not_a_key),
    ):
        pass
    assert "hunter2" not in str(err.value)


@pytest.mark.parametrize("where", ["token", "header"])
def test_a_changed_file_is_refused(sealed, where):
    fmt, header, token = sealed["out"].read_bytes().split(b"\n", 2)
    if where == "token":
        i = len(token) // 2
        token = token[:i] + (b"A" if token[i : i + 1] != b"A" else b"B") + token[i + 1 :]
        match = "fails its authentication"
    else:  # another weights hash in the public header: what the board would be checked against
        h = json.loads(header)
        h["weights_hash"] = "0" * 16
        header = json.dumps(h, sort_keys=True).encode()
        match = "does not match the sealed manifest"
    sealed["out"].write_bytes(b"\n".join([fmt, header, token]))
    with pytest.raises(CustodyError, match=match), open_private(sealed["out"], sealed["key"]):
        pass


def test_the_cli_seals_a_private_model_without_printing_the_key(sealed, tmp_path, capsys):
    from circuit_gym.cli import main

    out = tmp_path / "v8_private.enc"
    argv = ["leaderboard", "seal-private", "--model", str(sealed["model"]), "--seeds", str(sealed["seeds"]),
            "--key", str(sealed["key"]), "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert sealed["key"].read_bytes().decode() not in printed.out + printed.err
    assert "912345677" not in printed.out + printed.err
    assert sealed["header"]["weights_hash"] in printed.out
    assert custody.read_header(out)["weights_hash"] == sealed["header"]["weights_hash"]
    assert custody.is_sealed(out) and not custody.is_sealed(sealed["model"])


def test_the_default_key_path_is_outside_the_repository():
    from circuit_gym.leaderboard.paths import REPO_ROOT

    key = (REPO_ROOT / custody.DEFAULT_KEY).resolve()
    assert not key.is_relative_to(REPO_ROOT.resolve())
    assert Path(custody.DEFAULT_KEY).as_posix() == "../shared/private/board.key"
