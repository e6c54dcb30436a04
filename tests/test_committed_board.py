"""The shipped board, checked against this checkout.

In its own module: tests/test_leaderboard.py patches the benchmark definition with
module-scoped fixtures, which would still be active here.
"""

from pathlib import Path

import pytest

import circuit_gym
from circuit_gym import benchmark as B
from circuit_gym.leaderboard.board import board_files, collect, track
from circuit_gym.leaderboard.edge_benchmark import EDGE_TRACKS, edge_benchmark
from circuit_gym.leaderboard.knockout_benchmark import KNOCKOUT_BENCHMARKS
from circuit_gym.leaderboard.planted_scorer import PLANTED_BENCHMARKS, planted_benchmark
from circuit_gym.leaderboard.references import load_manifest
from circuit_gym.leaderboard.tracks import TRACKS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("version", [circuit_gym.__version__, "99.0.0"])
def test_every_committed_result_is_a_current_reference_of_the_manifest(monkeypatch, version):
    """The shipped result files (the folder of every track of the table) are exactly the
    manifest's references, each current (scorer protocol, benchmark definition, the public
    models' weights) and recognised (reviewed scores digest, checkpoint digest as in this
    checkout), under this package version and under a bumped one (the version is provenance
    only). New reference weights or a benchmark change without rescoring fail here."""
    monkeypatch.setattr(circuit_gym, "__version__", version)
    manifest = load_manifest()
    paths = board_files()  # every track's folder (circuit_gym/leaderboard/tracks.py)
    entries, refused, failed = collect(paths, references=manifest)
    assert not refused and not failed
    recognised = {(track(e), e["board"]["reference"]) for e in entries}
    assert recognised == {(t, name) for t, refs in manifest.items() for name in refs}
    assert {p.relative_to(ROOT).as_posix() for p in paths} == {
        r.result for refs in manifest.values() for r in refs.values()
    }
    transfer_tracks = {
        b.track(k): (b, k) for b in B.TRANSFER_BENCHMARKS.values() for k in (B.SINGLE_HEAD, B.CIRCUIT)
    }
    for entry in entries:  # verified boards carry private scores
        t = track(entry)
        if t in PLANTED_BENCHMARKS:  # secret models drawn from the private seed file
            assert entry["private"]["n_models"] == planted_benchmark(t).private_models
        elif t in transfer_tracks:  # ranked on its version's private model: its weights recorded
            bench, kind = transfer_tracks[t]
            private = entry["private"]
            assert private["n_seeds"] == bench.n_private_seeds(kind)
            models = private.get("private_models") or [private]  # from v8 on, each private model's record
            assert len(models) == bench.private_models
            for model in models:
                assert len(model["weights_hash"]) == 16 and len(model["tasks"]) >= 2
                assert set(model["tasks"]) <= set(bench.held_out_tasks)
        elif t in EDGE_TRACKS:  # both parts, or the public one alone (no seed file)
            bench = edge_benchmark(t)
            assert "private" not in entry or entry["private"]["n_models"] == bench.planted_private_models
        elif t in KNOCKOUT_BENCHMARKS:  # the secret planted models, and each private model's verified tasks
            bench = B.transfer_benchmark(TRACKS[t].benchmark)
            models = entry["private"]["private_models"]
            assert len(models) == bench.private_models
            assert all(
                len(m["weights_hash"]) == 16 and set(m["tasks"]) <= set(bench.all_tasks()) for m in models
            )
        else:
            raise AssertionError(f"{t}: a track this test does not know")


def test_no_committed_result_names_a_machines_path(tmp_path):
    """Committed results record a checkpoint inside the repository relative to it (the scorer's
    ``shown_checkpoint``); one outside it (a user's own folder) stays as given."""
    import json

    from circuit_gym.leaderboard.provenance import REPO_ROOT, shown_checkpoint

    absolute = [str(p.relative_to(ROOT)) for p in board_files()
                if Path(json.loads(p.read_text())["provenance"].get("checkpoint") or ".").is_absolute()]  # fmt: skip
    assert absolute == []
    assert shown_checkpoint(REPO_ROOT / "docs" / "x") == str(Path("docs") / "x")
    assert shown_checkpoint(tmp_path / "mine") == str(tmp_path / "mine") and shown_checkpoint(None) is None
