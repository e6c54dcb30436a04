"""The circuit_gym leaderboard: sandboxed scoring on held-out tasks and a verified board."""
