"""Old IDs keep their behaviour or are refused (Gymnasium's rule; issue 56 item 3, issue 59 item 8).

Every registered ID older than its newest version is read from gymnasium's registry (not from the
package's table) and checked against the version history below, written out by hand from the
version notes (``circuit_gym.envs.version_notes``): an ID either pins what its own version had
(model, tasks, planted generator) with the family's own class as entry point, or ``gym.make``
refuses it, naming the newest version. An older ID the history does not cover must at least
differ from its newest version. A silent substitution (an old ID building the newer environment,
as the single-head v0 IDs did under an ignored DeprecationWarning) fails here.
"""

from __future__ import annotations

import re
import warnings

import gymnasium as gym
import pytest
from gymnasium.envs.registration import find_highest_version, get_env_id, parse_env_id

import circuit_gym  # noqa: F401  (registers the IDs)

CLASSES = {  # the entry point of each kind of environment (circuit_gym/envs/*)
    "single-head": "circuit_gym.envs.circuit_env:CircuitDiscoveryEnv",
    "planted": "circuit_gym.envs.planted:PlantedEnv",
}
# Single-head ablation: the model behind "Toy" and the tasks of "Multi" per version (the notes of
# v1-v4: v2 moved to run D's 144-head model and benchmark v3's training tasks, v3 to benchmark v4's,
# v4 to run F's model and benchmark v5's). GPT2 stays GPT-2 small, and no version after v1 changed
# GPT2's single-task IDs: those keep v1's behaviour, which is also the newest's.
TOY_MODEL = {1: "tiny", 2: "toy_d", 3: "toy_d", 4: "toy"}
MULTI_TASKS = {
    1: ("induction", "ioi"),
    2: ("agreement", "docstring", "greater_than", "pronoun"),
    3: ("agreement", "docstring", "greater_than", "pronoun", "successor"),
    4: ("agreement", "docstring", "greater_than", "ioi", "pronoun"),
}
SINGLE_TASK = {"Induction": "induction", "IOI": "ioi", "Docstring": "docstring", "GreaterThan": "greater_than",
               "Successor": "successor", "Pronoun": "pronoun", "Agreement": "agreement", "Brackets": "brackets",
               "InductionSeen": "induction_seen"}  # fmt: skip
# Planted IDs: v0 is planted generator 2 (the v6 board's), v1 generator 3 (issue 41).
PLANTED_GENERATOR = {0: 2, 1: 3}
PLANTED_INNER = {"": "single-head", "-Circuit": "circuit", "-Edges": "edges"}
PLANTED_TASK = {"Induction": "planted_induction", "MultiHop": "planted_multihop", "Redundant": "planted_redundant",
                "Suppression": "planted_suppression", "SelfRepair": "planted_self_repair", "And": "planted_and"}  # fmt: skip
# Refused: single-head v0 ("first release"), whose code is gone.
REFUSED = re.compile(r"CircuitDiscovery-(Toy|GPT2)-(Induction|IOI|Docstring|Multi)-v0")


def _older_ids() -> list[tuple[str, str]]:
    """(older ID, newest ID) for every registered CircuitDiscovery ID below its newest version."""
    out = []
    for env_id in gym.registry:
        ns, name, version = parse_env_id(env_id)
        if not name.startswith("CircuitDiscovery-") or version is None:
            continue
        newest = find_highest_version(ns, name)
        if newest is not None and version < newest:
            out.append((env_id, get_env_id(ns, name, newest)))
    return sorted(out)


OLDER = _older_ids()


def _history(env_id: str) -> tuple[str, dict] | None:
    """(entry point, the kwargs its version pins) from the history above; None: not covered."""
    planted = re.fullmatch(r"CircuitDiscovery-Planted-(\w+?)(|-Circuit|-Edges)-v(\d+)", env_id)
    if planted:
        kind, suffix, version = planted.group(1), planted.group(2), int(planted.group(3))
        pinned = {"model": "planted", "tasks": (PLANTED_TASK[kind],), "inner": PLANTED_INNER[suffix],
                  "version": PLANTED_GENERATOR[version]}  # fmt: skip
        return CLASSES["planted"], pinned
    single = re.fullmatch(r"CircuitDiscovery-(Toy|GPT2)-(\w+)-v(\d+)", env_id)
    if single and int(single.group(3)) in TOY_MODEL:
        model_key, task_key, version = single.group(1), single.group(2), int(single.group(3))
        model = TOY_MODEL[version] if model_key == "Toy" else "gpt2"
        tasks = MULTI_TASKS[version] if task_key == "Multi" else (SINGLE_TASK[task_key],)
        return CLASSES["single-head"], {"model": model, "tasks": tasks}
    return None


def _make(env_id: str, **kwargs) -> gym.Env:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # gymnasium's "out of date": tested below
        return gym.make(env_id, **kwargs)


def test_the_refused_ids_are_the_eight_single_head_v0_ids():
    """The review found 48 older IDs, 8 of them (single-head v0) building v1's environment."""
    assert len(OLDER) >= 48
    assert sorted(old for old, _ in OLDER if REFUSED.fullmatch(old)) == sorted(
        f"CircuitDiscovery-{m}-{t}-v0"
        for m in ("Toy", "GPT2")
        for t in ("Induction", "IOI", "Docstring", "Multi")
    )


@pytest.mark.parametrize(("old", "newest"), OLDER, ids=[old for old, _ in OLDER])
def test_an_older_id_keeps_its_behaviour_or_is_refused(old, newest):
    spec, new_spec = gym.spec(old), gym.spec(newest)
    if REFUSED.fullmatch(old):
        with pytest.raises(gym.error.DeprecatedEnv, match=rf"{old} is refused.*Use {newest}, the newest"):
            _make(old, pool_size=2, batch_size=2)
        return
    history = _history(old)
    if history is None:  # a version the table above does not cover: at least not the newest's spec
        assert (spec.entry_point, spec.kwargs) != (new_spec.entry_point, new_spec.kwargs), (
            f"{old} silently builds {newest}: pin its own behaviour, refuse it, or add its history here"
        )
        return
    entry_point, pinned = history
    assert spec.entry_point == entry_point, f"{old} is built by {spec.entry_point}, not its own class"
    assert dict(spec.kwargs) == pinned, f"{old} does not pin its version's behaviour"
    new_history = _history(newest)
    assert new_history is not None and gym.spec(newest).kwargs == new_history[1]


def test_gpt2_single_task_ids_are_the_only_older_ids_equal_to_their_newest():
    """What the history says is unchanged (GPT2's single-task IDs since v1) and nothing else."""
    same = [
        old
        for old, new in OLDER
        if not REFUSED.fullmatch(old) and gym.spec(old).kwargs == gym.spec(new).kwargs
    ]
    assert same and all(re.fullmatch(r"CircuitDiscovery-GPT2-(?!Multi)\w+-v[123]", old) for old in same), same


@pytest.mark.parametrize("old", ["CircuitDiscovery-Toy-IOI-v0", "CircuitDiscovery-GPT2-Multi-v0"])
def test_a_refused_id_names_the_newest_version_and_no_other(old):
    """Issue 59: CircuitDiscovery-Toy-IOI-v0 told the user to use -v1; the newest is v4. Every
    warning and the error name the newest version only (GPT2's needs no weights: refused first)."""
    base = old.rsplit("-v", 1)[0]
    newest = get_env_id(None, base, find_highest_version(None, base))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(gym.error.DeprecatedEnv) as refused:
            gym.make(old)
    said = [str(w.message) for w in caught] + [str(refused.value)]
    versions = {v for text in said for v in re.findall(rf"{re.escape(base)}-v(\d+)", text)} - {"0"}
    assert newest.endswith("-v4") and newest in str(refused.value)
    assert versions == {"4"}, said
    assert any("upgrading to version `v4`" in text for text in said)  # gymnasium's own warning


def test_an_older_id_that_builds_warns_with_the_newest_version():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gym.make("CircuitDiscovery-Toy-IOI-v1", pool_size=2, batch_size=2)
    said = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert any("CircuitDiscovery-Toy-IOI-v1 is out of date" in s and "`v4`" in s for s in said), said
    assert env.unwrapped.model.cfg.n_layers * env.unwrapped.model.cfg.n_heads == 16  # v1's 4 x 4 model


# ------------------------------------------------------------------ retired board tracks (issue 56)
# Track names are IDs too: `leaderboard score --track NAME`, a result file's "track". A retired
# track's name is refused naming the benchmark in force, never answered by another track's row.
def _removed() -> dict[str, str]:
    from circuit_gym.leaderboard.tracks import REMOVED

    return REMOVED


@pytest.mark.parametrize("name", sorted(_removed()))
def test_a_retired_track_is_refused_naming_the_benchmark_in_force(name, capsys):
    from circuit_gym.benchmark import IN_FORCE
    from circuit_gym.cli import build_parser
    from circuit_gym.leaderboard import tracks

    assert name not in tracks.TRACKS
    with pytest.raises(ValueError) as refused:
        tracks.track(name)
    in_force = [t for t, row in tracks.TRACKS.items() if row.benchmark == IN_FORCE]
    assert f"benchmark {IN_FORCE}" in str(refused.value) and all(t in str(refused.value) for t in in_force)
    assert "docs/archive.md" in str(refused.value)
    for command in (["score", "--name", "x"], ["canary"], ["rescore-references"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["leaderboard", *command, "--track", name])
        assert f"benchmark {IN_FORCE}" in capsys.readouterr().err


def test_a_result_file_of_a_retired_track_is_refused_not_shown_under_another(tmp_path):
    """A result scored on a retired track (its provenance and content hash intact) is refused by
    the board's verification as a track it does not have, whatever its numbers."""
    import json

    from circuit_gym.leaderboard.provenance import content_hash
    from circuit_gym.leaderboard.verification import RefusedResultError, verify

    for name in _removed():
        result = {"name": "old", "track": name, "status": "scored", "provenance": {}, "scores": {}}
        result["content_hash"] = content_hash(result)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(result))
        with pytest.raises(RefusedResultError, match=f"unknown track '{name}'"):
            verify(path)
