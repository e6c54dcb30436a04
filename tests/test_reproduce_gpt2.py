import json
import subprocess
import sys
from pathlib import Path

import pytest

from circuit_gym.published import GPT2_IOI_HEADS, head_id, published_sets

ROOT = Path(__file__).resolve().parents[1]


def test_published_heads():
    assert head_id("9.9") == 117 and head_id("0.1") == 1
    sets = published_sets()
    assert len(sets["ioi"]) == sum(len(v) for v in GPT2_IOI_HEADS.values())
    assert all(0 <= h < 144 for s in sets.values() for h in s)


@pytest.mark.slow
def test_reproduction_script_wiring_on_a_random_gpt2(random_gpt2_dir, tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "CIRCUIT_GYM_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "reproduce_gpt2.py"), "--tiny", "--out", str(tmp_path / "out"),
         "--model-path", str(random_gpt2_dir)],
        capture_output=True, text=True, env=env, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "published_comparison.json").read_text())
    assert set(report) == {"ioi", "induction"} and len(report["ioi"]["policy_top"]) == 10
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["n_heads_total"] == 144
