"""The shipped board, checked against this checkout.

In its own module: tests/test_leaderboard.py patches the benchmark definition with
module-scoped fixtures, which would still be active here.
"""

from pathlib import Path

from circuit_gym.leaderboard import benchmark as B
from circuit_gym.leaderboard.board import collect
from circuit_gym.models.loading import load_model


def test_the_committed_board_holds_the_four_references_of_the_current_benchmark(monkeypatch):
    """The shipped result files pass the board's checks for this checkout: current benchmark
    definition and package version, the embedded model's weights, and each recognised as its
    reference by provenance (a benchmark or version bump without rescoring fails here)."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)  # reference checkpoints are relative to the repository root
    paths = sorted((root / "leaderboard" / "results").glob("*.json"))
    entries, refused, failed = collect(paths, load_model(B.MODEL).circuit_gym_info.weights_hash)
    assert not refused and not failed
    assert sorted(e["board"]["reference"] for e in entries) == sorted(B.REFERENCE_ENTRIES)
    for entry in entries:
        assert entry["private"]["n_seeds"] >= 32  # verified boards carry private scores


def test_the_committed_circuit_board_holds_the_four_circuit_references(monkeypatch):
    """The circuit track's shipped results (leaderboard/results/circuit/) pass the same checks,
    each recognised as its reference: editing baselines/circuit_solvers.py, circuit_ppo.py or
    circuit_random_policy.py, or PPO's checkpoint, without rescoring fails here."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    paths = sorted((root / "leaderboard" / "results" / "circuit").glob("*.json"))
    entries, refused, failed = collect(paths, load_model(B.MODEL).circuit_gym_info.weights_hash)
    assert not refused and not failed
    assert sorted(e["board"]["reference"] for e in entries) == sorted(B.CIRCUIT_REFERENCE_ENTRIES)
    for entry in entries:
        assert entry["track"] == "circuit" and entry["private"]["n_seeds"] == B.CIRCUIT_PRIVATE_SEEDS
