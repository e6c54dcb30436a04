"""What the head environments (single head, circuit building) do the same way: render modes, the
action mask as booleans, and ``render`` by mode. Each subclass defines ``action_mask()`` (int8),
``_render_text()`` and ``_render_rgb()``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class HeadEnv(gym.Env):
    """Base of :class:`~circuit_gym.envs.circuit_env.CircuitDiscoveryEnv` and
    :class:`~circuit_gym.envs.circuit_building.CircuitBuildingEnv`."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def action_mask(self) -> np.ndarray:
        raise NotImplementedError

    def action_masks(self) -> np.ndarray:
        """The legal actions as booleans (sb3-contrib's ``MaskablePPO`` convention): ``info["action_mask"]``."""
        return self.action_mask().astype(bool)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode == "ansi":
            return self._render_text()
        if self.render_mode == "rgb_array":
            return self._render_rgb()
        return None

    def _render_text(self) -> str:
        raise NotImplementedError

    def _render_rgb(self) -> np.ndarray:
        raise NotImplementedError
