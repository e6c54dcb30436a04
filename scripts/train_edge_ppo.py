"""Train the reference edge PPO (issue 43 item 1; ``circuit_gym/baselines/edge_ppo.py``).

    CIRCUIT_GYM_THREADS=1 nice -n 5 python scripts/train_edge_ppo.py --out runs/edge_ppo/seed0 --epochs 6

A run selected under an earlier rule goes on under the current one from a copy of its training
state (``edge_ppo.fork_run``; docs/circuit_envs.md, "Edge PPO")::

    python -c "from pathlib import Path; from circuit_gym.baselines.edge_ppo import fork_run; \
fork_run(Path('runs/edge_ppo/seed0'), Path('runs/edge_ppo/seed0_area'))"
    CIRCUIT_GYM_THREADS=1 nice -n 15 python scripts/train_edge_ppo.py --out runs/edge_ppo/seed0_area --epochs 60

One option per config field (``--candidates``, ``--budget``, ``--pool-size``...). The same command
again resumes from the run folder's last finished epoch; more ``--epochs`` extend the run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from circuit_gym.baselines import edge_ppo  # noqa: E402
from circuit_gym.models.loading import set_threads  # noqa: E402

if __name__ == "__main__":
    set_threads()  # $CIRCUIT_GYM_THREADS, else 1: torch's default 2 was 3-8x slower on 2 shared cores
    edge_ppo.main()
