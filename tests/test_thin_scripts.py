"""Scripts only parse options and call the package (issue 40): no test and no other script loads a
file from scripts/ as a module, so what the tests check is the package's code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Loading a script as a module: importlib on its file, or scripts/ put on sys.path to import it.
LOADS_A_SCRIPT = re.compile(r"(spec_from_file_location|sys\.path\.insert)\([^;]{0,120}?script", re.IGNORECASE)


def test_the_pattern_sees_both_ways_of_loading_a_script():
    assert LOADS_A_SCRIPT.search('spec_from_file_location("x", ROOT / "scripts" / "x.py")')
    assert LOADS_A_SCRIPT.search('sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))')
    assert LOADS_A_SCRIPT.search('spec_from_file_location("train_toy_model", SCRIPT)')
    assert LOADS_A_SCRIPT.search("sys.path.insert(0, str(TRAIN_SCRIPT.parent))")
    assert LOADS_A_SCRIPT.search(
        'spec_from_file_location(\n    "gen_docs_numbers", ROOT / "scripts" / "gen_docs_numbers.py"\n)'
    )
    assert not LOADS_A_SCRIPT.search("sys.path.insert(0, str(Path(__file__).resolve().parents[1]))")


def test_no_test_or_script_loads_a_script_as_a_module():
    files = sorted((ROOT / "tests").glob("*.py")) + sorted((ROOT / "scripts").glob("*.py"))
    here = Path(__file__).resolve()
    offenders = [
        str(f.relative_to(ROOT))
        for f in files
        if f.resolve() != here and LOADS_A_SCRIPT.search(f.read_text())
    ]
    assert not offenders, f"load the package module instead: {offenders}"
