"""Train the Planted track's ``ppo_planted`` entry: :mod:`circuit_gym.baselines.planted_ppo` (its
docstring has the recipe; ``--help`` lists the options).

    nice -n 10 env OMP_NUM_THREADS=1 python scripts/train_planted_ppo.py --out runs/planted/ppo
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.baselines.planted_ppo import main  # noqa: E402

if __name__ == "__main__":
    main()
