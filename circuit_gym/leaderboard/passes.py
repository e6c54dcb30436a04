"""The leaderboard's compute measure: :class:`circuit_gym.passes.PassCounter` (in the core, shared
with the main job)."""

from __future__ import annotations

from circuit_gym.passes import PassCounter

__all__ = ["PassCounter"]
