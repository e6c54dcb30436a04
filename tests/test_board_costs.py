"""Own compute on the board (issue 58 item 3): every track's public table shows a submitted
policy's CPU seconds per episode beside its LM passes; a builtin reference (it runs in the scorer)
shows '-'. Checked on constructed results, the numbers computed here by hand."""

from __future__ import annotations

from circuit_gym.leaderboard import costs
from circuit_gym.leaderboard.planted_tables import columns, planted_table

TRACK = "v8-planted"


def _result(name: str, passes: list[int], cpu: dict | None) -> dict:
    cell = {"precision": 1.0, "recall": 0.5, "auc": 0.75}
    return {"name": name, "scores": {"summary": {c: cell for c in columns(TRACK)},
                                     "episodes": [{"forward_passes": p} for p in passes]},
            "diagnostics": {"policy_cpu": cpu} if cpu is not None else {"wall_seconds": 9.0}}  # fmt: skip


def test_the_planted_table_shows_passes_and_policy_cpu_per_episode():
    submitted = _result("mine", [10, 20, 30, 40], {"measured": True, "calls_s": 3.0})
    reference = _result("acdc", [170, 170], None)
    lines = planted_table([submitted, reference], track=TRACK).splitlines()
    assert lines[0].endswith("| LM passes / episode | policy CPU s / episode |")
    mine = lines[2].split(" | ")
    assert mine[-2:] == ["25", "0.75 |"]  # (10+20+30+40)/4 passes; 3.0 s over 4 episodes
    assert lines[3].split(" | ")[-2:] == ["170", "- |"]
    secret = planted_table(
        [{**submitted, "private": {"scores": submitted["scores"]}}], secret=True, track=TRACK
    )
    assert "policy CPU" not in secret  # nothing the policy sets in the secret table


def test_an_unmeasured_or_empty_run_has_no_cpu_figure():
    assert (
        costs.policy_cpu_per_episode({"diagnostics": {"policy_cpu": {"measured": False, "calls_s": 1.0}}}, 4)
        is None
    )
    assert (
        costs.policy_cpu_per_episode({"diagnostics": {"policy_cpu": {"measured": True, "calls_s": 1.0}}}, 0)
        is None
    )
    assert costs.policy_cpu_per_episode({}, 4) is None
    assert costs.cpu_cell(0.0123) == "0.012" and costs.cpu_cell(None) == "-"


def test_the_edge_tables_show_policy_cpu_per_public_episode():
    import json
    from pathlib import Path

    from circuit_gym.leaderboard.edge_tables import edge_markdown, edge_row

    path = sorted((Path(__file__).resolve().parents[1] / "leaderboard/results/v8/edges").glob("*.json"))[0]
    entry = json.loads(path.read_text())
    entry["board"] = {"check": "verified", "reference": False}
    episodes = len(entry["scores"]["episodes"])
    entry["diagnostics"] = {"policy_cpu": {"measured": True, "calls_s": 2.0 * episodes}}
    row = edge_row(entry)
    assert row["policy_cpu"] == 2.0  # 2 s an episode, computed here
    table = edge_markdown([row], entry["track"]).splitlines()
    assert table[4].endswith("policy CPU s / episode |") and table[6].endswith("| 2 |")
