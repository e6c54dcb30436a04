"""The installed package holds every subpackage: setuptools' ``packages`` list is written by hand
(baselines/ and leaderboard/ install under circuit_gym's namespace), so a new folder must be added
to it, or a wheel install lacks it while the editable checkout still works."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_in_pyprojects_packages_list():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = {name: ROOT / folder for name, folder in config["package-dir"].items()}
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "circuit_gym").rglob("__init__.py")}
    for name, folder in mapped.items():
        found |= {".".join((name, *p.parent.relative_to(folder).parts)) for p in folder.rglob("__init__.py")}
    assert found == listed, (
        f"missing from pyproject: {sorted(found - listed)}; listed but absent: {sorted(listed - found)}"
    )


def test_every_shipped_models_files_are_package_data():
    """Every embedded model directory (zoo members sit one level deeper) matches a package-data glob."""
    from fnmatch import fnmatch

    from circuit_gym.embedded import EMBEDDED_PATHS

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "circuit_gym"
    ]
    for folder in EMBEDDED_PATHS.values():
        assert any(fnmatch(f"models/{folder}/model.safetensors", g) for g in globs), folder
