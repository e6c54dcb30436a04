"""Issue 55: a benchmark ranks on several private models (v8: two), because one makes the private
column swing with its draw. The attacks first (one model scored twice passed off as two, a record of
another count, an overall summary that is not its models'), then the count refused before anything
runs, then what a two-model run records (checked against independent recomputations), the rescore
and the command line; last, every committed result's record against its track's count.

The benchmark in force is made small (tests/leaderboard_helpers.py: the 4 x 4 model ``tiny``, one
held-out task) and its row asks for two private models: two stand-ins of ``tiny``'s shape with
different weights, each with its own seed file."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from leaderboard_helpers import SMALL_TASK, private_tiny, small_in_force

from circuit_gym import benchmark as B
from circuit_gym.leaderboard import transfer_scorer as TS
from circuit_gym.leaderboard.private_models import (
    MODELS_KEY,
    PrivateModel,
    as_private_models,
    record_problem,
    recorded_weights,
    required,
)
from circuit_gym.leaderboard.provenance import REPO_ROOT, content_hash
from circuit_gym.leaderboard.scoring import sealed_private, write_result
from circuit_gym.leaderboard.verification import RefusedResultError, collect, rescore_matches, verify

CIRCUIT_TRACK = B.transfer_benchmark(B.IN_FORCE).track(B.CIRCUIT)
SINGLE_TRACK = B.transfer_benchmark(B.IN_FORCE).track(B.SINGLE_HEAD)


def variant(folder: Path, name: str, scale: float) -> Path:
    """A stand-in private model of ``tiny``'s shape whose every weight is ``scale`` times tiny's (so
    other weights: another weights hash), its card saying so and serving the small task."""
    from safetensors.numpy import load_file, save_file

    from circuit_gym.models.loading import load_model, weights_hash

    model = private_tiny(folder / name)
    tensors = load_file(model / "model.safetensors")
    save_file({k: (v * scale).astype(v.dtype) if v.dtype.kind == "f" else v for k, v in tensors.items()},
              model / "model.safetensors")  # fmt: skip
    card = json.loads((model / "card_metrics.json").read_text())
    card["weights_hash"] = weights_hash(load_model("variant", path=model))
    (model / "card_metrics.json").write_text(json.dumps(card))
    return model


def _seed_file(folder: Path, name: str, seeds: list[int]) -> Path:
    path = folder / name
    path.write_text(json.dumps(seeds))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _forged(result: dict, edit) -> dict:
    """``result`` edited by ``edit`` as a forger would, its content hash recomputed."""
    out = copy.deepcopy(result)
    edit(out)
    out["content_hash"] = content_hash(out)
    return out


def _small(mp: pytest.MonkeyPatch, cache: Path) -> None:
    """The small benchmark in force (``mp``: for one test or one scoring), its row asking for two private models."""
    row = small_in_force(mp, cache, seeds=(0,), private_seeds=2)
    mp.setitem(B.TRANSFER_BENCHMARKS, B.IN_FORCE, dataclasses.replace(row, private_models=2))


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict:
    """Two stand-ins with their seed files, and one builtin scored on both on each transfer track of
    the small benchmark (the single-head run's private episode rows captured as the scorer
    summarised them). The rows are patched only while scoring here, and per test by :func:`two`."""
    cache, secure = tmp_path_factory.mktemp("cache"), tmp_path_factory.mktemp("secure")
    a, b = variant(secure, "a", 1.0), variant(secure, "b", 1.25)
    seeds_a = _seed_file(secure, "seeds_a.json", [5, 11, 40])
    seeds_b = _seed_file(secure, "seeds_b.json", [17, 3])
    models = (PrivateModel(a, seeds_a), PrivateModel(b, seeds_b))
    hidden: list[list[dict]] = []
    record = TS.TransferRun.private_record
    with pytest.MonkeyPatch.context() as mp:
        _small(mp, cache)
        mp.setattr(
            TS.TransferRun, "private_record", lambda self, rows: hidden.append(rows) or record(self, rows)
        )
        circuit = TS.score_transfer("team", B.CIRCUIT, builtin="attribution", private_model=models)
        single = TS.score_transfer("team", B.SINGLE_HEAD, builtin="greedy", private_model=models)
    folder = tmp_path_factory.mktemp("results")
    return {
        "models": models, "cache": cache, "circuit": circuit, "single": single, "single_rows": hidden[1],
        "circuit_path": write_result(circuit, folder / "circuit.json"),
    }  # fmt: skip


@pytest.fixture
def two(scored, monkeypatch) -> dict:
    """:func:`scored`'s runs, with the small benchmark's rows in place for this test."""
    _small(monkeypatch, scored["cache"])
    return scored


# ---------------------------------------------------------------- attacks
def test_one_model_scored_twice_is_refused_by_the_scorer_and_by_the_board(two, tmp_path):
    """Two copies of one model are one draw: the scorer refuses them (before any episode), and a
    file whose two per-model records name one weights hash (content hash recomputed) is refused."""
    a = two["models"][0]
    copy_of_a = PrivateModel(variant(tmp_path, "a_again", 1.0), two["models"][1].seeds)
    with pytest.raises(ValueError, match="same weights"):
        TS.score_transfer("twice", B.CIRCUIT, builtin="attribution", private_model=(a, copy_of_a))

    def twice(r: dict) -> None:
        r["private"][MODELS_KEY][1]["weights_hash"] = r["private"][MODELS_KEY][0]["weights_hash"]

    path = write_result(_forged(two["circuit"], twice), tmp_path / "twice.json")
    with pytest.raises(RefusedResultError, match="same weights"):
        verify(path)
    entries, refused, _ = collect(
        [path], references={t: {} for t in _tracks()}, ledger=tmp_path / "none.json"
    )
    assert entries == [] and len(refused) == 1 and "one model scored twice" in refused[0]


def _tracks():
    from circuit_gym.leaderboard.references import TRACKS

    return TRACKS


def test_a_record_of_another_count_or_whose_overall_is_not_its_models_is_refused(two, tmp_path):
    def one_model(r: dict) -> None:  # the one-model form on a track that ranks on two
        first = r["private"].pop(MODELS_KEY)[0]
        r["private"]["weights_hash"] = first["weights_hash"]

    def inflated(r: dict) -> None:  # an overall summary over more episodes than its models hold
        r["private"]["scores"]["overall"]["episodes"] += 1

    for edit, why in ((one_model, "on 1 private model.*ranks on 2"), (inflated, "episodes")):
        with pytest.raises(RefusedResultError, match=why):
            verify(write_result(_forged(two["circuit"], edit), tmp_path / "forged.json"))
    assert verify(two["circuit_path"])["name"] == "team"  # the honest file


def test_a_per_model_record_is_sealed_like_the_overall_one():
    """What a policy could set at no cost (a circuit's size, its faithfulness) and anything that is
    not the scorer's (seeds, episode rows) never leaves a per-model record."""
    scores = {"overall": {"cpr": 0.5, "cpr_ci95": [0.4, 0.6], "episodes": 2, "circuit_size": 3.0}}
    record = {"seed_file_sha256": "s", "n_seeds": 2, "tasks": ["t"], "scores": scores,
              MODELS_KEY: [{"weights_hash": "w1", "seed_file_sha256": "s1", "n_seeds": 2, "tasks": ["t"],
                            "scores": scores, "seeds": [1, 2], "episodes": [{"seed": 1}]}]}  # fmt: skip
    sealed = sealed_private(record)
    (model,) = sealed[MODELS_KEY]
    assert set(model) == {"weights_hash", "seed_file_sha256", "n_seeds", "tasks", "scores"}
    assert model["scores"] == {"overall": {"cpr": 0.5, "cpr_ci95": [0.4, 0.6], "episodes": 2}}
    assert record[MODELS_KEY][0]["seeds"] == [1, 2]  # the input is not changed


# ---------------------------------------------------------------- the count, before anything runs
def _no_env(*args, **kwargs):
    raise AssertionError("an environment was built before the request was checked")


def test_a_count_other_than_the_rows_is_refused_before_anything_runs(two, monkeypatch):
    monkeypatch.setattr(gym, "make", _no_env)
    with pytest.raises(ValueError, match=rf"{CIRCUIT_TRACK} track ranks on 2 private models.*1 given"):
        TS.score_transfer("x", B.CIRCUIT, builtin="attribution", private_model=two["models"][:1])
    with pytest.raises(ValueError, match="ranks on 2 private models.*3 given"):
        TS.score_transfer(
            "x", B.CIRCUIT, builtin="attribution", private_model=two["models"] + two["models"][:1]
        )
    with pytest.raises(ValueError, match="give both private_model and private_seeds"):
        TS.score_transfer(
            "x", B.CIRCUIT, builtin="attribution", private_model=[m.directory for m in two["models"]]
        )


@pytest.mark.parametrize("given", [1, 3])
def test_the_command_line_refuses_another_count_before_opening_anything(given, tmp_path, capsys):
    """The real row: v8 ranks on two private models; the files named need not exist, since the
    count is refused before any is decrypted."""
    from circuit_gym.cli import main

    track = B.transfer_benchmark("v8").track(B.SINGLE_HEAD)
    wanted = 2
    assert B.transfer_benchmark("v8").private_models == wanted == required(track)
    files = [str(tmp_path / f"m{i}.enc") for i in range(given)]
    argv = ["leaderboard", "score", "--track", track, "--builtin", "greedy", "--out", str(tmp_path / "r.json"),
            "--private-model", *files]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"ranks on {wanted} private model" in err and f"--private-model gave {len(files)}" in err
    assert not (tmp_path / "r.json").exists()


# ---------------------------------------------------------------- what a two-model run records
def test_a_two_model_circuit_run_records_each_model_and_the_episode_weighted_overall(two):
    private = two["circuit"]["private"]
    assert two["circuit"]["status"] == "scored"
    models = private[MODELS_KEY]
    # each model named by its weights (hashed here from its directory) and its own seed file; never a seed
    from circuit_gym.models.loading import load_model, weights_hash

    for given, record in zip(two["models"], models, strict=True):
        assert record["weights_hash"] == weights_hash(load_model("check", path=given.directory))
        assert record["seed_file_sha256"] == _sha(given.seeds)
        assert set(record) == {"weights_hash", "seed_file_sha256", "n_seeds", "tasks", "scores"}
        assert record["tasks"] == [SMALL_TASK] and record["n_seeds"] == 2
    assert private["seed_file_sha256"] == _sha(two["models"][0].seeds)  # the run's own: the first's
    assert set(private) == {"seed_file_sha256", "n_seeds", "tasks", "scores", MODELS_KEY}
    text = json.dumps(private)
    for seed in (5, 11, 40, 17, 3):  # neither seed file's seeds anywhere in the record
        assert f": {seed}," not in text and f"[{seed}" not in text and f" {seed}]" not in text
    # the board's column: CPR / CMD means over every private episode = the models' episode-weighted means
    n = np.array([m["scores"]["overall"]["episodes"] for m in models], dtype=float)
    assert private["scores"]["overall"]["episodes"] == n.sum() == 4
    for metric in ("cpr", "cmd"):
        per_model = np.array([m["scores"]["overall"][metric] for m in models])
        expected = float((n * per_model).sum() / n.sum())
        assert private["scores"]["overall"][metric] == pytest.approx(expected, abs=1e-9)
    assert record_problem(private, 2) is None


def test_a_two_model_single_head_run_pools_every_private_episode(two):
    """Best-of-k recovery is a ratio of sums: over both models' episodes together (recomputed here
    from the rows the scorer summarised), each model's over its own."""
    private, rows = two["single"]["private"], two["single_rows"]
    assert two["single"]["status"] == "scored" and len(rows) == 4

    def ratio(group: list[dict], k: int) -> float:
        positive = [r for r in group if r["oracle_reward"] > 0]
        return sum(r[f"reward_k{k}"] for r in positive) / sum(r["oracle_reward"] for r in positive)

    for k in B.KS:
        assert private["scores"]["overall"][f"k{k}"]["recovery"] == pytest.approx(ratio(rows, k), abs=1e-8)
        for i, record in enumerate(private[MODELS_KEY]):
            mine = [r for r in rows if r["private_model"] == i]
            assert record["scores"]["overall"][f"k{k}"]["episodes"] == len(mine) == 2
            assert record["scores"]["overall"][f"k{k}"]["recovery"] == pytest.approx(ratio(mine, k), abs=1e-8)
    assert recorded_weights(private) == tuple(
        m["weights_hash"] for m in two["circuit"]["private"][MODELS_KEY]
    )


# ---------------------------------------------------------------- rescoring
def test_a_rescore_takes_the_models_in_any_order_and_refuses_another(two, tmp_path):
    a, b = two["models"]
    path, result = two["circuit_path"], two["circuit"]
    assert rescore_matches(path, result, private_model=(b, a)) == "verified"
    other = PrivateModel(variant(tmp_path, "c", 0.8), b.seeds)
    with pytest.raises(RefusedResultError, match="other private models"):
        rescore_matches(path, result, private_model=(a, other))
    # the right weights, but one model's seed file swapped for another: refused, naming it
    with pytest.raises(RefusedResultError, match="private model 2 was scored on another seed file"):
        rescore_matches(path, result, private_model=(a, PrivateModel(b.directory, a.seeds)))
    # without the models (or with one only) its private part is not recomputed: refused, never "rescored"
    for given in (None, (a,)):
        with pytest.raises(RefusedResultError, match=r"2 private models.*--private-model \(2 of them"):
            rescore_matches(path, result, private_seeds=a.seeds, private_model=given)


def test_the_command_line_scores_two_sealed_models(two, tmp_path, capsys):
    """`leaderboard score --private-model A.enc B.enc --key K`: each sealed file opened with its own
    seed file; the record is the API's (the same builtin, the same models and seed files)."""
    from cryptography.fernet import Fernet

    from circuit_gym.cli import main
    from circuit_gym.leaderboard.custody import seal_private

    key = tmp_path / "board.key"
    key.write_bytes(Fernet.generate_key())
    sealed = []
    for i, model in enumerate(two["models"]):
        sealed.append(str(tmp_path / f"private_{i}.enc"))
        seal_private(model.directory, model.seeds, key, sealed[-1])
    out = tmp_path / "team.json"
    argv = ["leaderboard", "score", "--track", CIRCUIT_TRACK, "--builtin", "attribution", "--name", "team",
            "--out", str(out), "--ledger", str(tmp_path / "ledger.json"), "--key", str(key),
            "--private-model", *sealed]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["private"] == two["circuit"]["private"]


# ---------------------------------------------------------------- the committed results
def test_every_committed_result_names_as_many_private_models_as_its_track_ranks_on():
    """Every committed result passes the count check of its track's row, nothing in it rewritten:
    v8's rank on two private models, one record per model."""
    paths = sorted((REPO_ROOT / "leaderboard" / "results").rglob("*.json"))
    checked = 0
    for path in paths:
        result = json.loads(path.read_text())
        if "private" not in result or "track" not in result:
            continue
        wanted = required(result["track"])
        assert (MODELS_KEY in result["private"]) == (wanted > 1), path
        assert record_problem(result["private"], wanted) is None, path
        checked += 1
    assert checked > 20


def test_one_directory_is_one_model_on_the_seed_file_given():
    assert as_private_models("/m", "/s.json") == (PrivateModel(Path("/m"), Path("/s.json")),)
    assert as_private_models(None, "/s.json") == ()
    with pytest.raises(ValueError, match="give both"):
        as_private_models("/m", None)


# ---------------------------------------------------------------- the edge track's transfer part
@pytest.mark.slow  # an edge scoring with its planted part: ~25 s
def test_the_edge_track_plays_each_private_model_and_records_each(two, monkeypatch):
    """The edge row of the small benchmark (one held-out task, one secret planted model, 64
    candidates) on both stand-ins: each on its own seed file's first batch; the overall transfer
    summary is the episode-weighted mean of the models' (edge CPR is a mean over episodes)."""
    from circuit_gym.leaderboard import edge_benchmark as EB
    from circuit_gym.leaderboard.edge_scorer import score_edges

    small = dataclasses.replace(EB.EDGE_BENCHMARKS[B.IN_FORCE], held_out_models=(), tasks=(SMALL_TASK,),
                                planted_kinds=("induction",), planted_public_seeds=(0,), planted_private_models=1,
                                candidates=64, budget=8, private_seeds_used=1)  # fmt: skip
    monkeypatch.setitem(EB.EDGE_BENCHMARKS, B.IN_FORCE, small)
    from circuit_gym.leaderboard import edge_scorer as ES

    monkeypatch.setattr(ES, "MIN_PRIVATE_EPISODES", 1)  # protocol 2's floor of 8 a cell: one batch here
    a, b = two["models"]
    with pytest.raises(ValueError, match="ranks on 2 private models.*1 given"):
        score_edges("eap", small.track, builtin="eap", private_model=(a,))
    result = score_edges("eap", small.track, builtin="eap", private_model=(a, b))
    assert result["status"] == "scored", result.get("failure")
    private = result["private"]
    assert (
        private["seed_file_sha256"] == _sha(a.seeds) and private["n_models"] == 1
    )  # the secret planted models'
    models = private[MODELS_KEY]
    assert [m["seed_file_sha256"] for m in models] == [_sha(a.seeds), _sha(b.seeds)]
    assert recorded_weights(private) == recorded_weights(two["circuit"]["private"])
    n = np.array([m["scores"]["transfer"]["all"]["episodes"] for m in models], dtype=float)
    assert private["scores"]["transfer"]["all"]["episodes"] == n.sum() == 2
    cpr = np.array([m["scores"]["transfer"]["all"]["cpr"] for m in models])
    assert private["scores"]["transfer"]["all"]["cpr"] == pytest.approx(
        float((n * cpr).sum() / n.sum()), abs=1e-9
    )
    assert record_problem(private, required(small.track)) is None


def test_a_knockout_record_whose_models_do_not_add_up_is_refused():
    """The knock-out track's private record pools its secret planted models with its private
    trained models; the models' records must hold every trained episode of the overall summary (a
    forged record that drops one model's episodes is caught), its planted episodes aside."""
    from circuit_gym.leaderboard.knockout_scorer import TRAINED_KIND

    def record(trained: int, per_model: tuple[int, ...]) -> dict:
        summary = {
            "all": {"episodes": 48 + trained},
            "induction": {"episodes": 8},
            TRAINED_KIND: {"episodes": trained},
        }
        models = [{"weights_hash": f"w{i}", "scores": {"summary": {TRAINED_KIND: {"episodes": n}, "all": {"episodes": n}}}}
                  for i, n in enumerate(per_model)]  # fmt: skip
        return {"n_models": 8, "scores": {"summary": summary}, MODELS_KEY: models}

    assert record_problem(record(8, (5, 3)), 2) is None
    assert "5 + 2" in str(record_problem(record(8, (5, 2)), 2))
    assert "track ranks on 2" in str(record_problem(record(5, (5,)), 2))
