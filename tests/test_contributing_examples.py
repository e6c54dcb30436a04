"""CONTRIBUTING.md's worked examples run as written: adding a task, a model family, a solver and a
track. Each example is the fenced block after its ``<!-- example: NAME -->`` marker; it is run
in a fresh namespace, its effect is checked, and every table it registers into is put back
afterwards (the committed registries never change)."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
MARKED_BLOCK = re.compile(r"<!-- example: ([\w ]+) -->\n```python\n(.*?)\n```", re.DOTALL)


def examples() -> dict[str, str]:
    return dict(MARKED_BLOCK.findall((ROOT / "CONTRIBUTING.md").read_text()))


def run_example(name: str) -> dict:
    namespace: dict = {"__name__": f"contributing_{name.replace(' ', '_')}"}
    exec(compile(examples()[name], f"CONTRIBUTING.md <{name}>", "exec"), namespace)
    return namespace


@pytest.fixture
def tables(monkeypatch):
    """Copies of the tables the examples register into, dropped after the test (and the
    Gymnasium IDs registered meanwhile)."""
    from circuit_gym import embedded
    from circuit_gym.envs import registration
    from circuit_gym.leaderboard import tracks
    from circuit_gym.solvers import white_box
    from circuit_gym.tasks import base

    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    monkeypatch.setattr(embedded, "MODEL_SETS", dict(embedded.MODEL_SETS))
    monkeypatch.setattr(registration, "REGISTRY", registration.REGISTRY)
    monkeypatch.setattr(white_box, "BUILTINS", dict(white_box.BUILTINS))
    monkeypatch.setattr(tracks, "TRACKS", dict(tracks.TRACKS))
    before = set(gym.registry)
    yield
    for env_id in set(gym.registry) - before:
        gym.registry.pop(env_id)


def test_every_section_has_its_example():
    assert set(examples()) == {"task", "model family", "solver", "track"}


def test_the_new_task_builds_a_batch(tables, tiny_model):
    from circuit_gym.tasks import get_task, list_tasks

    assert "repeat3" not in list_tasks()
    ns = run_example("task")
    task = get_task("repeat3")
    batch = task.batch(tiny_model, "eval", 4, seed=0)
    tok = tiny_model.tokenizer
    for row in range(4):  # " A B C A B": the answer is C, the distractor A, both eval names
        words = tok.decode(batch.tokens[row, 1:]).split()
        assert len(words) == 5 and words[3:] == words[:2] and set(words) == set(ns["NAMES"]["eval"])
        assert tok.decode(batch.answers[row]).strip() == words[2]
        assert tok.decode(batch.distractors[row, 0]).strip() == words[0]
    logits = tiny_model(batch.tokens)[:, -1]
    expected = logits.gather(1, batch.answers) - logits.gather(1, batch.distractors[:, 0])  # plain logit diff
    assert torch.allclose(task.score(tiny_model(batch.tokens), batch), expected[:, 0], atol=1e-4)


def test_the_new_model_family_has_its_ids(tables):
    from circuit_gym.embedded import model_set
    from circuit_gym.envs.registration import list_envs

    run_example("model family")
    env_id = "CircuitDiscovery-Embedded-IOI-v0"
    assert [r["id"] for r in list_envs(family="zoo") if "-Embedded-" in r["id"]] == [env_id]
    assert model_set("embedded-12x12") == ("toy", "toy_d")
    env = gym.make(env_id, pool_size=2, batch_size=2)
    try:
        assert env.unwrapped.models == ("toy", "toy_d") and env.action_space.n == 144
        assert gym.spec(env_id).max_episode_steps == 144
    finally:
        env.close()


def test_the_new_solver_ranks_the_heads(tables):
    from circuit_gym.circuits import CircuitRunner
    from circuit_gym.envs.circuit_env import CircuitDiscoveryEnv
    from circuit_gym.solvers.white_box import builtin

    run_example("solver")
    solver = builtin("knockout", "single-head")
    env = CircuitDiscoveryEnv(model="tiny", tasks=("ioi",), pool_size=2, batch_size=2)
    try:
        env.reset(seed=0)
        scores = solver.rank(env)
        assert scores.shape == (16,) and np.isfinite(scores).all() and np.ptp(scores) > 0
        # The engine's single-head sweep (its own per-layer path, not the runner's stacked
        # circuits) on the episode's batch: a wrong head order or sign breaks the match.
        episode = env.episode
        engine = CircuitRunner.for_task(env.model, episode.pool.task, episode.batch, env.ablation).engine
        np.testing.assert_allclose(scores, engine.clean_score - engine.sweep(), atol=1e-4)
    finally:
        env.close()


def test_the_new_track_is_served_by_score_reference(tables):
    from circuit_gym import benchmark as B
    from circuit_gym.leaderboard import tracks

    run_example("track")
    name = f"{B.transfer_benchmark(B.IN_FORCE).track(B.SINGLE_HEAD)}-causal"
    row = tracks.track(name)
    # a live row of the benchmark in force, the board ranks on it
    assert row.benchmark == B.IN_FORCE and tracks.not_ranking(name) is None
    assert "greedy" in row.builtins() and row.episodes(0) > 0 and row.features() == ("causal",)
    # score_reference checks the request against the row before anything is scored
    with pytest.raises(ValueError, match=f"builtin on the {name} track"):
        tracks.score_reference(name, "x", tracks.Request(builtin="greedy_search", features="causal"))
    with pytest.raises(ValueError, match=f"features on the {name} track is one of \\['causal'\\]"):
        tracks.score_reference(name, "x", tracks.Request(builtin="greedy", features="attention"))


def _commands(parser, prefix: str) -> set[str]:
    """Every leaf command of an argparse parser: ``circuit-gym leaderboard score`` and so on."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {prefix}
    return {c for name, p in subs[0].choices.items() for c in _commands(p, f"{prefix} {name}")}


def test_every_way_to_run_things_is_a_row_of_the_table():
    """CONTRIBUTING's table lists exactly the ways there are: every ``circuit-gym`` command, every
    package module that runs under ``python -m``, every script of ``baselines/``, ``scripts/`` and
    ``benchmarks/`` (but the imported timing helper); a script added or deleted changes a row."""
    from circuit_gym.cli import build_parser

    text = (ROOT / "CONTRIBUTING.md").read_text()
    table = text[text.index("<!-- ways to run things -->") : text.index("<!-- /ways to run things -->")]
    rows = set(re.findall(r"^\| `([^`]+)` \|", table, re.M))
    modules = {
        "python -m " + ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "circuit_gym").rglob("*.py")
        if re.search(r'^if __name__ == "__main__":', p.read_text(), re.M)
    }
    files = {
        str(p.relative_to(ROOT))
        for folder in ("baselines", "scripts", "benchmarks")
        for p in (ROOT / folder).glob("*.py")
        if p.name != "timing.py"
    }
    assert rows == _commands(build_parser(), "circuit-gym") | modules | files
