"""Score the edge track's references (every ranking of the edge registry, and the edge PPO's
checkpoint) on the public part, write each result with its MIB export beside it, and add each to
the reviewed manifest (``leaderboard/references.json``'s track entry, the other tracks untouched).

    nice -n 10 python scripts/score_edge_references.py [--names eap random ...]
"""

from __future__ import annotations

import argparse
import json
import os

from circuit_gym.benchmark import IN_FORCE
from circuit_gym.leaderboard.edge_benchmark import EDGE_BENCHMARKS
from circuit_gym.leaderboard.edge_scorer import reference_names
from circuit_gym.leaderboard.edge_tables import write_mib_export
from circuit_gym.leaderboard.provenance import REPO_ROOT
from circuit_gym.leaderboard.references import MANIFEST, manifest_entry
from circuit_gym.leaderboard.scoring import write_result
from circuit_gym.leaderboard.tracks import Request, score_reference, track

# The edge PPO's checkpoints: seed 0's first selection kept the untrained network (docs/circuit_envs.md,
# "Edge PPO"), and its name says so; docs/results/edges/ppo is epoch 26 under the small-circuit area rule.
EDGE_PPOS = (
    ("edge_ppo_untrained", "circuit_gym.baselines.edge_ppo:load_policy", "docs/results/edges/ppo_untrained"),
    ("edge_ppo", "circuit_gym.baselines.edge_ppo:load_policy", "docs/results/edges/ppo"),
)


def add_to_manifest(track_name: str, name: str, entry: dict) -> None:
    """One entry of ``track_name`` into the manifest, every other line as it was."""
    data = json.loads(MANIFEST.read_text())
    data[track_name] = dict(sorted({**data.get(track_name, {}), name: entry}.items()))
    MANIFEST.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--track", default=EDGE_BENCHMARKS[IN_FORCE].track)
    parser.add_argument("--names", nargs="*", help="only these (default: every reference, then the edge PPO)")
    args = parser.parse_args()
    os.chdir(REPO_ROOT)
    todo = [(n, f"builtin:{n}", None) for n in reference_names()] + list(EDGE_PPOS)
    if args.names:  # in the order given
        todo = [t for n in args.names for t in todo if t[0] == n]
    for name, policy, checkpoint in todo:
        request = Request.of(policy, checkpoint=checkpoint)  # relative, as results record it
        result = score_reference(args.track, name, request)
        if result["status"] != "scored":
            print(f"{name}: {result['failure']}", flush=True)
            continue
        relative = (track(args.track).results_dir / f"{name}.json").relative_to(REPO_ROOT)
        write_result(result, REPO_ROOT / relative)
        write_mib_export(REPO_ROOT / relative)
        add_to_manifest(
            args.track, name, manifest_entry(result, policy, checkpoint, str(relative), REPO_ROOT)
        )
        print(f"{name}: {relative} ({result['diagnostics']['wall_seconds']:.0f} s)", flush=True)
        for line in track(args.track).headline(result):
            print(f"  {line}", flush=True)


if __name__ == "__main__":
    main()
