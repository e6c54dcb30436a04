"""How long a scoring run will take, said before it starts.

From what the committed reference result files measured (``diagnostics.wall_seconds`` over the
episodes they played, public and private): a builtin that has a reference on the track costs
what that reference cost per episode; a sandboxed policy costs what the track's random
reference cost (the sandbox, the environment and the scorer's own curves dominate; a slow
policy adds its own time). Measured on the machine that scored the references, with whatever
else ran there: an estimate, not a promise.
"""

from __future__ import annotations

import json

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.references import load_manifest


def _transfer_episodes(definition: dict, n_private: int) -> int:
    """Episodes of a transfer track's run: every task on every public model, then the held-out
    tasks on the private model at ``n_private`` seeds (at most the track's number)."""
    models = len(definition["train_models"]) + len(definition["held_out_models"])
    tasks = len(definition["tasks"]) + len(definition["train_tasks"])
    private = min(n_private, definition["private_seeds_used"])
    return models * tasks * len(definition["seeds"]) + len(definition["tasks"]) * private


def episodes(track: str, n_private: int = 0) -> int:
    """Episodes a scoring run of ``track`` plays with ``n_private`` private seeds."""
    if track.startswith("transfer-"):
        return _transfer_episodes(B.transfer_definition(track.removeprefix("transfer-")), n_private)
    tasks = len(B.HELD_OUT_TASKS)
    if track == "circuit":
        return tasks * (len(B.CIRCUIT_EVAL_SEEDS) + min(n_private, B.CIRCUIT_PRIVATE_SEEDS))
    return tasks * (len(B.EVAL_SEEDS) + len(B.REPRO_SEEDS) + n_private)


def seconds_per_episode(track: str, builtin: str | None) -> tuple[float, str] | None:
    """(seconds per episode, which reference measured it), or None without a measurement."""
    references = load_manifest()[track]
    reference = references.get(builtin) if builtin else references.get("random")
    if reference is None or (builtin is not None and reference.builtin != builtin):
        return None
    result = json.loads(reference.result_path().read_text())
    prov, n_private = result["provenance"], (result.get("private") or {}).get("n_seeds", 0)
    if track.startswith("transfer-"):
        played = _transfer_episodes(prov, n_private)
    else:
        played = len(prov["tasks"]) * (len(prov["seeds"]) + len(prov.get("repro_seeds", ())) + n_private)
    return result["diagnostics"]["wall_seconds"] / played, f"{track}/{reference.name}"


def estimate(track: str, builtin: str | None, n_private: int = 0) -> str:
    """One line: how many episodes, and about how long they take."""
    n = episodes(track, n_private)
    measured = seconds_per_episode(track, builtin)
    if measured is None:
        return f"scoring {n} episodes; no committed reference measured {builtin!r} on the {track} track, so no estimate"
    per, source = measured
    total = n * per
    about = f"{total:.0f} s" if total < 90 else f"{total / 60:.0f} min"
    return f"scoring {n} episodes: about {about} ({per:.1f} s per episode, as the reference {source} took where it was scored)"
