"""Where the board's data lives: the repository's top-level ``leaderboard/`` folder.

The leaderboard's code is the package ``circuit_gym.leaderboard``; its data (result files,
the reviewed reference manifest, the rendered pages) stays where users look for it, at the
top of the repository (CONTRIBUTING.md: "Rooms"). One place names that folder.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BOARD_DIR = REPO_ROOT / "leaderboard"
RESULTS_DIR = BOARD_DIR / "results"
