"""scripts/knockout_report.py --sealed: the maintainers' knock-out measurement on a sealed private
model and secret planted models (issue 60). It must measure the sealed weights exactly as the
public path (``--zoo``) measures the same weights, write only aggregates (no seed, head order or
per-model row), and leave nothing in the disk cache. The sealed model here is the public zoo9
sealed with a key made for the test, never the maintainers' model or key. The script is run as a
user runs it, in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet

from circuit_gym.leaderboard.custody import seal_private
from circuit_gym.leaderboard.paths import REPO_ROOT
from circuit_gym.models.loading import embedded_dir

TASK = "successor"  # zoo9's recorded pair meets the bar there (docs/zoo.md)
REFERENCES = ["attribution", "conditional_attribution"]
PRIVATE_KIND = "private_model"  # the script's key of the sealed model's pooled rows


def _run(args: list[str], cache) -> None:
    env = {**os.environ, "CIRCUIT_GYM_CACHE": str(cache), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "knockout_report.py"), *args], env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_sealed_measurement_matches_the_public_path_and_keeps_only_aggregates(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    key = tmp_path / "board.key"
    key.write_bytes(Fernet.generate_key())
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("424242\n")
    sealed = tmp_path / "private.enc"
    seal_private(embedded_dir("zoo9"), seeds, key, sealed)
    out = tmp_path / "out.json"
    _run(["--sealed", str(sealed), "--key", str(key), "--tasks", TASK, "--secret-planted", "1", "--kinds",
          "self_repair", "--references", *REFERENCES, "--no-greedy", "--json", str(out)], cache)  # fmt: skip
    text = out.read_text()
    assert '"order"' not in text and '"seed"' not in text and "424242" not in text
    cells = {(c["kind"], c["reference"]): c for c in json.loads(text)["cells"]}
    assert set(cells) == {(kind, r) for kind in (PRIVATE_KIND, "self_repair") for r in REFERENCES}
    assert all(c["models"] == 1 for c in cells.values())
    assert not any(cache.rglob("*")), "the sealed or secret models' tables reached the disk cache"
    # the public path on the same weights (zoo9 by name): the same truth scores and area
    public_out = tmp_path / "public.json"
    _run(
        [
            "--zoo",
            "zoo9",
            "--tasks",
            TASK,
            "--references",
            *REFERENCES,
            "--no-greedy",
            "--json",
            str(public_out),
        ],
        cache,
    )
    public = {r["reference"]: r for r in json.loads(public_out.read_text())}
    for name in REFERENCES:
        got = cells[(PRIVATE_KIND, name)]
        for metric in ("backup_recall", "recall", "auc"):
            assert got[metric]["mean"] == pytest.approx(public[name][metric], abs=1e-9), (name, metric)
        assert got["area"]["mean"] == pytest.approx(public[name]["area"], rel=1e-4)
    # conditional attribution finds the backup that static attribution misses on this pair (zoo9's card:
    # attribution ranks Q 141st); a swapped or broken truth would not give this split
    assert cells[(PRIVATE_KIND, "conditional_attribution")]["backup_recall"]["mean"] == 1.0
    assert cells[(PRIVATE_KIND, "attribution")]["backup_recall"]["mean"] == 0.0
