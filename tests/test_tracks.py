"""The table of tracks (circuit_gym/leaderboard/tracks.py): every board track is a row, and the
command line, the canary, rescore-references and render --rescore all score through the row's
scorer (``tracks.score_reference``), with the request the reference or the entry records.

Each row's scorer is replaced by a recorder that answers with the committed result, so these
tests play no episode: they check the wiring, and the committed files check the rest.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from circuit_gym import benchmark as B
from circuit_gym.cli import main
from circuit_gym.leaderboard import tracks
from circuit_gym.leaderboard.canary import canary
from circuit_gym.leaderboard.references import TRACKS, load_manifest
from circuit_gym.leaderboard.rescore import _score
from circuit_gym.leaderboard.verification import rescore_matches

MANIFEST = load_manifest()


# Tracks with references in the manifest: every track of a benchmark the board ranks or shows
# (a version being built has none yet: checked below).
SCORED = tuple(t for t in TRACKS if MANIFEST[t])


def _has_results(version: str) -> bool:
    return any(any(row.results_dir.glob("*.json")) for row in tracks.BENCHMARKS[version].tracks())


def test_every_track_of_a_benchmark_the_board_shows_has_references():
    """The version in force, and a version scored but not in force (the board shows its sections),
    has references on every track; a version being built (no result yet) is not ranking and has none."""
    shown = {b for b in tracks.BENCHMARKS if b == tracks.IN_FORCE or _has_results(b)}
    missing = [t for t in TRACKS if tracks.track(t).benchmark in shown and not MANIFEST[t]]
    assert missing == []
    for version in set(tracks.BENCHMARKS) - shown:
        assert tracks.BENCHMARKS[version].not_ranking, (
            version
        )  # being built: the board says why it does not rank
        assert not any(MANIFEST[t.name] for t in tracks.BENCHMARKS[version].tracks())


def test_a_version_is_one_row_whose_tracks_follow_from_its_rows():
    """Each row of BENCHMARKS gives its four tracks (single head, circuit, Planted, edges), named
    after its transfer row, and from v8 on its knock-out track, with the folders its rows name; the
    in-force one's are the default."""
    for version, bench in tracks.BENCHMARKS.items():
        names = [t.name for t in bench.tracks()]
        kinds = (B.SINGLE_HEAD, B.CIRCUIT, B.PLANTED)
        knockout = [] if bench.knockout is None else [bench.knockout]
        assert names == [*(bench.transfer.track(k) for k in kinds), bench.edges.track, *knockout]
        assert all(tracks.TRACKS[n].benchmark == version for n in names)
        assert bench.edges.version == bench.transfer.version == version
    assert tracks.BENCHMARKS[tracks.IN_FORCE].transfer.track(B.SINGLE_HEAD) == tracks.DEFAULT_TRACK


def _first_reference(track: str):
    return next(iter(MANIFEST[track].values()))


@pytest.fixture
def recorded(monkeypatch):
    """Every row's scorer replaced: it records (track, name, request) and returns the committed
    result of the reference of that name (as a sample when asked for one)."""
    calls = []

    def recorder(track_name):
        def score(name, request):
            calls.append((track_name, name, request))
            committed = json.loads(MANIFEST[track_name][name].result_path().read_text())
            if request.sample is not None:
                return {**committed, "status": "sample",
                        "scores": {"episodes": committed["scores"]["episodes"][: request.sample]}}  # fmt: skip
            return committed

        return score

    for name, row in tracks.TRACKS.items():
        monkeypatch.setitem(tracks.TRACKS, name, dataclasses.replace(row, score=recorder(name)))
    return calls


def test_every_board_track_is_a_row_with_its_own_folder_definition_and_references():
    assert tuple(tracks.TRACKS) == TRACKS and B.transfer_benchmark(B.IN_FORCE).track(B.PLANTED) in TRACKS
    folders = [row.results_dir for row in tracks.TRACKS.values()]
    assert len(set(folders)) == len(folders)
    for name, row in tracks.TRACKS.items():
        assert row.benchmark in tracks.BENCHMARKS and row.builtins() and row.canary_episodes >= 1
        assert row.cost.cold_s is None or row.cost.cold_s >= row.cost.warm_s > 0
        for reference in MANIFEST[name].values():  # the references of a row live in its folder
            assert reference.result_path().parent == row.results_dir
            provenance = json.loads(reference.result_path().read_text())["provenance"]
            assert {k: provenance.get(k) for k in row.definition()} == row.definition()
    assert B.transfer_benchmark(B.IN_FORCE).track(B.SINGLE_HEAD) == tracks.DEFAULT_TRACK
    assert not tracks.not_ranking(tracks.DEFAULT_TRACK)
    for name in tracks.REMOVED:  # a track that left the tree is refused, naming the version in force
        with pytest.raises(
            ValueError, match=rf"track '{name}' .* is retired: the board ranks on benchmark {B.IN_FORCE}"
        ):
            tracks.track(name)


@pytest.mark.parametrize("track", SCORED)
def test_the_canary_and_both_rescores_go_through_the_rows_scorer_with_the_references_request(recorded, track):
    reference = _first_reference(track)
    row = tracks.TRACKS[track]
    assert canary(reference) == []
    _score(reference, None, False)
    path = reference.result_path()
    assert (
        rescore_matches(path, json.loads(path.read_text()), require_isolation=False, reference=reference)
        == "rescored"
    )
    assert [(t, n) for t, n, _ in recorded] == [(track, reference.name)] * 3
    sample, full, entry = (request for _, _, request in recorded)
    assert sample.sample == row.canary_episodes and full.sample is None and entry.sample is None
    for request in (sample, full, entry):
        assert (request.builtin or request.policy_spec) == reference.policy.removeprefix("builtin:")
        assert request.features == reference.features and request.private_model is None


def test_the_command_line_scores_any_track_through_its_row(recorded, tmp_path, capsys):
    planted = B.transfer_benchmark(B.IN_FORCE).track(B.PLANTED)
    reference = MANIFEST[planted]["random"]
    out = tmp_path / "r.json"
    assert main(["leaderboard", "score", "--track", planted, "--builtin", "random", "--out", str(out)]) == 0
    (track, name, request), = recorded  # fmt: skip
    assert (track, name, request.builtin) == (planted, "random", "random")  # --name defaults to the builtin
    assert json.loads(out.read_text()) == json.loads(reference.result_path().read_text())
    assert "public seeds, all kinds: " in capsys.readouterr().out


def test_what_a_row_cannot_do_is_refused_before_anything_runs(recorded):
    with pytest.raises(ValueError, match="private model belongs to"):
        tracks.score_reference("v8-planted", "x", tracks.Request(builtin="random", private_model="dir"))
    with pytest.raises(ValueError, match="builtin on the v8-planted track"):
        tracks.score_reference("v8-planted", "x", tracks.Request(builtin="greedy"))
    with pytest.raises(ValueError, match="features on the v8-planted track"):
        tracks.score_reference("v8-planted", "x", tracks.Request(builtin="random", features="causal"))
    assert recorded == []


def test_an_edge_rows_builtins_are_its_scorers_references():
    """v8's edge row (protocol 2): its controls are builtins and greedy is not (it ordered none of
    the sizes the metric reads). The scorer's own list is the independent side: the row must offer
    exactly what the scorer plays; the whole-edge rankings' registry holds no control."""
    from circuit_gym.edges.references import CANDIDATE_REFERENCES, EDGE_REFERENCES

    assert set(tracks.track("v8-edges").builtins()) == set(CANDIDATE_REFERENCES)
    assert {"constant", "eap_ig_reversed"} <= set(CANDIDATE_REFERENCES) - set(EDGE_REFERENCES)
    with pytest.raises(ValueError, match="builtin on the v8-edges track"):
        tracks.score_reference("v8-edges", "x", tracks.Request(builtin="greedy_eap_ig"))
    tracks.check(tracks.track("v8-edges"), tracks.Request(builtin="constant"))  # accepted


@pytest.mark.parametrize("track", [t for t in SCORED if tracks.track(t).private_model])
def test_a_rows_episode_count_is_what_its_references_played(track):
    """The estimate's model of the work counts the episodes a scoring plays: on every committed
    reference of a transfer row, the public episodes it recorded (a zoo member serves only its
    card's gated tasks: counting every task would overstate the work)."""
    row = tracks.track(track)
    for reference in MANIFEST[track].values():
        result = json.loads(reference.result_path().read_text())
        if result["status"] != "scored":
            continue
        public = [e for e in result["scores"]["episodes"] if e.get("model") != "private"]
        assert row.episodes(0) == len(public), reference.name


def test_the_board_shows_the_benchmark_in_force_first():
    from circuit_gym.leaderboard.paths import BOARD_DIR

    names = list(tracks.TRACKS)[::-1]  # the table's order reversed: the helper must not rely on it
    ordered = tracks.in_board_order(names)
    in_force = [n for n in ordered if not tracks.not_ranking(n)]
    assert in_force and ordered[: len(in_force)] == in_force and sorted(ordered) == sorted(names)
    # the committed board: the first transfer heading is the benchmark in force's
    headings = [
        line
        for line in (BOARD_DIR / "README.md").read_text().splitlines()
        if line.startswith("### Benchmark v")
    ]
    assert headings[0].startswith(f"### Benchmark {tracks.IN_FORCE},")
    # and no section of another version: the retired ones left the board (docs/archive.md)
    lines = (BOARD_DIR / "README.md").read_text().splitlines()
    named = {v for line in lines if line.startswith("### ") for v in re.findall(r"\bv\d+\b", line)}
    assert named == {tracks.IN_FORCE}
    assert not any(line.startswith("**Not ranking") for line in lines)


def test_the_version_in_force_comes_first_wherever_its_row_stands(monkeypatch):
    """Putting a later version in force (its row last in the table) moves its tracks to the top."""
    last = list(tracks.BENCHMARKS)[-1]
    monkeypatch.setattr(tracks, "IN_FORCE", last)
    ordered = tracks.in_board_order(list(tracks.TRACKS))
    mine = [n for n in tracks.TRACKS if tracks.track(n).benchmark == last]
    assert ordered[: len(mine)] == mine


def test_an_edge_entry_ranked_on_the_private_models_is_rescored_with_them(recorded, tmp_path, monkeypatch):
    """render --rescore on an edge entry whose private part scored the private models: the models
    reach the edge scorer with their seed files, in the record's order (before, they went to the
    transfer tracks only, and the fresh private record, lacking the models' part, never matched the
    file's); without them the entry is refused (issue 58: a private part is never skipped silently)."""
    import contextlib
    import hashlib

    from circuit_gym.leaderboard import transfer_scorer, verification
    from circuit_gym.leaderboard.board import RefusedResultError
    from circuit_gym.leaderboard.edge_benchmark import EDGE_TRACKS
    from circuit_gym.leaderboard.private_models import MODELS_KEY, PrivateModel, recorded_weights

    reference = next(r for t in SCORED if t in EDGE_TRACKS and tracks.TRACKS[t].private_model
                     for r in MANIFEST[t].values()
                     if recorded_weights(json.loads(r.result_path().read_text()).get("private")))  # fmt: skip
    result = json.loads(reference.result_path().read_text())
    hashes = recorded_weights(result["private"])
    assert len(hashes) == 2  # v8 ranks on two
    models = []
    for i in range(len(hashes)):
        seeds = tmp_path / f"seeds_{i}.json"
        seeds.write_text(f"[{i + 1}, {i + 10}]")
        result["private"][MODELS_KEY][i]["seed_file_sha256"] = hashlib.sha256(seeds.read_bytes()).hexdigest()
        models.append(PrivateModel(tmp_path / f"private_{i}", seeds))
    result["private"]["seed_file_sha256"] = result["private"][MODELS_KEY][0]["seed_file_sha256"]
    # the models given have the recorded weights (their hashes are checked before any scoring);
    # given in the other order, they are matched to the record's
    weights = {m.directory: h for m, h in zip(models, hashes, strict=True)}
    monkeypatch.setattr(verification, "private_weights_hash", lambda directory: weights[Path(directory)])
    monkeypatch.setattr(transfer_scorer, "check_private_model", lambda directory, bench: (directory, ()))
    with contextlib.suppress(RefusedResultError):  # the recorder returns the committed file's record
        rescore_matches(reference.result_path(), result, models[1].seeds, require_isolation=False,
                        reference=reference, private_model=tuple(reversed(models)))  # fmt: skip
    with pytest.raises(RefusedResultError, match="--private-model"):
        rescore_matches(reference.result_path(), result, models[0].seeds, require_isolation=False,
                        reference=reference)  # fmt: skip
    (with_models,) = (request for _, _, request in recorded)
    assert with_models.private_model == tuple(models) and with_models.private_seeds == models[0].seeds
