"""The reference solvers as a user runs them: ``baselines/{ppo,greedy,random}.py`` (issue 56 item 5).

Each script runs as a subprocess, from a folder outside the repository, with a tiny budget; what
it reports is checked against the board's environment built here (the oracle table of the same
episode: the chosen head's reward, the oracle's, the recovery as a ratio of sums counted by hand)
and, for random, against numpy's generator drawn by hand. The scripts import only ``circuit_gym``
(never each other, never the leaderboard), and packaging does not install them.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from circuit_gym import benchmark as B

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("ppo.py", "greedy.py", "random.py")
# One held-out task of one held-out model of the benchmark in force, two test batches: the smallest real run.
SMALL = ["--models", "zoo10", "--tasks", "brackets", "--episodes", "2"]


def _run(script: str, *args: str, cwd: Path, timeout: float = 1200) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "baselines" / script), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _check_against_the_board_env(result: dict) -> None:
    """Every episode's head, reward and oracle reward as the board's environment gives them, and the
    recovery as the ratio of sums of the listed rewards."""
    from circuit_gym import benchmark as B
    from circuit_gym.track_envs import board_env

    bench = B.transfer_benchmark(B.IN_FORCE)
    envs: dict = {}
    for ep in result["episodes"]:
        if ep["model"] not in envs:
            envs[ep["model"]] = board_env(B.SINGLE_HEAD, ep["model"], ep["episode"] + 2, transfer=bench,
                                          tasks=bench.tasks_of(ep["model"]))  # fmt: skip
        env = envs[ep["model"]]
        env.reset(options={"task": ep["task"], "batch_index": ep["episode"]})
        reward = np.asarray(env.unwrapped.episode.table.reward, dtype=float)
        assert ep["reward"] == pytest.approx(reward[ep["head"]], rel=1e-6, abs=1e-9)
        assert ep["oracle_reward"] == pytest.approx(reward.max(), rel=1e-6, abs=1e-9)
        assert reward[ep["oracle_head"]] == reward.max()  # an oracle head (ties: any of them)
    by_hand = sum(e["reward"] for e in result["episodes"]) / sum(
        e["oracle_reward"] for e in result["episodes"]
    )
    assert result["recovery"] == pytest.approx(by_hand, rel=1e-9)
    assert result["n_episodes"] == len(result["episodes"])


# ------------------------------------------------------------------ cheap: no model is run
def test_the_scripts_import_only_circuit_gym_and_the_standard_library():
    stdlib = set(sys.stdlib_module_names)
    for script in SCRIPTS:
        tree = ast.parse((ROOT / "baselines" / script).read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        roots = {name.split(".")[0] for name in names}
        assert roots <= stdlib | {"circuit_gym", "numpy", "__future__"}, (script, roots)
        assert not any(name.startswith("circuit_gym.leaderboard") for name in names), script
        relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
        assert not relative and "baselines" not in roots, script


def test_packaging_does_not_install_the_scripts():
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert find["include"] == ["circuit_gym*"]
    assert not (ROOT / "baselines" / "__init__.py").exists()  # a folder of scripts, not a package


@pytest.mark.parametrize("script", SCRIPTS)
def test_help(script, tmp_path):
    """``--help`` from another folder: the sibling random.py must not shadow the standard library's
    random module (numpy imports it), which a script's folder first on sys.path would do."""
    out = _run(script, "--help", cwd=tmp_path)
    assert out.startswith("usage: ") and "--json" in out


# ------------------------------------------------------------------ the solvers, a tiny budget each
@pytest.mark.slow
def test_random_is_reproducible_and_scored_on_the_oracle_table(tmp_path):
    runs = []
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        out = _run("random.py", *SMALL, "--seed", seed, "--json", f"{name}.json", cwd=tmp_path)
        assert "best-of-1 oracle recovery" in out and "over 2 episodes" in out
        runs.append(json.loads((tmp_path / f"{name}.json").read_text()))
    heads = [[e["head"] for e in r["episodes"]] for r in runs]
    assert heads[0] == heads[1] and heads[0] != heads[2]
    # numpy's generator by hand: one uniform score per head per episode, in episode order, nothing
    # ablated at reset, so the first head ablated is the argmax of the episode's draw
    rng = np.random.default_rng(3)
    assert heads[0] == [int(np.argmax(rng.random(144))) for _ in heads[0]]
    _check_against_the_board_env(runs[0])


@pytest.mark.slow
def test_greedy_runs_and_reports_what_the_oracle_table_says(tmp_path):
    out = _run("greedy.py", *SMALL, "--json", "greedy.json", cwd=tmp_path)
    lines = out.splitlines()
    assert sum(line.startswith("[greedy") for line in lines) == 2  # a progress line per episode
    result = json.loads((tmp_path / "greedy.json").read_text())
    assert result["solver"] == "greedy" and result["benchmark"] == f"circuit-gym-transfer-{B.IN_FORCE}"
    assert lines[-1].startswith(f"greedy: best-of-1 oracle recovery {result['recovery']:.3f} over 2 episodes")
    _check_against_the_board_env(result)


@pytest.mark.slow
def test_ppo_trains_a_tiny_budget_then_evaluates_its_kept_policy(tmp_path):
    out = _run("ppo.py", "--out", "run", "--tiny", "--json", "ppo.json", cwd=tmp_path)
    assert (tmp_path / "run" / "policy.pt").exists() and (tmp_path / "run" / "curve.json").exists()
    result = json.loads((tmp_path / "ppo.json").read_text())
    assert result["config"]["epochs"] == 1 and result["config"]["env_id"] == "CircuitDiscovery-Zoo-Multi-v0"
    assert result["n_episodes"] == 1 and "best-of-1 oracle recovery" in out.splitlines()[-1]
    _check_against_the_board_env(result)
    # --eval-only reloads the kept policy: the same head on the same episode
    _run("ppo.py", "--out", "run", "--tiny", "--eval-only", "--json", "again.json", cwd=tmp_path)
    again = json.loads((tmp_path / "again.json").read_text())
    assert [e["head"] for e in again["episodes"]] == [e["head"] for e in result["episodes"]]
