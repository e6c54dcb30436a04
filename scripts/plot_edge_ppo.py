"""Plot an edge PPO run's curve (``circuit_gym/baselines/edge_ppo.py``): per epoch the selection
score (the small-circuit area on the held-back train batches) against EAP-IG's and the untrained
network's on the same batches, and the built circuit's faithfulness. ``--before`` adds the built
faithfulness of the run a fork started from (its epochs were selected under another rule, so it
has no area).

    python scripts/plot_edge_ppo.py runs/edge_ppo/seed0_area --before runs/edge_ppo/seed0 \\
        --out docs/results/edges/ppo/curve.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def epochs(curve: list[dict], steps_per_epoch: int) -> list[float]:
    return [p["env_steps"] / steps_per_epoch for p in curve]


def plot(run: Path, out: Path, before: Path | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = json.loads((run / "config.json").read_text())["steps_per_epoch"]
    curve = json.loads((run / "curve.json").read_text())
    fig, (area, built) = plt.subplots(1, 2, figsize=(10, 3.6))
    x = epochs(curve, steps)
    area.plot(x, [p["selection_score"] for p in curve], "o-", label="edge PPO")
    area.axhline(curve[0]["eap_ig_area"], linestyle="--", color="grey", label="EAP-IG")
    # the untrained network is the epoch-0 one (selection_reference builds it from the run's seed)
    area.plot([0], [curve[0]["untrained_area"]], "kx", label="untrained network (epoch 0)")
    area.set_xlim(-1, max(x) + 1)
    area.set(xlabel="epoch", ylabel="small-circuit area (mean f, sizes 1..budget)",
             title="selection score, held-back train batches")  # fmt: skip
    area.legend(fontsize=8)
    if before is not None:
        old = json.loads((before / "curve.json").read_text())
        built.plot(epochs(old, steps), [p["built_faithfulness"] for p in old], ".-", color="tab:gray",
                   label=f"{before.name} (selected by edge CPR)")  # fmt: skip
    built.plot(x, [p["built_faithfulness"] for p in curve], "o-", label=run.name)
    built.set(xlabel="epoch", ylabel="f of the built circuit", title="what the episodes built")
    built.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--before", type=Path, default=None)
    args = parser.parse_args()
    plot(args.run, args.out, args.before)


if __name__ == "__main__":
    main()
