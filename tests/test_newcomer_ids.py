"""Issue 59: every public model the board in force ranks on is reachable with ``gym.make`` (the
``ZooV2`` IDs draw zoo v2), the ``Zoo`` IDs keep their behaviour (zoo v1), and README's glossary
names the in-force generation's split."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import pytest

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym.benchmark import IN_FORCE, transfer_benchmark
from circuit_gym.envs.registration import env_ids

ROOT = Path(__file__).resolve().parents[1]
BOARD = transfer_benchmark(IN_FORCE)
FAMILY = f"-Zoo{BOARD.zoo_generation.upper()}-"  # the in-force zoo's IDs: v8's zoo v3 -> -ZooV3-


def _drawn(env_id: str) -> dict[str, tuple[str, ...]]:
    env = gym.make(env_id)
    try:
        return dict(env.unwrapped.served)
    finally:
        env.close()


def test_every_public_model_of_the_board_in_force_is_drawn_by_a_current_id():
    # The board's models come from benchmark.py, the IDs from the registry: two sources.
    wanted = set(BOARD.public_models())
    assert wanted == {"zoo9", "zoo10", "zoo11", "zoo12"}  # benchmark v8 (zoo v3)
    reached: set[str] = set()
    for env_id in env_ids():
        if FAMILY in env_id and env_id.endswith("-Multi-v0"):
            reached |= set(_drawn(env_id))
    assert reached == wanted


@pytest.mark.slow
def test_every_cell_of_the_board_in_force_is_served_by_its_task_id():
    # Every (model, task) cell the board in force scores: its zoo's ID of that task serves it on that model.
    part = {
        t: "IOI" if t == "ioi" else "".join(w.capitalize() for w in t.split("_")) for t in BOARD.all_tasks()
    }
    for task in BOARD.all_tasks():
        served = _drawn(f"CircuitDiscovery{FAMILY}{part[task]}-v0")
        for model in BOARD.public_models():
            assert (task in served.get(model, ())) == (task in BOARD.tasks_of(model)), (task, model)


@pytest.mark.slow
def test_reset_reaches_each_public_model_by_name():
    env = gym.make(f"CircuitDiscovery{FAMILY}Multi-v0")
    try:
        for model in BOARD.public_models():
            _, info = env.reset(seed=0, options={"model": model})
            assert info["model"] == model
    finally:
        env.close()


def test_the_old_zoo_ids_keep_drawing_zoo_v1():
    assert set(_drawn("CircuitDiscovery-Zoo-Multi-v0")) == {"zoo1", "zoo2", "zoo3", "zoo4"}


def test_readme_glossary_names_the_in_force_split():
    text = (ROOT / "README.md").read_text()
    glossary = text[text.index("- **zoo**") :]
    glossary = " ".join(glossary[: glossary.index("\n- **", 5)].split())
    train = " ".join(f"`{m}`" for m in BOARD.train_models)
    held = " ".join(f"`{m}`" for m in BOARD.held_out_models)
    # e.g. "held-out model**: a zoo member never trained on (v8: `zoo10`, `zoo12`; the training models are `zoo9`, `zoo11`)"
    match = re.search(
        rf"never trained on \({IN_FORCE}: (`\w+`), (`\w+`); the training\s+models are (`\w+`), (`\w+`)\)",
        glossary,
    )
    assert match, glossary
    assert " ".join(match.groups()[:2]) == held and " ".join(match.groups()[2:]) == train
    assert "zoo2`, `zoo4`);" not in glossary  # the retired generation's held-out pair is not the definition
