"""``circuit-gym doctor`` sees every model the package ships, where the loaders read it."""

from __future__ import annotations

import hashlib
from pathlib import Path

from circuit_gym.doctor import report

PACKAGE = Path(__file__).resolve().parents[1] / "circuit_gym"


def test_doctor_finds_every_shipped_model_with_its_weights():
    """Every model.safetensors in the package (found here by a file search, not the registry)
    is reported under one model with its SHA-256, and no model is reported without weights
    (the zoo once read as missing: doctor looked in models/NAME, the zoo lives in models/zoo/NAME)."""
    shipped = {p.parent.resolve(): p for p in PACKAGE.glob("models/**/model.safetensors")}
    models = report()["embedded_models"]
    assert {Path(m["directory"]).resolve() for m in models.values()} == set(shipped)
    assert any(d.parent.name == "zoo" for d in shipped)  # the zoo is among them
    for name, m in models.items():
        weights = shipped[Path(m["directory"]).resolve()]
        assert m["weights_sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest(), name
        assert m["files"]["model.safetensors"] == weights.stat().st_size, name
