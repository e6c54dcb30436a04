"""Solvers of the circuit-building IDs and the circuit track (issue 22 item 2), on the 4 x 4 model."""

import gymnasium as gym
import numpy as np
import pytest
from test_circuit_envs import IOI, TINY, IndependentFaithfulness

from circuit_gym.baselines.circuit_solvers import (
    ATTRIBUTION_PASSES,
    AttributionInsertion,
    GreedySearch,
    RandomInsertion,
    circuit_track,
    default_solvers,
    episode_ranking,
    play_episode,
)
from circuit_gym.circuits import CircuitRunner, cpr, faithfulness_curve
from circuit_gym.envs.circuit_building import SETUP_PASSES
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task


@pytest.fixture(scope="module")
def fresh_tiny():
    return load_model("tiny")


def test_episode_ranking_puts_the_insertion_order_first_then_the_rest_by_score():
    rest = np.array([0.0, 5.0, 1.0, np.nan, 5.0, -2.0])  # head 3's NaN sorts last, ties by id
    ranking = episode_ranking([3, 0], rest, 2, 3, "x")
    assert ranking.order().tolist() == [3, 0, 1, 4, 2, 5]
    assert ranking.order(absolute=True).tolist() == ranking.order().tolist()  # CPR's and CMD's orders agree
    with pytest.raises(ValueError, match="twice"):
        episode_ranking([1, 1], rest, 2, 3, "x")


def test_greedy_search_is_a_brute_force_greedy_and_its_first_step_is_the_oracle(fresh_tiny):
    env = gym.make(IOI, **TINY, budget=3, alpha=0.0)
    base = env.unwrapped
    obs, info = env.reset(options={"batch_index": 1})
    f = IndependentFaithfulness(env, fresh_tiny)
    solver = GreedySearch()
    solver.begin(base)
    circuit: set[int] = set()
    for step in range(3):
        gains = {h: f(circuit | {h}) - f(circuit) for h in range(16) if h not in circuit}
        action = solver.act(base, obs, info)
        assert gains[action] == pytest.approx(max(gains.values()), abs=1e-6)
        obs, _, _, _, info = env.step(action)
        if step == 0:
            assert action == info["oracle_head"]
        circuit.add(action)
    assert base.order == sorted(circuit, key=base.order.index) and len(base.order) == 3


def test_greedy_pays_one_pass_per_candidate_per_state():
    env = gym.make(IOI, **TINY, budget=4, oracle_info=False)
    row = play_episode(env, GreedySearch(), "ioi", 0)
    k = row["circuit_size"]
    states = k + 1 if k < 4 else k  # the table of the last state is computed when greedy STOPs
    assert row["forward_passes"] == SETUP_PASSES + k + sum(16 - i for i in range(states))


def test_attribution_insertion_adds_heads_by_estimated_gain_and_stops_below_alpha():
    env = gym.make(IOI, **TINY, budget=16, alpha=0.05, oracle_info=False)
    solver = AttributionInsertion()
    row = play_episode(env, solver, "ioi", 2)
    scores = solver.scores(env.unwrapped, None, None)
    expected = [int(h) for h in np.argsort(-scores, kind="stable") if scores[h] > 0.05]
    assert row["order"] == expected
    assert row["forward_passes"] == SETUP_PASSES + len(expected) + ATTRIBUTION_PASSES


def test_attribution_finds_the_exactly_most_important_head_more_often_than_chance():
    """Attribution patching is a first-order estimate of the faithfulness lost when one head is
    ablated from the full model; its top head must match the exact one well above chance."""
    env = gym.make(IOI, **TINY, oracle_info=False)
    hits = 0
    for i in range(4):
        env.reset(options={"batch_index": i})
        base = env.unwrapped
        est = AttributionInsertion()
        est.begin(base)
        full = frozenset(range(16))
        exact = [1.0 - base.state.faithfulness(base.state.metrics([full - {h}], False)[0]) for h in range(16)]
        hits += int(np.argmax(est.scores(base, None, None)) == int(np.argmax(exact)))
    assert hits >= 2  # chance is 1/16 per batch


def test_random_insertion_is_seeded_and_fills_the_budget():
    env = gym.make(IOI, **TINY, budget=5, oracle_info=False)
    a = play_episode(env, RandomInsertion(3), "ioi", 0)
    b = play_episode(env, RandomInsertion(3), "ioi", 0)
    c = play_episode(env, RandomInsertion(4), "ioi", 0)
    assert a["order"] == b["order"] != c["order"] and len(a["order"]) == 5


def test_track_cpr_is_the_cpr_of_the_episode_ranking_on_an_independent_runner(fresh_tiny):
    env = gym.make(IOI, **TINY, budget=3, oracle_info=False)
    row = play_episode(env, GreedySearch(), "ioi", 1)
    task = get_task("ioi")
    batch = task.batch(fresh_tiny, "train", 4, seed=1)
    runner = CircuitRunner.for_task(fresh_tiny, task, batch, "resample")
    independent = cpr(faithfulness_curve(runner, row["ranking"]))
    track = circuit_track(
        "tiny", ["ioi"], "train", [1], {"greedy_search": GreedySearch}, budget=3, batch_size=4
    )
    (episode,) = track["episodes"]
    assert episode["order"] == row["order"]
    assert episode["cpr"] == pytest.approx(independent, abs=1e-6)
    by_task = {(r["solver"], r["task"]) for r in track["rows"]}
    assert by_task == {("greedy_search", "ioi"), ("greedy_search", "all")}


def test_track_rows_are_means_over_episodes():
    track = circuit_track("tiny", ["ioi", "induction"], "test", range(2), default_solvers(), budget=2,
                          batch_size=4, n_random=2)  # fmt: skip
    for r in track["rows"]:
        eps = [e for e in track["episodes"] if e["solver"] == r["solver"] and r["task"] in (e["task"], "all")]
        assert r["episodes"] == len(eps)
        for key in ("cpr", "cmd", "forward_passes"):
            assert r[key] == pytest.approx(np.mean([e[key] for e in eps]))
    passes = {r["solver"]: r["forward_passes"] for r in track["rows"] if r["task"] == "all"}
    assert passes["greedy_search"] >= SETUP_PASSES + 16 > passes["attribution"]  # greedy pays per candidate


@pytest.mark.slow
def test_ppo_trains_selects_on_held_back_batches_and_plays_legal_episodes(tmp_path):
    from circuit_gym.baselines.circuit_ppo import (
        CircuitPPOConfig,
        CircuitPPOSolver,
        selection_indices,
        train,
    )

    config = CircuitPPOConfig(env_id=IOI, model="tiny", pool_size=3, selection_episodes=1, budget=3,
                              batch_size_prompts=4, n_envs=2, epochs=1, steps_per_epoch=32,
                              steps_per_collect=16, minibatch=8, repeat=1)  # fmt: skip
    summary = train(config, tmp_path, progress=False)
    assert list(selection_indices(config)) == [3] == summary["selection_batch_indices"]  # not in 0..2
    solver = CircuitPPOSolver.load(tmp_path)
    env = gym.make(IOI, **{**TINY, "pool_size": 4}, budget=3)
    obs, info = env.reset(options={"batch_index": 3})
    terminated = False
    while not terminated:
        action = solver.act(env.unwrapped, obs, info)
        assert info["action_mask"][action] == 1
        obs, _, terminated, _, info = env.step(action)
    ppo_cpr = cpr(
        faithfulness_curve(env.unwrapped.state.runner, play_episode(env, solver, "ioi", 3)["ranking"])
    )
    greedy = gym.make(IOI, **{**TINY, "pool_size": 4}, budget=3, alpha=config.alpha, oracle_info=False)
    row = play_episode(greedy, GreedySearch(), "ioi", 3)
    greedy_cpr = cpr(faithfulness_curve(greedy.unwrapped.state.runner, row["ranking"]))
    # policy.pt is the checkpoint with the best selection score: its CPR over greedy's, on exactly this batch
    assert ppo_cpr / greedy_cpr == pytest.approx(summary["best_selection_score"])


@pytest.mark.slow
def test_ppo_resumes_from_its_last_epoch_and_refuses_another_configuration(tmp_path):
    import json

    import torch

    from circuit_gym.baselines.circuit_ppo import CHECKPOINT, CircuitPPOConfig, train

    config = CircuitPPOConfig(env_id=IOI, model="tiny", pool_size=2, selection_episodes=1, budget=2,
                              batch_size_prompts=4, n_envs=2, epochs=1, steps_per_epoch=16,
                              steps_per_collect=16, minibatch=8, repeat=1)  # fmt: skip
    train(config, tmp_path, progress=False)
    first = torch.load(tmp_path / CHECKPOINT, weights_only=False)
    last = torch.load(tmp_path / "policy_last.pt", weights_only=True)
    saved = {
        k[len("policy.actor.net.") :]: v
        for k, v in first["algorithm"].items()
        if k.startswith("policy.actor.net.")
    }
    assert saved.keys() == last.keys() and all(torch.equal(saved[k], last[k]) for k in last)
    assert first["epochs_done"] == 1

    with pytest.raises(ValueError, match="lr"):
        train(CircuitPPOConfig(**{**config.__dict__, "lr": 0.5, "epochs": 2}), tmp_path, progress=False)
    summary = train(CircuitPPOConfig(**{**config.__dict__, "epochs": 2}), tmp_path, progress=False)
    curve = json.loads((tmp_path / "curve.json").read_text())
    # one point before training, one per epoch; the resumed epoch counts on from the first run's steps
    assert [p["env_steps"] for p in curve] == [0, 16, 32]
    assert summary["resumed_after_epochs"] == 1
    assert torch.load(tmp_path / CHECKPOINT, weights_only=False)["epochs_done"] == 2
    again = train(CircuitPPOConfig(**{**config.__dict__, "epochs": 2}), tmp_path, progress=False)
    assert again == summary  # a finished run is left as it is


def test_greedy_selection_reference_is_shared_by_seeds_not_by_other_episodes(tmp_path, monkeypatch):
    from circuit_gym.baselines import circuit_ppo

    calls = []

    def fake_reference(env, indices):
        calls.append(list(indices))
        return {"ioi": [float(len(calls))]}

    monkeypatch.setattr(circuit_ppo, "greedy_reference", fake_reference)
    cache = tmp_path / circuit_ppo.REFERENCE_CACHE
    base = circuit_ppo.CircuitPPOConfig(env_id=IOI, model="tiny", pool_size=3, selection_episodes=1)
    first = circuit_ppo.cached_greedy_reference(base, None, cache)
    again = circuit_ppo.cached_greedy_reference(
        circuit_ppo.CircuitPPOConfig(**{**base.__dict__, "seed": 3, "lr": 0.1}), None, cache
    )
    assert first == again == {"ioi": [1.0]} and calls == [[3]]  # another seed or learner: no new greedy run
    other = circuit_ppo.cached_greedy_reference(
        circuit_ppo.CircuitPPOConfig(**{**base.__dict__, "budget": 2}), None, cache
    )
    assert other == {"ioi": [2.0]} and len(calls) == 2  # other episodes: computed
    shifted = circuit_ppo.CircuitPPOConfig(**{**base.__dict__, "pool_size": 4})  # other held-back batches
    assert circuit_ppo.cached_greedy_reference(shifted, None, cache) == {"ioi": [3.0]} and calls[-1] == [4]


def test_area_reward_sums_to_the_area_under_the_episodes_faithfulness_curve(fresh_tiny):
    from circuit_gym.baselines.circuit_ppo import AreaReward, CircuitPPOConfig

    alpha = 0.05
    env = AreaReward(gym.make(IOI, **TINY, budget=5, alpha=alpha, oracle_info=False))
    env.reset(seed=0)
    f = IndependentFaithfulness(env, fresh_tiny)
    heads: set[int] = set()
    total = expected = 0.0
    for action in (3, 9, 14):
        heads |= {action}
        _, reward, terminated, _, _ = env.step(action)
        assert not terminated
        assert reward == pytest.approx(f(heads) - alpha, abs=1e-5)
        total, expected = total + reward, expected + f(heads) - alpha
    _, reward, terminated, _, _ = env.step(env.unwrapped.stop_action)
    assert terminated and reward == 0.0 and total == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValueError, match="reward"):
        CircuitPPOConfig(reward="cpr")


@pytest.mark.slow
def test_circuit_track_script_trains_scores_and_reports_the_targets(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "circuit_track.py"
    args = [sys.executable, str(script), "--out", str(tmp_path), "--model", "toy", "--episodes", "1",
            "--epochs", "1", "--budget", "2", "--seeds", "0", "1", "--ray-workers", "0", "--reward", "area"]  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "track.json").read_text())
    assert {r["solver"] for r in report["rows"]} == {
        "greedy_search",
        "attribution",
        "random",
        "ppo",
        "ppo_seed1",
    }
    assert (
        report["ppo_configs"]["ppo_seed1"]["reward"] == "area"
        and report["ppo_configs"]["ppo_seed1"]["seed"] == 1
    )
    by = {r["solver"]: r for r in report["rows"] if r["task"] == "all"}
    gaps = [by["greedy_search"]["cpr"] - by[name]["cpr"] for name in ("ppo", "ppo_seed1")]
    assert report["targets"]["cpr_gap_to_greedy"] == pytest.approx(sum(gaps) / 2)  # the mean over seeds
    assert (tmp_path / "learning_curves.png").stat().st_size > 100 and (tmp_path / "track.md").exists()
