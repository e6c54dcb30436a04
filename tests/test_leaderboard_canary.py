"""The canary (circuit_gym/leaderboard/canary.py): the committed references reproduce on this checkout, and a
change that moves a reference's numbers is caught without a full rescore.

Each reference's first episodes (2 on a single-head track, 1 on the others) are scored with the
manifest's policy and compared row by row with its committed result file.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.canary import canary
from circuit_gym.leaderboard.edge_benchmark import EDGE_TRACKS
from circuit_gym.leaderboard.provenance import REPO_ROOT
from circuit_gym.leaderboard.references import load_manifest

MANIFEST = load_manifest()
SINGLE_HEAD = B.transfer_benchmark(B.IN_FORCE).track(B.SINGLE_HEAD)
# In-process white-box references cost seconds; a sandboxed one's child imports torch and the
# package (some 10 s each on an idle machine) and exact greedy search plays ~2,000 passes: those
# run with `make test` (CI), not `make test-fast`.
CHEAP = {(SINGLE_HEAD, "greedy"), (B.transfer_benchmark(B.IN_FORCE).track(B.CIRCUIT), "attribution")}


def _marks(t: str, name: str) -> list:
    """The cheap ones compare this machine's numbers with the committed ones (scored on another
    machine): `make test` reruns them under a second configuration (marker numerics, issue 47).
    So do the edge track's white-box references (issue 58: greedy's order moved on an AVX-512
    machine), slow as they are; its sandboxed policies stay slow only."""
    if (t, name) in CHEAP:
        return [pytest.mark.numerics]
    if t in EDGE_TRACKS and MANIFEST[t][name].builtin:
        return [pytest.mark.slow, pytest.mark.numerics]
    return [pytest.mark.slow]


REFERENCES = [
    pytest.param(t, name, id=f"{t}/{name}", marks=_marks(t, name))
    for t, refs in MANIFEST.items()
    for name in refs
]


@pytest.mark.parametrize("track, name", REFERENCES)
def test_the_committed_reference_reproduces_on_this_checkout(track, name):
    assert canary(MANIFEST[track][name]) == []


def test_a_change_that_moves_greedys_numbers_fails_the_canary(monkeypatch):
    """greedy (white-box, in the scorer's process) with its estimates perturbed: other heads
    come first, and the canary names the rows and fields that moved."""
    from circuit_gym.solvers.white_box import BUILTINS

    honest = BUILTINS["greedy"]
    monkeypatch.setitem(BUILTINS, "greedy", dataclasses.replace(honest, rank=lambda env: -honest.rank(env)))
    found = canary(MANIFEST[SINGLE_HEAD]["greedy"])
    assert found and all(d.startswith(f"{SINGLE_HEAD}/greedy: episodes[") for d in found)
    assert any(".head_k1:" in d for d in found), found


@pytest.mark.slow
def test_other_weights_for_the_fixed_reference_fail_the_canary(tmp_path):
    fixed = MANIFEST[SINGLE_HEAD]["fixed"]
    scores = json.loads((REPO_ROOT / fixed.checkpoint).read_text())["scores"]
    other = tmp_path / "fixed_policy.json"
    other.write_text(json.dumps({"scores": np.roll(scores, 1).tolist()}))
    found = canary(dataclasses.replace(fixed, checkpoint=str(other)))
    assert any(".top5:" in d or ".top5[" in d for d in found), found


@pytest.mark.slow
def test_a_reference_served_by_a_moved_policy_passes_the_canary():
    """The manifest's policy spec is what runs now: the single-head track's random reference played
    by the circuit track's random policy (its rank_heads draws the same numbers from the same seed)
    gives the committed rows, so merging two policy modules needs one line of the manifest, no
    rescore."""
    random = MANIFEST[SINGLE_HEAD]["random"]
    moved = dataclasses.replace(random, policy="circuit_gym.baselines.circuit_random_policy:make_policy")
    assert canary(moved) == []


def test_the_canary_compares_an_edge_circuit_up_to_its_order():
    """Orders up to ties (issue 58): a committed row's circuit with two of its first edges
    swapped (what another CPU's rounding did to near-tied gains) passes; a circuit with one edge
    replaced fails, and so does a row whose CPR moved past tolerance."""
    from circuit_gym.leaderboard.canary import _comparable
    from circuit_gym.leaderboard.compare import differences

    committed = json.loads(MANIFEST[f"{B.IN_FORCE}-edges"]["eap_ig"].result_path().read_text())
    row = committed["scores"]["episodes"][0]
    swapped = {
        **row,
        "circuit": [row["circuit"][0], row["circuit"][2], row["circuit"][1], *row["circuit"][3:]],
    }
    assert swapped["circuit"] != row["circuit"]
    assert differences(_comparable([swapped]), _comparable([row])) == []
    other = {**row, "circuit": [*row["circuit"][:-1], "input->a0.h0<q>"]}
    assert other["circuit"][-1] not in row["circuit"]
    assert differences(_comparable([other]), _comparable([row]))
    moved = {**row, "cpr": row["cpr"] + 1e-3}
    assert differences(_comparable([moved]), _comparable([row]))
