"""Wrappers that take keys out of ``info``: for evaluation on held-out tasks, and for learners
whose buffers need every step's info in one shape."""

from __future__ import annotations

import gymnasium as gym

from circuit_gym.envs.circuit_env import ORACLE_INFO_KEYS

HIDDEN_KEYS = (*ORACLE_INFO_KEYS, "batch_index")


class WithoutInfoKeys(gym.Wrapper):
    """``info`` without the keys ``dropped`` (at reset and every step)."""

    def __init__(self, env: gym.Env, dropped: tuple[str, ...]) -> None:
        super().__init__(env)
        self.dropped = tuple(dropped)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, self._strip(info)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._strip(info)

    def _strip(self, info: dict) -> dict:
        return {k: v for k, v in info.items() if k not in self.dropped}


class HideOracleInfo(WithoutInfoKeys):
    """Remove the task name, oracle fields and batch index from ``info``.

    What a policy sees under evaluation on a held-out task: observations, rewards, the
    action mask and the damages of the ablated set. The observation itself never carries
    task identity.

    It also switches the oracle fields' computation off in the wrapped environment
    (``env.unwrapped.oracle_info = False``): from the second step of an episode on, they cost
    one exact ablation per head. Evaluators that need the oracle read the single-head table
    from ``env.unwrapped.episode.table``, which is unaffected.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env, HIDDEN_KEYS)
        if hasattr(env.unwrapped, "oracle_info"):
            env.unwrapped.oracle_info = False
