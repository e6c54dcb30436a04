"""Moved: the benchmark definition is :mod:`circuit_gym.benchmark` (below both ``baselines/`` and
``leaderboard/``, issue 30). This name stays an alias of that module, the same module object, so
old imports keep working and a test's patch of either name patches both."""

import sys

from circuit_gym import benchmark

sys.modules[__name__] = benchmark
