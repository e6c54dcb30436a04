"""PettingZoo environments: one agent per layer, finding redundant heads together.

from circuit_gym.multiagent import parallel_env, env
par = parallel_env(model="toy", task="ioi")   # ParallelEnv
aec = env(model="toy", task="ioi")            # AEC form, through PettingZoo's wrapper
"""

from __future__ import annotations

from pettingzoo.utils.conversions import parallel_to_aec

from circuit_gym.multiagent.parallel import CircuitParallelEnv


def parallel_env(**kwargs) -> CircuitParallelEnv:
    """The parallel environment; keyword arguments as in :class:`CircuitParallelEnv`."""
    return CircuitParallelEnv(**kwargs)


def env(**kwargs):
    """The AEC form of :func:`parallel_env` (PettingZoo's ``parallel_to_aec``)."""
    return parallel_to_aec(CircuitParallelEnv(**kwargs))


__all__ = ["CircuitParallelEnv", "env", "parallel_env"]
