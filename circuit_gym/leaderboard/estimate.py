"""How long a scoring run will take, said before it starts: a model of the work.

``episodes x seconds per episode``. The episodes are the track's (``tracks.Track.episodes``, with
the private seeds asked for). The seconds per episode:

- a builtin with a committed reference on the track: what that reference took per episode where
  it was scored (its ``diagnostics.wall_seconds``; the references are scored with the oracle
  tables cached);
- a submitted policy: the track's measured cost (``tracks.Track.cost``: the random reference's
  policy, cold and warm cache), cold when this machine's sweep cache is empty; where the row has
  no measurement, what the track's random reference took where it was scored. The sandbox, the
  environment's tables and the scorer's own curves dominate; a slow policy adds its own time.

An estimate, not a promise: the machine and whatever else runs on it change it.
"""

from __future__ import annotations

from circuit_gym.ablation.cache import cache_dir
from circuit_gym.leaderboard.references import load_manifest
from circuit_gym.leaderboard.tracks import measured_seconds_per_episode, track


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def cache_is_empty() -> bool:
    """Whether this machine's sweep cache holds no table yet (the first run computes them all)."""
    directory = cache_dir()
    return not directory.is_dir() or not any(directory.iterdir())


def estimate(track_name: str, builtin: str | None, n_private: int = 0, cold: bool | None = None) -> str:
    """One line: how many episodes, and about how long they take (``cold``: whether the cache is
    cold; default: whether this machine's cache is empty)."""
    row = track(track_name)
    n = row.episodes(n_private)
    cold = cache_is_empty() if cold is None else cold
    per = row.cost.cold_s if cold else row.cost.warm_s
    if builtin is not None or per is None:
        name = builtin or "random"
        reference = load_manifest()[track_name].get(name)
        if reference is None or (builtin is not None and reference.builtin != builtin):
            return (
                f"scoring {n} episodes; no committed reference measured {name!r} on the {track_name} track, "
                "so no estimate"
            )
        per = measured_seconds_per_episode(track_name, reference.result_path())
        return (
            f"scoring {n} episodes: about {_duration(n * per)} ({per:.1f} s per episode, as the reference "
            f"{track_name}/{reference.name} took where it was scored)"
        )
    state = "a cold cache (the oracle tables are computed on first use)" if cold else "a warm cache"
    return (
        f"scoring {n} episodes: about {_duration(n * per)} on {state} ({per:.1f} s per episode, measured: "
        f"{row.cost.measured}; {row.cost.cold_s:.1f} s cold, {row.cost.warm_s:.1f} s warm)"
    )
