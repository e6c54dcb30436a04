"""Issue 58, item 2: rescoring is strict, and the weekly rule of private scorings is code.

The red team's forgery: a result file whose private score was edited to 0.999 and whose seed-file
hash was changed (content hash recomputed) passed `render --rescore --private-seeds
--private-model` as "rescored" and ranked first, because a private part on another seed file was
silently skipped and only the status and public scores were compared.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest
from leaderboard_helpers import private_tiny, small_in_force
from sealed_records import public_episodes_checkpoint

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.isolation import probe
from circuit_gym.leaderboard.private_ledger import append_scoring, load_ledger, week_refusal
from circuit_gym.leaderboard.provenance import REPO_ROOT, content_hash
from circuit_gym.leaderboard.references import TRACKS
from circuit_gym.leaderboard.scoring import read_private_seeds, write_result
from circuit_gym.leaderboard.transfer_scorer import score_transfer
from circuit_gym.leaderboard.verification import RefusedResultError, collect, rescore_matches

SEEDS = "# maintainers only\n912345677\n887766551\n"
TRACK = B.transfer_benchmark(B.IN_FORCE).track(B.CIRCUIT)


def _forged(result: dict, **private) -> dict:
    """``result`` edited as a forger would (``private`` fields replaced), its content hash recomputed."""
    out = copy.deepcopy(result)
    out["private"].update(private)
    out["content_hash"] = content_hash(out)
    return out


def _no_references(tmp_path: Path) -> dict:
    """A manifest with no references (these tests check entries, not the references' presence)."""
    return {t: {} for t in TRACKS}


# ---------------------------------------------------------------- refused before anything runs
@pytest.fixture
def maintainers_seeds(tmp_path) -> Path:
    seeds = tmp_path / "secure" / "private_seeds.txt"
    seeds.parent.mkdir()
    seeds.write_text(SEEDS)
    return seeds


def test_a_private_part_on_another_seed_file_is_refused_naming_both_hashes(maintainers_seeds):
    """A committed result of the benchmark in force, rescored with a seed file that is not the one it was scored on:
    refused (the old code skipped its private part and called the entry rescored)."""
    path = REPO_ROOT / "leaderboard" / "results" / B.IN_FORCE / "circuit" / "gim.json"
    result = json.loads(path.read_text())
    ours = read_private_seeds(maintainers_seeds)[1]
    with pytest.raises(RefusedResultError, match="another seed file") as err:
        rescore_matches(path, result, private_seeds=maintainers_seeds)
    assert result["private"]["seed_file_sha256"][:12] in str(err.value) and ours[:12] in str(err.value)


def test_a_private_part_on_a_private_model_is_refused_without_the_model(maintainers_seeds):
    path = REPO_ROOT / "leaderboard" / "results" / B.IN_FORCE / "circuit" / "gim.json"
    result = json.loads(path.read_text())
    result["private"]["seed_file_sha256"] = read_private_seeds(maintainers_seeds)[1]
    with pytest.raises(RefusedResultError, match="--private-model"):
        rescore_matches(path, result, private_seeds=maintainers_seeds)


def test_a_private_part_on_other_models_is_refused_naming_both_hashes(maintainers_seeds):
    """The maintainers' private models given (here the public zoo10 and zoo12, of the zoo's shape
    and with their cards): a result recording other private weights is refused before any scoring."""
    from circuit_gym.leaderboard.private_models import PrivateModel, recorded_weights
    from circuit_gym.models.loading import embedded_dir, load_model, weights_hash

    path = REPO_ROOT / "leaderboard" / "results" / B.IN_FORCE / "circuit" / "gim.json"
    result = json.loads(path.read_text())
    result["private"]["seed_file_sha256"] = read_private_seeds(maintainers_seeds)[1]
    given = tuple(PrivateModel(embedded_dir(m), maintainers_seeds) for m in ("zoo10", "zoo12"))
    with pytest.raises(RefusedResultError, match="other private models") as err:
        rescore_matches(path, result, private_seeds=maintainers_seeds, private_model=given)
    assert all(weights_hash(load_model(m))[:12] in str(err.value) for m in ("zoo10", "zoo12"))
    assert all(h[:12] in str(err.value) for h in recorded_weights(result["private"]))


# ---------------------------------------------------------------- a real entry, forged
@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The circuit track in force on the 4 x 4 model (as tests/test_sealed_private_record.py) and
    one entry scored there with the maintainers' seed file and private model, written to a results
    folder."""
    if not probe().complete:
        pytest.skip(f"isolation not available here: {probe().missing}")
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        small_in_force(mp, cache, seeds=(0, 1), private_seeds=2, timeout_s=10.0)
        secure = tmp_path_factory.mktemp("secure")
        seeds = secure / "private_seeds.txt"
        seeds.write_text(SEEDS)
        model = private_tiny(secure)
        folder = tmp_path_factory.mktemp("results")
        result = score_transfer("team", B.CIRCUIT, policy_spec="sealed_leakers:honest", private_seeds=seeds,
                                private_model=model, checkpoint=public_episodes_checkpoint(folder, 2))  # fmt: skip
        assert result["status"] == "scored", result.get("failure")
        yield {
            "seeds": seeds,
            "model": model,
            "folder": folder,
            "result": result,
            "path": write_result(result, folder / "team.json"),
        }


def test_a_forged_private_score_on_another_seed_file_is_refused_not_rescored(bench, tmp_path):
    """The red team's forgery, through the board's own check (`render --rescore --private-seeds
    --private-model`), on the circuit track in force (made small)."""
    result = bench["result"]
    private = copy.deepcopy(result["private"])
    private["scores"]["overall"]["cpr"] = 0.999
    theirs = hashlib.sha256(b"[1, 2, 3]").hexdigest()
    forged = _forged(result, scores=private["scores"], seed_file_sha256=theirs)
    path = write_result(forged, tmp_path / "forged.json")
    entries, refused, _ = collect([path], rescore=True, private_seeds=bench["seeds"],
                                  references=_no_references(tmp_path), ledger=tmp_path / "none.json")  # fmt: skip
    assert entries == [] and len(refused) == 1
    assert "forged.json" in refused[0] and "another seed file" in refused[0] and theirs[:12] in refused[0]
    # the honest file, the same way: verified
    entries, refused, _ = collect([bench["path"]], rescore=True, private_seeds=bench["seeds"],
                                  private_model=bench["model"], references=_no_references(tmp_path),
                                  ledger=tmp_path / "none.json")  # fmt: skip
    assert refused == [] and [e["board"]["check"] for e in entries] == ["verified"]


def test_a_private_part_of_a_track_not_in_force_on_its_own_seed_file_is_rescored_on_its_public_part(
    bench, tmp_path, monkeypatch
):
    """On a track the board does not rank on (a version scored before it is put in force, here the
    small circuit track taken as one), a private part on another seed file (its own benchmark's) is
    neither recomputed nor refused; the check says "rescored", never "verified", so the board does
    not vouch for its private column."""
    from circuit_gym.leaderboard import tracks

    monkeypatch.setattr(tracks, "not_ranking", lambda name: "not in force in this test")
    other = _forged(bench["result"], seed_file_sha256=hashlib.sha256(b"[4, 5]").hexdigest())
    assert rescore_matches(bench["path"], other, private_seeds=bench["seeds"]) == "rescored"


@pytest.mark.parametrize(
    "edit, what",
    [
        (lambda r: r["private"]["scores"]["overall"].__setitem__("cpr", 0.999), "private"),
        (lambda r: r["diagnostics"]["policy_cpu"].__setitem__("calls", 1), "policy_calls"),
        (lambda r: r["diagnostics"]["policy_cpu"].__setitem__("calls_s", 500.0), "calls_s"),
        (lambda r: r["provenance"].__setitem__("white_box", True), "white_box"),
    ],
)
def test_every_field_the_board_shows_is_compared(bench, tmp_path, edit, what):
    """Each edit (the content hash recomputed) is refused by a rescore with the seed file."""
    forged = copy.deepcopy(bench["result"])
    edit(forged)
    forged["content_hash"] = content_hash(forged)
    with pytest.raises(RefusedResultError, match=what):
        rescore_matches(bench["path"], forged, private_seeds=bench["seeds"], private_model=bench["model"])


# ---------------------------------------------------------------- the weekly rule
def _ledger(tmp_path: Path, seed_sha: str, rows: list[tuple[str, str, str]]) -> Path:
    """A ledger governing ``seed_sha`` with ``rows`` of (date, track, name)."""
    path = tmp_path / "private_ledger.json"
    scorings = [{"date": d, "track": t, "name": n, "seed_file_sha256": seed_sha, "content_hash": f"h{i}"}
                for i, (d, t, n) in enumerate(rows)]  # fmt: skip
    path.write_text(json.dumps({"rule_per_week": 2, "seed_files": [seed_sha], "scorings": scorings}))
    return path


def test_the_weekly_rule_counts_seven_days_per_name():
    ledger = load_ledger(Path("/nonexistent"))
    assert week_refusal(ledger, "team", dt.date(2026, 12, 2)) is None  # an empty ledger
    rows = ({"date": "2026-11-26", "track": "v8-circuit", "name": "team", "seed_file_sha256": "s", "content_hash": "a"},
            {"date": "2026-12-01", "track": "v8-edges", "name": "team", "seed_file_sha256": "s", "content_hash": "b"},
            {"date": "2026-12-01", "track": "v8-edges", "name": "other", "seed_file_sha256": "s", "content_hash": "c"})  # fmt: skip
    ledger = type(ledger)(rows, frozenset({"s"}))
    assert "3 private scorings within 7 days" in week_refusal(ledger, "team", dt.date(2026, 12, 2))
    assert week_refusal(ledger, "team", dt.date(2026, 12, 3)) is None  # 11-26 is 7 days back: out
    assert week_refusal(ledger, "other", dt.date(2026, 12, 2)) is None


def test_render_refuses_a_third_private_scoring_within_a_week_and_an_unrecorded_one(bench, tmp_path):
    sha = read_private_seeds(bench["seeds"])[1]
    refs = _no_references(tmp_path)
    # not in the ledger, on a seed file it governs: refused
    ledger = _ledger(tmp_path, sha, [])
    _, refused, _ = collect([bench["path"]], references=refs, ledger=ledger)
    assert len(refused) == 1 and "has no row for this result" in refused[0]
    # its row after two scorings of the name within 7 days: refused
    ledger = _ledger(
        tmp_path, sha, [("2026-11-28", "v8-edges", "team"), ("2026-11-30", "v8-planted", "team")]
    )
    append_scoring(bench["result"], sha, ledger, day=dt.date(2026, 12, 2))
    _, refused, _ = collect([bench["path"]], references=refs, ledger=ledger)
    assert len(refused) == 1 and "3 private scorings within 7 days" in refused[0]
    # the earlier ones 8 days back: shown
    ledger = _ledger(
        tmp_path, sha, [("2026-11-20", "v8-edges", "team"), ("2026-11-24", "v8-planted", "team")]
    )
    append_scoring(bench["result"], sha, ledger, day=dt.date(2026, 12, 2))
    entries, refused, _ = collect([bench["path"]], references=refs, ledger=ledger)
    assert refused == [] and [e["name"] for e in entries] == ["team"]


def test_score_refuses_a_third_private_scoring_before_it_runs(maintainers_seeds, tmp_path, capsys):
    from circuit_gym.cli import main

    sha = read_private_seeds(maintainers_seeds)[1]
    today = dt.datetime.now(dt.UTC).date()
    days = [(today - dt.timedelta(days=d)).isoformat() for d in (1, 3)]
    ledger = _ledger(tmp_path, sha, [(days[0], "v8-circuit", "team"), (days[1], "v8-edges", "team")])
    out = tmp_path / "team.json"
    argv = ["leaderboard", "score", "--track", TRACK, "--name", "team", "--policy", "sealed_leakers:honest",
            "--private-seeds", str(maintainers_seeds), "--ledger", str(ledger), "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    assert "3 private scorings within 7 days" in capsys.readouterr().err and not out.exists()


def test_the_committed_ledger_governs_the_benchmark_in_force():
    """The committed ledger names the seed file the results in force were scored on, so an entry
    on it needs a row; its rows are well formed."""
    ledger = load_ledger()
    in_force = json.loads((REPO_ROOT / "leaderboard" / "results" / B.IN_FORCE / "gim.json").read_text())
    assert ledger.governs(in_force["private"]["seed_file_sha256"])
    for row in ledger.scorings:
        assert set(row) == {"date", "track", "name", "seed_file_sha256", "content_hash"}
        dt.date.fromisoformat(row["date"])
