"""Solvers that live below both ``baselines/`` and ``leaderboard/``: the circuit track's episode
protocol (:mod:`~circuit_gym.solvers.episodes`) and the builtin white-box reference solvers with
their one registry (:mod:`~circuit_gym.solvers.white_box`)."""
