"""Test support for issue 44's attacks (tests/test_attacks.py, tests/test_attacks_other_tracks.py):
what a failure record of the private part may hold, and the leakers' checkpoint."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hostile_policies import LEAK_NUMBER, PRIVATE_MARK, PUBLIC_MARK

from circuit_gym.leaderboard import sandbox


def public_episodes_checkpoint(folder: Path, n: int) -> str:
    """The leakers' checkpoint: how many of their episodes are public (they leak in the next)."""
    path = folder / "public.json"
    path.write_text(json.dumps({"public_episodes": n}))
    return str(path)


def assert_sealed(result: dict, public_episodes: int, check: str) -> None:
    """A failure in the private part: fixed words and the public count (issue 58: not even which
    check failed, ``check`` here, nor the exception's type); no policy text (not the leakers'
    mark, not the numbers a check would quote), the public output at most."""
    assert result["status"] == "failed" and "scores" not in result and "private" not in result
    failure = result["failure"]
    assert PRIVATE_MARK not in json.dumps(result), failure
    assert not re.search(LEAK_NUMBER, json.dumps(failure)), failure
    assert set(failure) == {"type", "part", "public_episodes", "reason"}, failure
    assert (failure["type"], failure["part"], failure["public_episodes"]) == (
        "PolicyFailure",
        "private",
        public_episodes,
    )
    assert sandbox.CHECKS[check] not in failure["reason"], failure["reason"]
    fixed = (
        f"the policy failed in the private part, after {public_episodes} public episodes (which check it "
        "failed, and what it said or printed in the private part, are not recorded)"
    )
    assert failure["reason"].startswith(fixed), failure["reason"]
    tail = failure["reason"][len(fixed) :]
    assert not tail or PUBLIC_MARK in tail, tail
