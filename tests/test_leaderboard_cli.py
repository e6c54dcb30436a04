"""`circuit-gym leaderboard score` as a user meets it: a policy module in the current directory,
an estimate of the run's length before it starts, and no progress output when switched off."""

from __future__ import annotations

import json
import sys

import pytest
from leaderboard_helpers import small_in_force

from circuit_gym import benchmark as B
from circuit_gym.cli import main
from circuit_gym.leaderboard.estimate import estimate
from circuit_gym.leaderboard.references import load_manifest

TRACK = B.transfer_benchmark(B.IN_FORCE).track(B.SINGLE_HEAD)

POLICY = """import numpy as np


def make():
    class Policy:
        def rank_heads(self, observation):
            return np.arange(observation.shape[0], dtype=float)

    return Policy()
"""


@pytest.fixture
def small(monkeypatch, tmp_path):
    """The single-head track in force, made small (tests/leaderboard_helpers.py): 2 episodes."""
    small_in_force(monkeypatch, tmp_path / "cache", seeds=(0, 1), timeout_s=20.0, fast_start=False)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds the working directory
    monkeypatch.setenv("CIRCUIT_GYM_PROGRESS", "1")  # bars on, even though stderr is captured
    monkeypatch.setenv("CIRCUIT_GYM_PROGRESS_DELAY", "0")


def test_a_policy_in_the_working_directory_is_found_and_the_run_is_estimated_first(
    small, tmp_path, monkeypatch, capfd
):
    team = tmp_path / "team"
    team.mkdir()
    (team / "my_team_policy.py").write_text(POLICY)
    monkeypatch.chdir(team)
    out = tmp_path / "result.json"
    argv = [
        "--no-progress",
        "leaderboard",
        "score",
        "--track",
        TRACK,
        "--name",
        "team",
        "--policy",
        "my_team_policy:make",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    err = capfd.readouterr().err
    assert err.startswith("scoring 2 episodes: about ")  # said before anything ran
    assert "episode/s" not in err and "it/s" not in err  # --no-progress: no bar at all
    result = json.loads(out.read_text())
    assert result["status"] == "scored" and result["provenance"]["policy"] == "my_team_policy:make"


def test_a_missing_module_says_where_the_scorer_looked(small, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    argv = [
        "leaderboard",
        "score",
        "--track",
        TRACK,
        "--name",
        "x",
        "--policy",
        "nowhere_policy:make",
        "--out",
        str(tmp_path / "x.json"),
    ]
    assert main(argv) == 2
    err = capfd.readouterr().err
    assert "nowhere_policy" in err and str(tmp_path) in err and "PYTHONPATH" in err


def test_the_estimate_is_what_the_committed_reference_took_per_episode(monkeypatch):
    from circuit_gym.leaderboard import estimate as E

    bench = B.transfer_benchmark(B.IN_FORCE)
    circuit = bench.track(B.CIRCUIT)
    manifest = load_manifest()
    result = json.loads(manifest[circuit]["greedy_search"].result_path().read_text())
    # its public episodes, then every held-out task on each private model at the track's private seeds
    private = len(bench.held_out_tasks) * bench.n_private_seeds(B.CIRCUIT) * bench.private_models
    n = len(result["scores"]["episodes"]) + private
    per_episode = result["diagnostics"]["wall_seconds"] / n
    line = estimate(circuit, "greedy_search", n_private=8)
    assert line.startswith(f"scoring {n} episodes: about ")
    assert f"{per_episode:.1f} s per episode" in line
    assert (
        f"about {f'{n * per_episode:.0f} s' if n * per_episode < 90 else f'{n * per_episode / 60:.0f} min'} ("
        in line
    )
    monkeypatch.setattr(E, "load_manifest", lambda: {circuit: {}})
    assert "no estimate" in estimate(circuit, "acdc")  # no committed reference measured it


def test_a_policy_is_estimated_by_the_tracks_model_of_the_work_cold_or_warm():
    """episodes x the track's measured seconds per episode, the cold figure on a cold cache."""
    from circuit_gym.leaderboard.tracks import TRACKS

    name = B.transfer_benchmark(B.IN_FORCE).track(B.SINGLE_HEAD)
    row, bench = TRACKS[name], B.transfer_benchmark(B.IN_FORCE)
    n = sum(len(bench.tasks_of(m)) for m in bench.public_models()) * len(
        bench.seeds
    )  # every task each serves
    for cold, per in ((True, row.cost.cold_s), (False, row.cost.warm_s)):
        line = estimate(name, None, cold=cold)
        assert line.startswith(f"scoring {n} episodes: about ") and f"({per:.1f} s per episode" in line
        total = n * per  # said in seconds below 90 s, else in minutes
        assert f"about {f'{total:.0f} s' if total < 90 else f'{total / 60:.0f} min'} on" in line
        assert ("cold cache" in line) == cold


def test_the_command_line_offers_every_board_track_and_scores_the_benchmark_in_force_by_default():
    from circuit_gym.cli import build_parser
    from circuit_gym.leaderboard.references import TRACKS
    from circuit_gym.leaderboard.tracks import DEFAULT_TRACK, IN_FORCE, not_ranking

    parsed = build_parser().parse_args(["leaderboard", "score", "--name", "x"])
    in_force = B.transfer_benchmark(IN_FORCE)
    assert parsed.track == in_force.track(B.SINGLE_HEAD)
    assert in_force.definition()["benchmark_version"].endswith(IN_FORCE)
    assert not_ranking(DEFAULT_TRACK) is None
    assert parsed.out is None  # written to the track's folder of the board
    for command in (["score", "--name", "x", "--out", "x.json"], ["canary"], ["rescore-references"]):
        with pytest.raises(SystemExit):  # argparse refuses a track the board does not have
            build_parser().parse_args(["leaderboard", *command, "--track", "multi"])
        for track in TRACKS:
            assert build_parser().parse_args(["leaderboard", *command, "--track", track]).track == track


def test_the_core_imports_neither_app_and_every_app_registers_its_commands():
    """circuit_gym/cli.py only dispatches: no import of circuit_gym.baselines or circuit_gym.leaderboard
    in the core's command modules (an AST walk, function bodies included); the apps' commands are there."""
    import ast
    from pathlib import Path

    import circuit_gym
    from circuit_gym.cli import APPS, build_parser

    root = Path(circuit_gym.__file__).parent
    for module in ("cli.py", "commands.py"):
        tree = ast.parse((root / module).read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in names if m.startswith(("circuit_gym.baselines", "circuit_gym.leaderboard"))], (
            module
        )
    assert {"circuit_gym.baselines.commands", "circuit_gym.leaderboard.commands"} <= set(APPS)
    commands = build_parser()._subparsers._group_actions[0].choices
    assert {"run", "circuits", "leaderboard", "info", "list", "doctor", "play"} <= set(commands)
