"""Train the reference edge PPO (issue 43 item 1; ``circuit_gym/baselines/edge_ppo.py``).

    CIRCUIT_GYM_THREADS=1 nice -n 5 python scripts/train_edge_ppo.py --out runs/edge_ppo/seed0 --epochs 6

One option per config field (``--candidates``, ``--budget``, ``--pool-size``...). The same command
again resumes from the run folder's last finished epoch; more ``--epochs`` extend the run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.baselines import edge_ppo  # noqa: E402

if __name__ == "__main__":
    edge_ppo.main()
