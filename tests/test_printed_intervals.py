"""Every interval the code writes into text is rounded: no f-string shows a confidence interval
(a ``...ci...`` field, a list of floats) raw, as the transfer summary once printed
``[0.1620514348, 0.3966680509]``. A static check over the package and the scripts."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INTERVAL_KEY = re.compile(r"(^|_)ci(95)?(_|$)")


def _raw_intervals(source: str) -> list[int]:
    """Lines where an f-string shows ``x["...ci..."]`` (an interval) without a format spec."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FormattedValue) or node.format_spec is not None:
            continue
        value = node.value
        if (isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant)
                and isinstance(value.slice.value, str) and INTERVAL_KEY.search(value.slice.value)):  # fmt: skip
            out.append(node.lineno)
    return out


def test_no_f_string_shows_an_interval_unrounded():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted([*(ROOT / "circuit_gym").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")])
        for line in _raw_intervals(path.read_text())
    ]
    assert not offenders, (
        "intervals shown unrounded (format each bound, e.g. [{lo:.3f}, {hi:.3f}]):\n" + "\n".join(offenders)
    )


def test_the_check_catches_a_raw_interval():
    assert _raw_intervals("f\"{s['k1']['recovery_ci95']}, {row['ci95']}\"") == [1, 1]
    assert _raw_intervals("f\"{row['ci95'][0]:.3f} {s['recovery']} {x['cis']}\"") == []
