"""The installed package holds every subpackage: setuptools finds the packages itself
(``[tool.setuptools.packages.find]``), which misses a folder of modules without ``__init__.py``;
a wheel install would then lack it while the editable checkout still works. No folder is mapped
onto another package name (issue 40: no alias modules)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]


def test_setuptools_finds_every_folder_of_modules_and_maps_none():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in config and set(config["packages"]) == {"find"}, (
        "packages are found, not listed"
    )
    found = set(find_packages(str(ROOT), include=config["packages"]["find"]["include"]))
    with_modules = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "circuit_gym").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert with_modules <= found, f"folders of modules setuptools misses: {sorted(with_modules - found)}"
    assert {"circuit_gym.baselines", "circuit_gym.leaderboard"} <= found


def test_every_shipped_models_files_are_package_data():
    """Every embedded model directory (zoo members sit one level deeper) matches a package-data glob."""
    from fnmatch import fnmatch

    from circuit_gym.embedded import EMBEDDED_PATHS

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "circuit_gym"
    ]
    for folder in EMBEDDED_PATHS.values():
        assert any(fnmatch(f"models/{folder}/model.safetensors", g) for g in globs), folder
