"""The canary: does this checkout still give the reference entries' numbers?

For each reference of the manifest (``leaderboard/references.json``) the scorer plays the first
few evaluation episodes with the manifest's policy and checkpoint (a prefix of the scoring order,
so a policy that keeps state between calls sees the same calls as in the full run) and compares
the per-episode rows with the reference's committed result file (``compare.differences``: heads,
orders and pass counts exactly, floats to ``compare.ATOL`` / ``compare.RTOL``). A refactor that keeps the numbers
passes; one that moves them fails here in minutes, where a full rescore takes hours.
Every track of the table (``circuit_gym/leaderboard/tracks.py``) is played the same way,
through ``tracks.score_reference``.

    circuit-gym leaderboard canary            # every reference, every track
"""

from __future__ import annotations

import json
from pathlib import Path

from circuit_gym.leaderboard.compare import differences
from circuit_gym.leaderboard.provenance import REPO_ROOT
from circuit_gym.leaderboard.references import MANIFEST, TRACKS, Reference, load_manifest
from circuit_gym.leaderboard.tracks import TRACKS as _TRACK_TABLE
from circuit_gym.leaderboard.tracks import reference_request, score_reference, track

# Episodes per reference, per track (each row's canary_episodes): a circuit-track episode of exact
# greedy search costs ~2,000 passes.
CANARY_EPISODES = {t.name: t.canary_episodes for t in _TRACK_TABLE.values()}


def canary(reference: Reference, episodes: int | None = None, root: Path = REPO_ROOT) -> list[str]:
    """Differences between ``reference``'s first ``episodes`` rows (default: its track's
    ``canary_episodes``) re-scored now and its committed rows (empty: the canary passes)."""
    n = track(reference.track).canary_episodes if episodes is None else episodes
    committed = json.loads(reference.result_path(root).read_text())
    request = reference_request(reference.track, reference.policy, reference.checkpoint_path(root), reference.features,
                                sample=n, require_isolation=False)  # fmt: skip
    fresh = score_reference(reference.track, reference.name, request)
    if fresh["status"] != "sample":
        failure = fresh.get("failure") or {}
        return [
            f"{reference.track}/{reference.name}: the policy failed: {failure.get('type')}: {failure.get('reason')}"
        ]
    found = differences(
        _comparable(fresh["scores"]["episodes"]), _comparable(committed["scores"]["episodes"][:n]), "episodes"
    )
    return [f"{reference.track}/{reference.name}: {d}" for d in found]


def _comparable(rows: list[dict]) -> list[dict]:
    """The rows as the canary compares them, orders up to ties broken by float noise.

    A planted row's full ranking is left out: past the heads with an effect its tail is heads
    whose scores tie at zero up to float noise, ordered differently on another CPU (seen on this
    machine: position 84 of 144 of attribution's first episode), while its AUC against the truth,
    compared to tolerance, moves as soon as a truth head moves.

    An edge row's proposed circuit is compared as a set of edges (sorted names), not an order: a
    greedy reference's first edges follow near-equal gains (on an AVX-512 machine the retired
    ``greedy_eap_ig`` took positions 2-9 of zoo6's first episode in another order; since issue 58
    greedy breaks such ties by edge index, the committed rows by the prior's order and that CPU's
    rounding). Which edges it holds, and every float of the row (edge CPR and CMD of the ranking,
    the set's faithfulness, to tolerance), still move as soon as an order change reaches a size a
    score reads."""
    out = []
    for row in rows:
        row = {k: v for k, v in row.items() if not (k == "ranking" and "auc" in row)}
        if isinstance(row.get("circuit"), list) and "circuit_size" in row:
            row["circuit"] = sorted(row["circuit"])
        out.append(row)
    return out


def run_canary(manifest: Path = MANIFEST, tracks: tuple[str, ...] = TRACKS,
               root: Path = REPO_ROOT) -> dict[str, list[str]]:  # fmt: skip
    """``{"track/name": differences}`` for every reference of ``manifest`` on ``tracks``."""
    references = load_manifest(manifest)
    return {f"{t}/{name}": canary(ref, root=root) for t in tracks for name, ref in references[t].items()}
