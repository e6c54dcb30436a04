"""The package's layers import downwards only (checked on the source, not by importing it).

Layers, bottom first: ``embedded`` / ``planning`` / ``stats`` / ``policy`` (import nothing of the
package's upper layers) < ``tasks`` < ``models`` and ``ablation`` < ``evaluation`` < ``envs``.
A module importing from a layer above it is a cycle waiting to happen (issue: evaluation
imported envs/planning while the environments import evaluation; tasks/reference imported
models/loading).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "circuit_gym"

# module (file or folder under circuit_gym/) -> package prefixes it must not import
FORBIDDEN = {
    "embedded.py": ("circuit_gym.",),
    "planning.py": ("circuit_gym.",),
    "stats.py": ("circuit_gym.",),
    "tasks": ("circuit_gym.models", "circuit_gym.ablation", "circuit_gym.envs", "circuit_gym.evaluation"),
    "models": ("circuit_gym.ablation", "circuit_gym.envs", "circuit_gym.evaluation"),
    "ablation": ("circuit_gym.envs", "circuit_gym.evaluation"),
    "evaluation.py": ("circuit_gym.envs",),
}


def imported_modules(path: Path) -> set[str]:
    """Every module an ``import`` or ``from ... import`` in ``path`` names (absolute imports)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_the_import_scanner_sees_function_level_imports(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from circuit_gym.models.loading import is_embedded\n")
    assert "circuit_gym.models.loading" in imported_modules(src)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_module_imports_from_a_layer_above_it(layer):
    target = PACKAGE / layer
    files = [target] if target.is_file() else sorted(target.rglob("*.py"))
    assert files, f"{layer} not found"
    offences = [
        f"{f.relative_to(PACKAGE)} imports {name}"
        for f in files
        for name in sorted(imported_modules(f))
        if name.startswith(FORBIDDEN[layer])
    ]
    assert not offences, offences
