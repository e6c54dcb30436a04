"""The main job (``circuit-gym run``): the benchmark in force, and its table against
the track's own scorer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from circuit_gym import benchmark as B
from circuit_gym.baselines import main_job
from circuit_gym.baselines.main_job import Budget
from circuit_gym.cli import main

_MODEL = main_job.BENCH.train_models[0]
# one training task the model serves (a zoo v2 member's card may not admit ioi)
TINY = Budget(pool_size=1, selection_episodes=1, epochs=1, steps_per_epoch=8, seeds=(0,), models=(_MODEL,),
              tasks=main_job.BENCH.tasks_of(_MODEL, main_job.BENCH.train_tasks)[:1])  # fmt: skip


def test_run_plays_the_benchmark_in_force(tmp_path, monkeypatch):
    calls = {}
    monkeypatch.setattr(
        main_job, "run", lambda out, budget, **kw: calls.setdefault("transfer", (out, budget, kw))
    )
    assert main(["run", "--out", str(tmp_path / "a")]) == 0
    out, budget, _ = calls["transfer"]
    assert out == tmp_path / "a" and budget == main_job.BUDGET
    # the default job plays every public model, every task of both splits, the board's test batches
    bench = B.transfer_benchmark(B.IN_FORCE)  # the main job is the benchmark in force
    assert budget.models == bench.train_models + bench.held_out_models
    assert set(budget.tasks) == set(bench.train_tasks + bench.held_out_tasks)
    assert budget.seeds == bench.seeds
    assert bench.track(B.SINGLE_HEAD) == main_job.TRACK
    # each model plays only the tasks its card's gate admits, as the board's cells do
    for m in budget.models:
        from circuit_gym.models.cards import gated_tasks

        assert set(main_job.served(m, budget)) == set(budget.tasks) & set(gated_tasks(m))
    for retired in (["--model", "gpt2"], ["--benchmark", "v1"]):  # it plays the zoo of the one in force only
        with pytest.raises(SystemExit):
            main(["run", *retired, "--out", str(tmp_path / "c")])


def test_ppo_budget_is_the_reference_recipe_with_fewer_steps():
    config = main_job.ppo_config(main_job.BUDGET, seed=3)
    assert (config.env_id, config.model, config.split) == (
        "CircuitDiscovery-Zoo-Multi-v0",
        B.transfer_benchmark(B.IN_FORCE).train_set,
        "train",
    )
    assert (config.features, config.network, config.seed) == ("causal", "state_scorer", 3)
    assert config.epochs * config.steps_per_epoch < 8 * 2048  # less than the committed runs
    # the model set PPO trains on is exactly the benchmark's training models
    from circuit_gym.embedded import model_set

    assert model_set(config.model) == B.transfer_benchmark(B.IN_FORCE).train_models


def test_plumbing_on_one_episode(tmp_path, monkeypatch):
    """One episode of two entries: rows, quadrant summaries and the board's table."""
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    players = [
        main_job.white_box_player("greedy"),
        main_job.policy_player("random", main_job.RandomPolicy(0), "r"),
    ]
    rows = main_job.play_all(players, TINY)
    assert {k: len(v) for k, v in rows.items()} == {"greedy": 1, "random": 1}
    greedy = rows["greedy"][0]
    # attribution patching: one forward and one backward pass of the episode's batch inside the rank
    # call, and one of each on the reference text for the model's first episode (then kept)
    assert greedy["lm_passes"] == {"forward": 2, "partial": 0, "backward": 2}
    assert greedy["reward_k5"] >= greedy["reward_k1"]  # best-of-5 tries the best-of-1 head too
    assert greedy["reward_k5"] <= greedy["oracle_reward"] + 1e-6  # the oracle is the best single head
    entries = {p.name: main_job.entry(p, rows[p.name]) for p in players}
    seen = entries["greedy"]["scores"]["quadrants"]["seen_task_seen_model"]
    assert (
        seen["k1"]["episodes"] == 1
        and not entries["greedy"]["scores"]["quadrants"]["unseen_task_unseen_model"]
    )
    table = main_job.results_markdown(entries, TINY)
    assert "| 1 | **" in table and "| 2 | **" in table and "seen task, seen model" in table


@pytest.mark.slow
def test_table_matches_the_track_scorer(tmp_path, monkeypatch):
    """The job's greedy and EAP-IG rows against the transfer scorer's own player, environment and
    summaries on the same cells (one batch of a training and a held-out task on a training and a
    held-out model: every quadrant). Both run here, so the numbers agree to float noise; a
    quadrant mixed up, a pass miscounted or another batch played would not."""
    from circuit_gym.leaderboard import single_head_play
    from circuit_gym.leaderboard.scoring import play_episodes, players
    from circuit_gym.leaderboard.transfer_scorer import Cell, cell_env, transfer_scores
    from circuit_gym.leaderboard.transfer_tables import transfer_row

    bench = main_job.BENCH  # the main job's benchmark (the one in force)
    models = (bench.train_models[0], bench.held_out_models[0])
    both = set(bench.tasks_of(models[0])) & set(bench.tasks_of(models[1]))  # served by both models
    tasks = (
        next(t for t in bench.train_tasks if t in both),
        next(t for t in bench.held_out_tasks if t in both),
    )

    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    budget = Budget(pool_size=1, selection_episodes=1, epochs=1, steps_per_epoch=8, seeds=(1,),
                    models=models, tasks=tasks)  # fmt: skip
    names = ("greedy", "eap_ig")
    job_players = [main_job.white_box_player(n) for n in names]
    rows = main_job.play_all(job_players, budget)
    for name, player in zip(names, job_players, strict=True):
        mine = transfer_row(main_job.entry(player, rows[name]))
        board_rows = []
        for model in budget.models:
            env = cell_env(
                B.SINGLE_HEAD, Cell(model, None, budget.tasks, budget.seeds, True), "attention", bench
            )
            play_one = players(single_head_play.SINGLE_HEAD, name, None)(env)
            jobs = [(t, s) for t in budget.tasks for s in budget.seeds]
            board_rows += [{"model": model, **r} for r in play_episodes(play_one, jobs, name, detailed=False)]
        theirs = transfer_row({"name": name, "track": main_job.TRACK, "scores": transfer_scores(B.SINGLE_HEAD, board_rows, bench),
                               "provenance": {"policy": f"builtin:{name}", "white_box": True},
                               "board": {"check": "this run", "reference": True}})  # fmt: skip
        assert mine.keys() == theirs.keys()
        for key, value in theirs.items():
            if isinstance(value, float):
                assert mine[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
            elif isinstance(value, list):
                np.testing.assert_allclose(mine[key], value, rtol=1e-9, err_msg=key)
            else:
                assert mine[key] == value, key
        assert all(mine[f"{q}_k1"] is not None for q in B.QUADRANTS)


@pytest.mark.slow
def test_quick_job_writes_its_tables(tmp_path, monkeypatch):
    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    assert main(["run", "--quick", "--out", str(tmp_path / "res")]) == 0
    report = json.loads((tmp_path / "res" / "results.json").read_text())
    assert set(report["entries"]) == {"greedy", "eap_ig", "random", "testset_memoriser", "ppo", "fixed"}
    assert report["ppo"]["config"]["features"] == "causal"
    # PPO's causal observation is attribution and EAP-IG passes made for it: they count
    assert report["entries"]["ppo"]["scores"]["compute"]["backward_passes_per_episode"] >= 1
    assert {
        "1 references (second process)",
        "2b PPO: warm-up and training",
        "4 PPO and the fixed memoriser play",
    } <= set(report["stages"])
    assert all(s["cpu"] >= 0 and s["wall"] > 0 for s in report["stages"].values())
    table = (tmp_path / "res" / "results.md").read_text()
    assert table.count("| **") == 6 and "unseen task, unseen model" in table
