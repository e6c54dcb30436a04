"""Smoke test of the embedded model's training script (a few steps on a stdlib subset)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from circuit_gym.models import load_model

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_training_script_runs_and_its_checkpoint_loads(tmp_path):
    out = tmp_path / "toy"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "train_toy_model.py"), "--out", str(out), "--steps", "3",
         "--eval-every", "3", "--smoke"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = json.loads((out / "training_log.json").read_text())
    assert log["log"][-1]["step"] == 3 and log["fillers_added_by_hand"] == []
    model = load_model("toy", path=out)
    assert (model.cfg.n_layers, model.cfg.n_heads) == (4, 4)
    # continuing from the checkpoint (the focus phase of the recipe) works too
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "train_toy_model.py"), "--out", str(tmp_path / "next"), "--steps",
         "2", "--eval-every", "2", "--smoke", "--init-from", str(out), "--phase2-mix", "ioi1=0.5,docstring1=0.5"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(json.loads((tmp_path / "next" / "training_log.json").read_text())["history"]) == 1
