"""Package metadata users of RL benchmarks expect: CITATION.cff, py.typed in the wheel, doctor."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import jsonschema
import pytest
import yaml

import circuit_gym
from circuit_gym.cli import main

ROOT = Path(__file__).resolve().parents[1]
# The Citation File Format's schema 1.2.0 (citation-file-format.github.io/1.2.0/schema.json,
# CC-BY-4.0), as shipped in cffconvert 2.0.0's wheel.
CFF_SCHEMA = Path(__file__).parent / "data" / "citation-file-format-1.2.0.schema.json"


def _cff_errors(document: dict) -> list[str]:
    schema = json.loads(CFF_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def test_citation_cff_is_valid_and_names_this_version():
    document = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert _cff_errors(document) == []
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert document["version"] == version == circuit_gym.__version__


@pytest.mark.parametrize("break_it", [lambda d: d.pop("authors"), lambda d: d.update({"cff-version": "9"}),
                                      lambda d: d.update({"authors": [{"nickname": 3}]})])  # fmt: skip
def test_the_schema_check_rejects_a_broken_citation(break_it):
    document = copy.deepcopy(yaml.safe_load((ROOT / "CITATION.cff").read_text()))
    break_it(document)
    assert _cff_errors(document)


@pytest.mark.slow  # builds the wheel (about half a minute)
def test_the_wheel_ships_py_typed_the_models_and_the_leaderboard_page(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "results", "radar")
    shutil.copytree(ROOT / "circuit_gym", source / "circuit_gym", ignore=ignore)  # the one package
    shutil.copy(
        ROOT / "circuit_gym/models/toy/oracle_heads.png", source / "circuit_gym/models/toy/oracle_heads.png"
    )
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "-w", str(tmp_path / "dist"), str(source)], check=True, cwd=tmp_path)  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("circuit_gym-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "circuit_gym/py.typed" in names
    assert (
        "circuit_gym/leaderboard/html_page.py" in names
        and "circuit_gym/models/toy/model.safetensors" in names
    )


def test_doctor_prints_versions_device_models_and_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "sweep-0.json").write_text("{}")
    assert main(["doctor", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["circuit_gym"]["version"] == circuit_gym.__version__
    assert r["dependencies"]["torch"] == metadata.version("torch")
    assert r["dependencies"]["gymnasium"] == metadata.version("gymnasium")
    assert r["cache"] == {"directory": str(tmp_path / "cache"), "exists": True, "files": 1, "bytes": 2}
    assert r["device"]["cuda_available"] in (True, False) and r["device"]["cpu_count"] >= 1
    tiny = ROOT / "circuit_gym" / "models" / "tiny" / "model.safetensors"
    assert r["embedded_models"]["tiny"]["weights_sha256"] == hashlib.sha256(tiny.read_bytes()).hexdigest()
    assert r["embedded_models"]["tiny"]["files"]["model.safetensors"] == tiny.stat().st_size
    assert main(["doctor"]) == 0
    text = capsys.readouterr().out
    assert f"cache: {tmp_path / 'cache'} (1 files" in text and f"torch {metadata.version('torch')}" in text
    assert "tiny: " in text and "CIRCUIT_GYM_CACHE=" in text
