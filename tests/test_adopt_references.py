"""`circuit-gym leaderboard adopt-references` (circuit_gym/leaderboard/rescore.py): result files
scored already become reference entries without being played again.

The independent side is the committed manifest: ``rescore-references`` and ``adopt-references``
wrote the entries of the benchmark in force when its references were scored, so adopting its
committed result files into an empty manifest must give exactly those entries. The attacks come first: a forged file, a sample, a file outside its track's folder,
a name already taken, a checkpoint changed since scoring; each is refused and nothing is written.
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from circuit_gym.cli import main
from circuit_gym.leaderboard import tracks
from circuit_gym.leaderboard.provenance import REPO_ROOT, content_hash
from circuit_gym.leaderboard.references import as_entries, load_manifest, write_manifest
from circuit_gym.leaderboard.rescore import adopt_references

COMMITTED = load_manifest()
IN_FORCE = [t for t in COMMITTED if tracks.track(t).benchmark == tracks.IN_FORCE and COMMITTED[t]]


@pytest.fixture
def empty(tmp_path):
    return write_manifest({}, tmp_path / "references.json")


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A repository root whose docs/ are the checkout's (the checkpoints) and whose single-head
    track (the benchmark in force's) reads its results from its own folder (for forged files)."""
    repo = tmp_path / "repo"
    (repo / "leaderboard/results/v8").mkdir(parents=True)
    (repo / "docs").symlink_to(REPO_ROOT / "docs")
    row = tracks.track("v8-single-head")
    monkeypatch.setitem(
        tracks.TRACKS, row.name, dataclasses.replace(row, results_dir=repo / "leaderboard/results/v8")
    )
    return repo


@pytest.fixture
def folder(root):
    return root / "leaderboard/results/v8"


def _copy(name: str, folder, change=None, rehash: bool = False):
    """the committed single-head result of the benchmark in force, ``name`` copied into ``folder``, ``change``d, its content
    hash recomputed when ``rehash`` (a forger who knows the public hash function)."""
    result = json.loads((REPO_ROOT / "leaderboard/results/v8" / f"{name}.json").read_text())
    if change is not None:
        change(result)
    if rehash:
        result["content_hash"] = content_hash(result)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(result))
    return path


def test_adopting_the_committed_results_in_force_gives_the_manifest_rescore_references_wrote(empty):
    paths = [COMMITTED[t][n].result_path() for t in IN_FORCE for n in COMMITTED[t]]
    lines = adopt_references(paths, empty)
    assert len(lines) == len(paths) > 20
    adopted = as_entries(load_manifest(empty))
    committed = as_entries(COMMITTED)
    for t in IN_FORCE:
        assert adopted[t] == committed[t], t


def test_forged_sampled_misplaced_or_retaken_results_are_refused_and_nothing_is_written(
    empty, root, folder, tmp_path
):
    before = empty.read_bytes()
    genuine = _copy("random", folder)

    def edit(result):
        result["scores"]["compute"]["episodes"] += 1

    forged = _copy("greedy", folder, edit)
    with pytest.raises(ValueError, match="content hash mismatch"):
        adopt_references([genuine, forged], empty, root)
    sample = _copy("greedy", folder, lambda r: r.update(status="sample"), rehash=True)
    with pytest.raises(ValueError, match="status 'sample'"):
        adopt_references([genuine, sample], empty, root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    misplaced = shutil.copy(genuine, elsewhere / "random.json")
    with pytest.raises(ValueError, match="lies in its track's folder"):
        adopt_references([misplaced], empty, root)
    assert empty.read_bytes() == before  # every refusal above wrote nothing
    with pytest.raises(ValueError, match="already has a reference 'random'"):
        adopt_references([genuine], _taken(tmp_path), root)
    assert adopt_references([genuine], empty, root) == [
        "v8-single-head/random: leaderboard/results/v8/random.json"
    ]


def _taken(tmp_path):
    """A manifest that already lists the single-head references in force."""
    return write_manifest(as_entries(COMMITTED), tmp_path / "taken.json")


def test_a_checkpoint_changed_since_scoring_is_refused(empty, root, folder):
    def other_digest(result):
        result["provenance"]["checkpoint_digest"] = "0" * 64

    stale = _copy("ppo", folder, other_digest, rehash=True)
    with pytest.raises(ValueError, match="changed since it was scored"):
        adopt_references([stale], empty, root)


def test_the_command_line_refuses_with_exit_2(folder, capsys):
    forged = _copy("greedy", folder, lambda r: r.update(name="greedy2"))
    assert main(["leaderboard", "adopt-references", str(forged)]) == 2
    assert "nothing written" in capsys.readouterr().err
