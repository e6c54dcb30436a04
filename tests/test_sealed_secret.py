"""A small secret (a private model's draw, kept before the model exists) sealed with the board key:
it round-trips, the file never shows it, and a wrong key or a changed byte is refused."""

from __future__ import annotations

import json

import pytest
from cryptography.fernet import Fernet

from circuit_gym.leaderboard.custody import CustodyError, open_secret, seal_secret


@pytest.fixture
def key(tmp_path):
    path = tmp_path / "board.key"
    path.write_bytes(Fernet.generate_key())
    return path


def test_a_sealed_draw_opens_to_itself_and_its_file_never_shows_it(key, tmp_path):
    secret = {"seed": 1_234_567_891}
    out = tmp_path / "draw.enc"
    header = seal_secret(secret, "zoo v3 private draw a", key, out)
    assert open_secret(out, key) == secret
    raw = out.read_bytes()
    assert b"1234567891" not in raw and b"seed" not in raw
    assert json.loads(raw.split(b"\n")[1]) == header and "seed" not in header


def test_a_wrong_key_and_a_changed_byte_are_refused(key, tmp_path):
    out = tmp_path / "draw.enc"
    seal_secret({"seed": 7}, "draw", key, out)
    other = tmp_path / "other.key"
    other.write_bytes(Fernet.generate_key())
    with pytest.raises(CustodyError, match="another key"):
        open_secret(out, other)
    lines = out.read_bytes().split(b"\n")
    token = bytearray(lines[2])
    token[40] = ord("A") if token[40] != ord("A") else ord("B")
    out.write_bytes(b"\n".join([lines[0], lines[1], bytes(token), b""]))
    with pytest.raises(CustodyError, match="changed"):
        open_secret(out, key)
    forged = json.loads(lines[1])
    forged["what"] = "something else"
    out.write_bytes(b"\n".join([lines[0], json.dumps(forged, sort_keys=True).encode(), lines[2], b""]))
    with pytest.raises(CustodyError, match="header was changed"):
        open_secret(out, key)
