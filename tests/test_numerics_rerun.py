"""CI reruns the numerically sensitive tests as another CPU would round (issue 47): `make test`
(what .ci/run runs) ends with the `numerics` tests under torch's portable kernels and one thread."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")


@pytest.mark.skipif(MAKE is None, reason="needs GNU make")
def test_make_test_reruns_the_numerics_tests_under_portable_kernels(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "VENV")}
    done = subprocess.run([MAKE, "-n", "-B", "test", f"VENV={tmp_path}/venv"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    lines = done.stdout.splitlines()
    suite = next(i for i, line in enumerate(lines) if '/venv/bin/python -m pytest -q -m "not slow"' in line)
    rerun = [line for line in lines[suite + 1 :] if line.endswith("-m pytest -q -m numerics")]
    assert len(rerun) == 1 and "ATEN_CPU_CAPABILITY=default" in rerun[0].split()


def test_the_numerics_marker_is_registered_and_used():
    import tomllib

    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("numerics:") for m in markers)
    assert (ROOT / "tests" / "test_ppo_trainer.py").read_text().count("@pytest.mark.numerics") == 4


def test_a_result_records_its_numeric_platform_which_decides_nothing(tiny_model):
    """Where a result was scored (CPU, torch's kernel set and threads, library versions) is in its
    provenance, so a rescore elsewhere can be told apart (docs/leaderboard.md, "Scores on another
    CPU"); a different platform leaves the entry current."""
    import torch

    from circuit_gym.leaderboard.protocol import PROVENANCE_ONLY, stale_reason
    from circuit_gym.leaderboard.provenance import make_provenance
    from circuit_gym.machine import numeric_platform

    definition = {"benchmark_version": "test"}
    prov = make_provenance(definition, tiny_model, "builtin:random", None, "0" * 16, white_box=False)
    platform = prov["platform"]
    assert platform == numeric_platform() and "platform" in PROVENANCE_ONLY
    assert platform["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert platform["torch"] == torch.__version__ and platform["cpu"]
    elsewhere = {**prov, "platform": {**platform, "cpu": "another CPU", "torch_cpu_capability": "DEFAULT"}}
    assert stale_reason(elsewhere, definition) is None
