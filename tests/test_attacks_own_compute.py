"""Issue 58, item 3: own compute on the package's models, inside the sandbox.

A policy that finds the package's language-model weights in its sandbox can load a public model
and run the package's exact greedy search there, reproducing the greedy reference's circuits at
no LM pass of the board's count; one that imports the planted generator regenerates the planted
truth of the public seeds it is scored on. The sandbox shows the package without either
(``circuit_gym.leaderboard.sandbox.hidden_paths``): each attack then finds nothing and scores
exactly what its honest twin scores. The harness (benchmark, checkpoint of what an attacker knows,
the honest twins, the checks that nothing outside changed) is tests/test_attacks.py's; the
policies are tests/hostile_policies.py's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import test_attacks
from test_attacks import RESULTS_DIR, _run, _same_as_honest, score

import circuit_gym
from circuit_gym import benchmark as B
from circuit_gym.leaderboard import planted_scorer as PS
from circuit_gym.leaderboard import sandbox
from circuit_gym.leaderboard.provenance import REPO_ROOT, canonical_json

PACKAGE_DIR = Path(circuit_gym.__file__).resolve().parent
IN_FORCE = B.transfer_benchmark(B.IN_FORCE)
# The attack suite's fixtures: its small benchmark and the honest twins (scored once per module).
bench, honest, circuit_honest = test_attacks.bench, test_attacks.honest, test_attacks.circuit_honest


@pytest.fixture
def with_the_package(monkeypatch):
    """The sandbox as it scores submissions: circuit_gym imported before the policy, and a call
    limit long enough for a model load and a greedy search (the attack, undefended)."""
    monkeypatch.setattr(sandbox, "PRELOAD", ("circuit_gym",))
    monkeypatch.setattr(B, "CALL_TIMEOUT_S", 120.0)


def test_the_packaged_weights_cannot_be_read_by_path(bench, honest, tmp_path):
    """The package ships weight files (the embedded and zoo models): none opens in the sandbox."""
    shipped = [p for p in PACKAGE_DIR.rglob("*") if p.suffix in (".safetensors", ".pt", ".pth")]
    assert shipped, "the package ships no weights: this attack tests nothing"
    _same_as_honest(_run(bench, tmp_path, "read_packaged_weights", package_dir=str(PACKAGE_DIR)), honest)


def test_greedy_search_on_a_model_loaded_in_the_sandbox_finds_no_model(
    bench, circuit_honest, with_the_package, tmp_path
):
    """The attack of issue 58 (0.983 against its twin's 0.164): load the track's public model in
    the sandbox, play the package's greedy search on a copy of each episode, answer with its heads."""
    from hostile_policies import _greedy_on_own_copy

    row = bench["row"]  # one public model
    episodes = [[task, seed] for task in row.held_out_tasks for seed in row.circuit_seeds]
    info = {"model": row.train_models[0], "budget": B.CIRCUIT_BUDGET, "episodes": episodes}
    honest_orders = [e["order"] for e in circuit_honest["scores"]["episodes"]]
    # the attack is potent: outside the sandbox it builds the greedy reference's circuits exactly
    greedy = score(bench, "greedy_search", B.CIRCUIT, builtin="greedy_search")
    greedy_orders = [e["order"] for e in greedy["scores"]["episodes"]]
    assert [_greedy_on_own_copy(info, i) for i in range(len(episodes))] == greedy_orders != honest_orders
    result = _run(bench, tmp_path, "circuit_greedy_on_own_copy", B.CIRCUIT, **info)
    assert result["status"] == "scored", result.get("failure")
    assert [e["order"] for e in result["scores"]["episodes"]] == honest_orders
    assert canonical_json(result["scores"]) == canonical_json(circuit_honest["scores"])


def test_the_planted_generator_is_not_importable_in_the_sandbox(
    bench, with_the_package, tmp_path, monkeypatch
):
    """The planted generator regenerates the public seeds' truth (issue 58: public columns 1.00);
    in the sandbox it cannot be imported, and the attack scores what its honest twin scores."""
    from hostile_policies import _planted_truth

    row = dataclasses.replace(PS.planted_benchmark(), public_seeds=(0, 1), kinds=("multihop",))
    monkeypatch.setitem(PS.PLANTED_BENCHMARKS, PS.TRACK, row)
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))  # the scorer caches the public models
    info = {"generator": row.generator, "episodes": [list(job) for job in row.jobs()]}
    twin = _run(bench, tmp_path, "circuit_honest", scorer=PS.score_planted)
    assert twin["status"] == "scored", twin.get("failure")
    # the attack is potent: outside the sandbox it proposes the truth itself
    truth = [_planted_truth(info, i) for i in range(len(info["episodes"]))]
    assert truth != [sorted(e["order"]) for e in twin["scores"]["episodes"]]
    result = _run(bench, tmp_path, "planted_truth_from_the_generator", scorer=PS.score_planted, **info)
    assert result["status"] == "scored", result.get("failure")
    assert result["scores"]["summary"]["all"]["recall"] < 1.0
    assert canonical_json(result["scores"]) == canonical_json(twin["scores"])


def test_the_sandbox_hides_every_shipped_weight_file_and_the_generator_only():
    """What the policy's view leaves out, against the package's files: every weight file and the
    planted generator's folder, nothing else of the package (its code, cards, tokenizers)."""
    hidden = {p.resolve() for p in sandbox.hidden_paths()}
    weights = {p.resolve() for p in PACKAGE_DIR.rglob("*") if p.suffix in (".safetensors", ".pt", ".pth")}
    generator = (PACKAGE_DIR / "models" / "planted").resolve()
    assert weights and weights <= hidden and generator in hidden
    assert all(p == generator or (p.is_file() and p.suffix in sandbox.WEIGHT_SUFFIXES) for p in hidden)
    assert all(not str(p).startswith(str(REPO_ROOT / "docs")) for p in hidden)  # docs/ is never bound
    assert RESULTS_DIR not in hidden


def test_an_honest_policy_using_torch_and_the_package_runs_in_the_filtered_view(with_the_package):
    """A reference policy of the board (the circuit track in force's PPO: torch, circuit_gym.baselines,
    its own checkpoint) loads and answers in the sandbox whose package view hides the models."""
    from circuit_gym.leaderboard.references import load_manifest
    from circuit_gym.track_envs import board_env

    bench = IN_FORCE  # the whole row (this module's small benchmark patches it)
    ppo = load_manifest()[bench.track(B.CIRCUIT)]["ppo"]
    env = board_env(
        B.CIRCUIT, bench.held_out_models[0], 1, cache=False, transfer=bench, features=ppo.features
    )
    obs, info = env.reset(options={"task": bench.tasks_of(bench.held_out_models[0], bench.held_out_tasks)[0],
                                   "batch_index": 0})  # fmt: skip
    assert ppo.policy_spec is not None and ppo.checkpoint_path() is not None
    with sandbox.SandboxedPolicy(ppo.policy_spec, ppo.checkpoint_path(), timeout_s=120,
                                 methods=("rank_heads", "act")) as policy:  # fmt: skip
        assert policy.isolation.complete, policy.isolation.missing
        action = policy.act(obs, info["action_mask"])
        scores = policy.rank_heads(obs)
    assert isinstance(action, int) and 0 <= action < len(info["action_mask"])
    assert len(scores) == obs.shape[0] and np.isfinite(scores).all()
