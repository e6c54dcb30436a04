"""README's "Write a policy" section, followed literally, ends with the entry on the board of the
benchmark in force.

In a temporary copy of the repository: write README's policy file where its comment says, run
README's commands as written (``circuit-gym`` is ``python -m circuit_gym.cli`` of the copy), and
read the copy's rendered board. The benchmark is made small (one seed, two public models, two
tasks) by a ``sitecustomize`` that patches ``circuit_gym.benchmark`` in every process of the run,
so the copy's committed results of that benchmark's transfer tracks, scored on the full
benchmark, are stale there and are left out with their manifest entries; everything else is the
repository's own and must still verify.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from circuit_gym import benchmark as B
from circuit_gym.reporting.transfer_tables import transfer_heading

ROOT = Path(__file__).resolve().parents[1]
# The benchmark in force's row, shrunk (the scorer reads the row: benchmark.TRANSFER_BENCHMARKS)
SMALL = """import dataclasses

import circuit_gym.benchmark as B

bench = B.TRANSFER_BENCHMARKS[B.IN_FORCE]
m1, m2 = bench.train_models[0], bench.held_out_models[0]
both = set(bench.tasks_of(m1)) & set(bench.tasks_of(m2))  # tasks both models serve (their cards' gates)
t1, t2 = (next(t for t in ts if t in both) for ts in (bench.train_tasks, bench.held_out_tasks))
B.TRANSFER_BENCHMARKS[B.IN_FORCE] = dataclasses.replace(
    bench, train_models=(m1,), held_out_models=(m2,), train_tasks=(t1,), held_out_tasks=(t2,), seeds=(0,))
"""
BENCH = B.transfer_benchmark(B.IN_FORCE)
TRACK = BENCH.track(B.SINGLE_HEAD)
FOLDER = f"leaderboard/results/{BENCH.results_folder}"


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    return text[text.index("## Write a policy") :].split("\n## ", 1)[0]


def _copy_repository(to: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode()  # fmt: skip
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)


def _without_in_force(copy: Path) -> None:
    """The copy's results and references of the benchmark in force's transfer tracks: scored on the
    full benchmark, stale on the small one."""
    manifest = copy / "leaderboard" / "references.json"
    data = json.loads(manifest.read_text())
    for kind in (B.SINGLE_HEAD, B.CIRCUIT):
        data[BENCH.track(kind)] = {}
    manifest.write_text(json.dumps(data, indent=1) + "\n")
    for folder in (copy / FOLDER, copy / FOLDER / "circuit"):
        for result in folder.glob("*.json"):
            result.unlink()


@pytest.mark.slow
def test_readmes_policy_section_followed_literally_puts_the_entry_on_the_board_in_force(tmp_path):
    section = _section()
    copy = tmp_path / "repo"
    _copy_repository(copy)
    _without_in_force(copy)
    python_block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    where = re.search(r"# in (\S+\.py), beside an empty (\S+\.py)", python_block)
    (copy / where.group(1)).parent.mkdir(parents=True, exist_ok=True)
    (copy / where.group(1)).write_text(python_block)
    (copy / where.group(2)).write_text("")
    patch = tmp_path / "small"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(SMALL)
    env = {**os.environ, "PYTHONPATH": f"{patch}{os.pathsep}{copy}", "CIRCUIT_GYM_PROGRESS": "0"}
    commands = [
        line.split("#", 1)[0] for line in re.search(r"```bash\n(.*?)```", section, re.S).group(1).splitlines()
    ]
    outputs = []
    for command in filter(str.strip, commands):
        argv = shlex.split(command)
        assert argv[0] == "circuit-gym", command
        run = subprocess.run([sys.executable, "-m", "circuit_gym.cli", *argv[1:]], cwd=copy, env=env,
                             capture_output=True, text=True, timeout=1800)  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        outputs.append((run.stdout, run.stderr))
    (score, estimate), (render, _) = outputs
    assert estimate.startswith(
        "scoring 4 episodes: about "
    )  # said before it ran: 2 models x 2 tasks x 1 seed
    assert f"result written to {FOLDER}/my-team.json" in score
    entry = json.loads((copy / FOLDER / "my-team.json").read_text())
    assert entry["track"] == TRACK and entry["status"] == "scored"
    assert re.search(rf"^read 1 result file from {re.escape(FOLDER)}$", render, re.M), render
    assert re.search(rf"^{TRACK}: 1 entries: my-team: hash-checked$", render, re.M), render
    board = (copy / "leaderboard" / "README.md").read_text()
    transfer = board[board.index(f"### {transfer_heading(TRACK)}") :].split("\n### ", 1)[0]
    # a newcomer has no private score: shown with its public numbers and the awaiting marker (issue 59)
    assert "| my-team (awaiting the maintainers' private score; placed on its public scores) |" in transfer
