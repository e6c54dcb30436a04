"""One table of environment IDs for every family (issue 30): listing, notes once per version,
a new family or model as one line, no import circle; ``circuit-gym list`` and ``doctor``'s
counts (issue 33)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import gymnasium as gym
import pytest

import circuit_gym
from circuit_gym.cli import main
from circuit_gym.envs import registration
from circuit_gym.envs.registration import SINGLE_HEAD, Line, env_ids, list_envs, version_notes

ROOT = Path(__file__).resolve().parents[1]
REGISTERED = sorted(i for i in gym.registry if i.startswith("CircuitDiscovery-"))


def test_list_envs_covers_every_family_and_every_registered_id():
    every = list_envs(all_versions=True)
    assert sorted(r["id"] for r in every) == REGISTERED  # nothing registered is left out
    current = list_envs()
    circuit = [r for r in current if r["family"] == "circuit"]
    single = [r for r in current if r["family"] == "single-head"]
    zoo = [r for r in current if r["family"] in ("zoo", "zoo-circuit")]
    planted = [r for r in current if r["family"] in ("planted", "planted-circuit")]
    edges = [r for r in current if r["family"] in ("edges", "zoo-edges", "planted-edges")]
    # planted: v1's six kinds (planted generator version 3) in both kinds; v0's four are older now
    # zoo: three generations (Zoo: zoo v1, ZooV2: zoo v2, the board in force, ZooV3: zoo v3, benchmark v8),
    # 10 task parts x 2 kinds each
    assert len(circuit) == len(single) == len(zoo) // 3 == 20 and len(planted) == 12
    assert all(r["id"].endswith("-v1") for r in planted)
    # edges: the toy model's 10 task parts (no GPT-2: its MLP edges are not patched), each zoo generation's 10,
    # 6 planted kinds
    knockout = [r for r in current if r["family"] == "planted-knockout"]
    assert len(knockout) == 6 and all(r["id"].endswith("-KnockOut-v0") for r in knockout)
    # knock-out over zoo v2 (the board in force's public models) and zoo v3 (v8's): 10 task parts each
    zoo_knockout = [r for r in current if r["family"] == "zoo-knockout"]
    assert len(zoo_knockout) == 20 and {r["id"].split("-")[1] for r in zoo_knockout} == {"ZooV2", "ZooV3"}
    assert len(edges) == 46 and len(current) == 184
    assert all(r["id"].endswith("-Edges-v1" if "-Planted-" in r["id"] else "-Edges-v0") for r in edges)
    assert all(r["id"].endswith("-Circuit-v0") for r in circuit)
    assert env_ids() == [r["id"] for r in current] and circuit_gym.list_envs() == current
    assert env_ids(family="circuit") == [r["id"] for r in circuit]
    for row in every:  # every row is short: the version's note is not repeated in each
        assert set(row) <= {"id", "family", "model", "tasks", "version", "current", "use"}
        assert ("use" in row) == (not row["current"]) and len(json.dumps(row)) < 250
    with pytest.raises(ValueError, match="family must be one of"):
        list_envs(family="multi-agent")


def test_version_notes_are_per_version():
    assert "run F" in version_notes("single-head", 4) and "run E" not in version_notes("single-head", 4)
    assert version_notes("circuit", 0).startswith("first release")
    with pytest.raises(ValueError, match="no version 9"):
        version_notes("single-head", 9)


def test_circuit_env_id_spells_the_circuit_family():
    from circuit_gym.envs.registration import CIRCUIT_VERSION, circuit_env_id

    assert circuit_env_id("Toy", "Multi") == f"CircuitDiscovery-Toy-Multi-Circuit-v{CIRCUIT_VERSION}"
    assert circuit_env_id("Toy", "Multi") in env_ids(family="circuit")


def test_a_new_model_family_is_one_line(monkeypatch):
    """What another helper does to add e.g. a model zoo's IDs: append a Line; nothing else."""
    line = Line(
        SINGLE_HEAD, 0, {"TestZoo": "tiny"}, {"IOI": ("ioi",), "Pair": ("ioi", "induction")}, "a test line"
    )
    monkeypatch.setattr(registration, "REGISTRY", (*registration.REGISTRY, line))
    new = ["CircuitDiscovery-TestZoo-IOI-v0", "CircuitDiscovery-TestZoo-Pair-v0"]
    try:
        registration.register_envs()
        assert [r["id"] for r in list_envs() if "TestZoo" in r["id"]] == new
        spec = gym.spec(new[1])
        assert (
            spec.kwargs == {"model": "tiny", "tasks": ("ioi", "induction")} and spec.max_episode_steps == 16
        )
        env = gym.make(new[0], pool_size=2, batch_size=2)
        _, info = env.reset(seed=0)
        assert info["task"] == "ioi" and env.action_space.n == 16
    finally:
        for env_id in new:
            gym.registry.pop(env_id, None)


def test_a_model_the_table_cannot_size_needs_max_episode_steps(monkeypatch):
    line = Line(SINGLE_HEAD, 0, {"Unsized": "some-hub-model"}, {"IOI": ("ioi",)}, "a test line")
    monkeypatch.setattr(registration, "REGISTRY", (*registration.REGISTRY, line))
    with pytest.raises(ValueError, match="max_episode_steps"):
        registration.register_envs()
    gym.registry.pop("CircuitDiscovery-Unsized-IOI-v0", None)


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return names


def test_the_benchmark_plays_registered_ids_spelled_as_the_registry_spells_them():
    """benchmark.py names its IDs without importing the environments (env_ids.py, below both);
    the versions it pins must be registered IDs of the families it means."""
    from circuit_gym import benchmark as B
    from circuit_gym.envs.registration import CIRCUIT, SINGLE_HEAD

    for model, key in (("toy", "Toy"), ("gpt2", "GPT2")):
        assert B.circuit_env(model) == CIRCUIT.env_id(key, "Multi", B.CIRCUIT_ENV_VERSION)
        assert B.multi_env_id(model) == SINGLE_HEAD.env_id(key, "Multi", int(B.ENV_VERSION[1:]))
        assert {B.circuit_env(model), B.multi_env_id(model)} <= set(gym.registry)
    assert "circuit_gym.envs" not in " ".join(_imports(ROOT / "circuit_gym" / "benchmark.py"))


# ------------------------------------------------------------------ command line
def test_circuit_gym_list_prints_one_line_per_current_id(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rows, footer = lines[0].split(), lines[1:-1], lines[-1]
    assert header == ["ID", "model", "tasks"]
    current = list_envs()
    assert [line.split()[0] for line in rows] == [r["id"] for r in current]
    for line, row in zip(rows, current, strict=True):
        assert line.split(None, 2)[1:] == [row["model"], ", ".join(row["tasks"])]
    assert footer.startswith(
        "184 current IDs (20 single-head ablation, 20 circuit building, 30 single-head ablation over the model zoo, "
        "30 circuit building over the model zoo, 6 single-head ablation on generated planted models, "
        "6 circuit building on generated planted models, 10 edge-circuit building, "
        "30 edge-circuit building over the model zoo, 6 edge-circuit building on generated planted models, "
        "6 knock-out on generated planted models, 20 knock-out over the model zoo)"
    )


def test_circuit_gym_list_all_shows_older_and_superseded_ids(capsys):
    assert main(["list", "--all", "--family", "single-head", "--notes"]) == 0
    out = capsys.readouterr().out
    ids = [line.split()[0] for line in out.splitlines()[1:] if line.startswith("CircuitDiscovery-")]
    assert ids == env_ids(all_versions=True, family="single-head")
    v0 = next(line for line in out.splitlines() if line.startswith("CircuitDiscovery-Toy-IOI-v0 "))
    assert v0.endswith("refused (cannot be reproduced): use CircuitDiscovery-Toy-IOI-v4")
    v2 = next(line for line in out.splitlines() if line.startswith("CircuitDiscovery-Toy-IOI-v2 "))
    assert v2.endswith("older: use CircuitDiscovery-Toy-IOI-v4")
    assert f"single-head v4: {version_notes('single-head', 4)}" in out


def test_doctor_counts_every_registered_id(capsys):
    assert main(["doctor", "--json"]) == 0
    ids = json.loads(capsys.readouterr().out)["environment_ids"]
    assert ids["all"] == len(REGISTERED)  # counted independently, from gymnasium's registry
    assert ids["current"] == 184 == sum(f["current"] for f in ids["by_family"].values())
    assert ids["by_family"]["circuit"] == {
        "current": 20,
        "all": sum(
            i.endswith("-Circuit-v0")
            and not ("-Zoo-" in i or "-ZooV2-" in i or "-ZooV3-" in i or "-Planted-" in i)
            for i in REGISTERED
        ),
    }
    assert main(["doctor"]) == 0
    assert "registered environment IDs: 184 current (20 single-head ablation, 20 circuit building, 30 " in (
        capsys.readouterr().out
    )
