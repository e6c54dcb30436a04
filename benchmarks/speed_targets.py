"""Every speed target of issues 46, 45 and 42 measured in one run, each beside its target.

Runs each measurement in sequence as a child process (each starts fresh, with an empty sweep
cache of its own), keeps each one's own result file in a sources folder, then reads those files
(never re-deriving a figure) and writes one JSON: the date, the load averages and the busiest
other processes before and after the run and each part, python and torch versions, and a list
of figures ``{"figure", "value", "unit", "target", "comparison", "met", "command", "source"}``.

Parts (``--parts``, default all):

- ``main_job``: ``circuit-gym run`` of the benchmark in force from an empty cache at the default
  budget (``benchmarks/profile_main_job.py --scale full``): wall seconds, target <= 600;
- ``attention``: the exact sweep's share of the 1-thread matmul rate, matmul attention path (SDPA
  beside it), the smallest over its tasks (``bench_attention.py --sweeps-only``), target >= 0.5;
- ``edges``: edge patching's share of the matmul rate (>= 0.3) and one edge CPR curve per
  episode (<= 1 s), the worst task (``bench_edges.py``);
- ``ppo``: env steps/s of each PPO stage (``bench_ppo.py``, ``OMP_NUM_THREADS=1``) against 3x
  the same benchmark run on the package as it was before issue 46's PPO work (commit
  :data:`BEFORE_46`, extracted with ``git archive`` into a temporary folder and imported from
  there);
- ``planted``: median wall seconds of a Planted reset on fresh seeds, single head and circuit
  (``scripts/planted_reset_timing.py --out``), target <= 0.5 each;
- ``score``: in a fresh ``git clone`` of this repository, README's "Write a policy" file written
  and README's score command run as ``python -m circuit_gym.cli ...`` from the clone (so the
  clone's package is imported; checked and recorded), cold cache then warm: cold wall <= 180 s,
  the printed estimate within 30% of the wall time on both; ``doctor``'s exit status and the
  models it reports missing, and cursor/ANSI codes in the redirected score log (each 0);
- ``render``: in a fresh ``git clone``, ``python -m circuit_gym.cli leaderboard render`` (no
  ``--rescore``) with an empty cache: wall seconds, target <= 30 (issue 59).

The idle run (about 25-30 minutes on the idle 2-core machine; writes
``benchmarks/results/speed_targets.json`` and its sources in ``benchmarks/results/speed_targets/``)::

    python benchmarks/speed_targets.py

``--quick`` is a smoke run (small budgets, a shrunk benchmark for the score; minutes): marked
``"quick": true`` and never written to the committed path. ``--from-sources DIR`` rebuilds the
figures from a sources folder without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from main_job_transfer import busiest_processes

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "speed_targets.json"
SOURCES = ROOT / "benchmarks" / "results" / "speed_targets"
# Issue 46's PPO benchmark landed in this commit, before any PPO speed-up: its package (and its
# bench_ppo.py, same arguments) measures the throughput the 3x target is relative to.
BEFORE_46 = "3e80e88"
PPO_SPEEDUP = 3.0
ESTIMATE_TOLERANCE = 0.30
PLANTED_RESETS = {  # scripts/planted_reset_timing.py's keys
    "single head": "whole reset on a fresh seed, CircuitDiscovery-Planted-MultiHop-v0",
    "circuit": "whole reset on a fresh seed, CircuitDiscovery-Planted-MultiHop-Circuit-v0",
}
# --quick's score: the benchmark in force shrunk in every process of the run (one seed, one
# training and one held-out model, one task each), as tests/test_readme_policy.py does. A
# sitecustomize runs before the working directory joins sys.path: it puts it first (as ``-m`` would)
# so that the clone's package is the one patched, not the installed one.
SHRINK = """import dataclasses, os, sys
sys.path.insert(0, os.getcwd())
import circuit_gym.benchmark as B
b = B.TRANSFER_BENCHMARKS[B.IN_FORCE]
m1, m2 = b.train_models[0], b.held_out_models[0]
served = set(b.tasks_of(m1)) & set(b.tasks_of(m2))
t1, t2 = (next(t for t in ts if t in served) for ts in (b.train_tasks, b.held_out_tasks))
B.TRANSFER_BENCHMARKS[B.IN_FORCE] = dataclasses.replace(
    b, train_models=(m1,), held_out_models=(m2,), train_tasks=(t1,), held_out_tasks=(t2,), seeds=(0,))
"""


class MissingSourceError(RuntimeError):
    """A sub-benchmark's result file is absent or lacks a field: no figure can be read from it."""


# --------------------------------------------------------------------------- figures (pure)
def met(value: float | None, target: float, comparison: str) -> bool | None:
    """Whether ``value`` meets ``target``; None when nothing was measured."""
    if comparison not in ("<=", ">="):
        raise ValueError(f"comparison must be '<=' or '>=', got {comparison!r}")
    if value is None:
        return None
    return value <= target if comparison == "<=" else value >= target


def figure(name: str, value: float | None, unit: str, target: float, comparison: str, command: str,
           source: str, **extra) -> dict:  # fmt: skip
    return {"figure": name, "value": value, "unit": unit, "target": target, "comparison": comparison,
            "met": met(value, target, comparison), "command": command, "source": source, **extra}  # fmt: skip


def estimate_error(estimate_s: float, wall_s: float) -> float:
    """How far the announced time is from the measured one, as a share of the measured one."""
    return abs(estimate_s - wall_s) / wall_s


def parse_estimate(log: str) -> dict:
    """The score command's announcement: ``scoring N episodes: about X s|min (... P s per
    episode``: the printed seconds and the model's own (episodes x seconds per episode)."""
    found = re.search(r"scoring (\d+) episodes: about (\d+) (s|min)\b", log)
    if found is None:
        raise MissingSourceError("the score log has no 'scoring N episodes: about X s|min' line")
    episodes, amount, unit = int(found[1]), float(found[2]), found[3]
    per = re.search(r"\(([\d.]+) s per episode", log[found.start() :])
    return {"line": log[found.start() :].splitlines()[0], "episodes": episodes,
            "printed_s": amount * (60 if unit == "min" else 1),
            "model_s": episodes * float(per[1]) if per else None}  # fmt: skip


def read_source(path: Path) -> dict:
    if not path.is_file():
        raise MissingSourceError(f"{_shown(path)} is missing: its part did not run or did not write it")
    return json.loads(path.read_text())


def _field(data: dict, *keys: str, where: Path):
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            raise MissingSourceError(f"{_shown(where)} has no {'.'.join(keys)}")
        data = data[key]
    return data


def main_job_figures(sources: Path, commands: dict) -> list[dict]:
    path = sources / "main_job.json"
    report = read_source(path)
    # The job's wall time plus its imports' CPU seconds (timed before the job starts): what a user waits.
    wall, startup = _field(report, "wall_seconds", where=path), _field(report, "startup_cpu", where=path)
    return [figure(f"main job: {_field(report, 'job', where=path)}, from an empty cache: "
                   "wall seconds with the imports", wall + startup, "s", 600, "<=", commands["main_job"],
                   _shown(path), job_wall_s=wall, imports_cpu_s=startup, scale=_field(report, "scale", where=path),
                   idle_estimate_s=report.get("idle_estimate", {}).get("wall_seconds"),
                   measured_idle=report.get("measured_idle"))]  # fmt: skip


def attention_figures(sources: Path, commands: dict) -> list[dict]:
    path = sources / "attention.json"
    sweeps = _field(read_source(path), "sweeps", where=path)
    if not sweeps:
        raise MissingSourceError(f"{_shown(path)} has no sweep")
    out = []
    for path_name, key in (("matmul attention", "matmul_share_of_1_thread_matmul"),
                           ("SDPA, beside it", "sdpa_share_of_1_thread_matmul")):  # fmt: skip
        shares = {r["task"]: r[key] for r in sweeps}
        out.append(figure(f"exact sweep, share of the 1-thread matmul rate ({path_name}; smallest over tasks)",
                          min(shares.values()), "share", 0.5, ">=", commands["attention"], _shown(path),
                          by_task=shares, clock="CPU time (process_time)"))  # fmt: skip
    return out


def edges_figures(sources: Path, commands: dict) -> list[dict]:
    path = sources / "edges.json"
    rows = _field(read_source(path), "results", where=path)
    if not rows:
        raise MissingSourceError(f"{_shown(path)} has no task")
    shares = {r["task"]: r["share_of_matmul"] for r in rows}
    curves = {r["task"]: r["curve_s"] for r in rows}
    return [figure("edge patching of one circuit on a 12 x 12 model, share of the 1-thread matmul rate "
                   "(smallest over tasks)", min(shares.values()), "share", 0.3, ">=", commands["edges"],
                   _shown(path), by_task=shares),
            figure("one edge CPR curve per episode, seconds (largest over tasks)", max(curves.values()), "s", 1.0,
                   "<=", commands["edges"], _shown(path), by_task=curves)]  # fmt: skip


def ppo_figures(sources: Path, commands: dict) -> list[dict]:
    path, before_path = sources / "ppo.json", sources / "ppo_before_46.json"
    now = {r["stage"]: r for r in _field(read_source(path), "rows", where=path)}
    before = {r["stage"]: r for r in _field(read_source(before_path), "rows", where=before_path)}
    out = []
    for stage, row in now.items():
        if stage not in before:
            raise MissingSourceError(f"{_shown(before_path)} has no stage {stage!r}")
        base = before[stage]["steps_per_s"]
        out.append(figure(f"PPO {stage} stage: env steps per second (target {PPO_SPEEDUP:g}x the rate before issue 46)",
                          row["steps_per_s"], "steps/s", PPO_SPEEDUP * base, ">=",
                          f"{commands['ppo']}; before: {commands['ppo_before_46']}", _shown(path),
                          before_46_steps_per_s=base, speedup=row["steps_per_s"] / base,
                          policy_share=row["policy_share"], env_share=row["env_share"],
                          before_46_source=_shown(before_path)))  # fmt: skip
    return out


def planted_figures(sources: Path, commands: dict) -> list[dict]:
    path = sources / "planted_reset.json"
    timings = _field(read_source(path), "timings", where=path)
    out = []
    for kind, key in PLANTED_RESETS.items():
        row = _field(timings, key, where=path)
        out.append(figure(f"planted reset of a fresh seed, {kind}: median wall seconds", row["wall_median"], "s",
                          0.5, "<=", commands["planted"], _shown(path), seeds=row["seeds"],
                          cpu_median_s=row["cpu_median"]))  # fmt: skip
    return out


def score_figures(sources: Path, commands: dict) -> list[dict]:
    path = sources / "score.json"
    record = read_source(path)
    cmd, src = commands["score"], _shown(path)
    out = []
    for run in ("cold", "warm"):
        r = _field(record, run, where=path)
        if r["returncode"] != 0:
            raise MissingSourceError(f"{src}: the {run} score exited {r['returncode']} (see its log)")
        estimate = parse_estimate(r["log"])
        if run == "cold":
            written = re.search(r"result written to (\S+)", r["log"])  # the track's folder: which benchmark
            out.append(figure("a submission scored with the defaults, empty cache: wall seconds", r["wall_s"], "s",
                              180, "<=", cmd, src, episodes=estimate["episodes"],
                              result_file=written[1] if written else None))  # fmt: skip
        out.append(figure(f"the score's printed estimate, {run} cache: |estimate - wall| / wall",
                          estimate_error(estimate["printed_s"], r["wall_s"]), "share", ESTIMATE_TOLERANCE, "<=",
                          cmd, src, wall_s=r["wall_s"], estimate_line=estimate["line"],
                          printed_s=estimate["printed_s"], model_s=estimate["model_s"],
                          model_error=None if estimate["model_s"] is None
                          else estimate_error(estimate["model_s"], r["wall_s"])))  # fmt: skip
    doctor = _field(record, "doctor", where=path)
    out += [figure("circuit-gym doctor in the clone: exit status", doctor["returncode"], "exit status", 0, "<=",
                   f"{record['python']} -m circuit_gym.cli doctor", src),
            figure("circuit-gym doctor in the clone: models reported missing", len(doctor["missing"]), "models", 0,
                   "<=", f"{record['python']} -m circuit_gym.cli doctor", src, missing=doctor["missing"]),
            figure("cursor/ANSI escape codes (\\x1b[) in the redirected score logs, cold and warm",
                   _field(record, "ansi_codes", where=path), "codes", 0, "<=", cmd, src)]  # fmt: skip
    return out


def render_figures(sources: Path, commands: dict) -> list[dict]:
    path = sources / "render.json"
    record = read_source(path)
    if record["returncode"] != 0:
        raise MissingSourceError(f"{_shown(path)}: render exited {record['returncode']} (see its log)")
    return [figure("leaderboard render without --rescore, fresh clone, empty cache: wall seconds", record["wall_s"],
                   "s", 30, "<=", commands["render"], _shown(path))]  # fmt: skip


FIGURES: dict[str, Callable[[Path, dict], list[dict]]] = {
    "main_job": main_job_figures, "attention": attention_figures, "edges": edges_figures, "ppo": ppo_figures,
    "planted": planted_figures, "score": score_figures, "render": render_figures,
}  # fmt: skip


def build_figures(parts: list[str], sources: Path, commands: dict,
                  failed: dict[str, str] | None = None) -> tuple[list[dict], list[dict]]:  # fmt: skip
    """Each part's figures, each with a stable ``key`` (``part-i``: docs select by it), and for
    each part whose sources are missing or whose run failed (``failed``: part -> error; its
    folder may still hold an older run's file, which must not be read as this run's), why."""
    figures, failures = [], []
    for part in parts:
        if part in (failed or {}):
            failures.append({"part": part, "error": failed[part]})
            continue
        try:
            found = FIGURES[part](sources, commands)
        except (MissingSourceError, KeyError) as err:
            failures.append({"part": part, "error": f"{type(err).__name__}: {err}"})
            continue
        figures += [{"key": f"{part}-{i}", **f} for i, f in enumerate(found)]
    return figures, failures


# --------------------------------------------------------------------------- the run
def child_args(sources: Path, quick: bool) -> dict[str, list[str]]:
    """Each child's arguments after ``python`` (scripts relative to the root, which is the cwd;
    ``ppo_before_46`` runs in the extracted folder, where the same relative script is its own)."""
    small = {"sweep": ["--repeats", "1", "--tasks", "ioi"] if quick else [],
             # two rounds, as the committed ppo.json: the two stages, then and now, in about 8 minutes idle
             "ppo": ["--collects", "1", "--pool-size", "1"] if quick else ["--collects", "2"]}  # fmt: skip
    return {
        "main_job": ["benchmarks/profile_main_job.py", "--scale", "quick" if quick else "full",
                     "--json", str(sources / "main_job.json")],
        "attention": ["benchmarks/bench_attention.py", "--sweeps-only", *small["sweep"],
                      "--json", str(sources / "attention.json")],
        "edges": ["benchmarks/bench_edges.py", *small["sweep"], "--json", str(sources / "edges.json")],
        "ppo": ["benchmarks/bench_ppo.py", *small["ppo"], "--json", str(sources / "ppo.json")],
        "ppo_before_46": ["benchmarks/bench_ppo.py", *small["ppo"], "--json", str(sources / "ppo_before_46.json")],
        "planted": ["scripts/planted_reset_timing.py", "--seeds", "2" if quick else "10",
                    "--out", str(sources / "planted_reset.json")],
    }  # fmt: skip


def commands_of(sources: Path, quick: bool) -> dict[str, str]:
    """Each part's command line as run, repository paths relative to the root."""
    shown = {
        k: "python " + " ".join(a).replace(f"{ROOT}/", "") for k, a in child_args(sources, quick).items()
    }
    shown["ppo"] = f"OMP_NUM_THREADS=1 {shown['ppo']}"
    shown["ppo_before_46"] = (
        f"(in git archive {BEFORE_46}, PYTHONPATH=that folder) OMP_NUM_THREADS=1 {shown['ppo_before_46']}"
    )
    shown["score"] = ("in a fresh git clone, README's myteam/policy.py written, then twice (cold, warm cache): python -m "
                      "circuit_gym.cli leaderboard score --name my-team --policy myteam.policy:make_policy"
                      + (" (benchmark shrunk by a sitecustomize: --quick)" if quick else ""))  # fmt: skip
    shown["render"] = "in a fresh git clone, empty cache: python -m circuit_gym.cli leaderboard render"
    return shown


def _env(**extra: str) -> dict:
    """This process's environment with ``extra`` set; an empty value removes the variable."""
    env = dict(os.environ, **extra)
    return {k: v for k, v in env.items() if v != ""}


def _child_env(**extra: str) -> dict:
    """A fresh empty sweep cache per child, no progress bars, nothing else changed."""
    cache = tempfile.mkdtemp(prefix="speed_targets_cache-")
    return _env(**{"CIRCUIT_GYM_CACHE": cache, "CIRCUIT_GYM_PROGRESS": "0", **extra})


def _run(argv: list[str], cwd: Path = ROOT, **extra: str) -> None:
    print(f"$ {' '.join(argv)}", flush=True)
    subprocess.run(argv, cwd=cwd, env=_child_env(**extra), check=True)


def run_part(part: str, sources: Path, quick: bool) -> None:
    args = child_args(sources, quick)
    if part == "score":
        (sources / "score.json").write_text(json.dumps(score_submission(quick), indent=1) + "\n")
    elif part == "render":
        (sources / "render.json").write_text(json.dumps(render_board(), indent=1) + "\n")
    elif part == "ppo":
        _run([sys.executable, *args["ppo"]], OMP_NUM_THREADS="1")
        with tempfile.TemporaryDirectory(prefix="before_46-") as old:
            _extract(BEFORE_46, Path(old))
            _imported_from(Path(old), _child_env(PYTHONPATH=old))
            _run([sys.executable, *args["ppo_before_46"]], cwd=Path(old), OMP_NUM_THREADS="1", PYTHONPATH=old)
    else:
        _run([sys.executable, *args[part]])


def _extract(commit: str, to: Path) -> None:
    archive = subprocess.run(["git", "archive", commit, "circuit_gym", "benchmarks"], cwd=ROOT, capture_output=True,
                             check=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(to)], input=archive, check=True)


def _imported_from(folder: Path, env: dict) -> str:
    """Where ``python`` run in ``folder`` imports circuit_gym from; RuntimeError unless inside it."""
    where = subprocess.run([sys.executable, "-c", "import circuit_gym; print(circuit_gym.__file__)"], cwd=folder,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    if not Path(where).resolve().is_relative_to(folder.resolve()):
        raise RuntimeError(f"python in {folder} imports circuit_gym from {where}, not from that folder")
    return where


def _readme_policy(readme: str) -> tuple[str, str]:
    """README's "Write a policy" section: the policy file's text and its score command."""
    section = readme[readme.index("## Write a policy") :].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    command = re.search(r"^circuit-gym (leaderboard score .*?)\s*$", section, re.M)
    if code is None or command is None:
        raise RuntimeError("README's 'Write a policy' section has no python block or no score command")
    return code[1], command[1]


def _fresh_clone(prefix: str) -> tuple[Path, Path]:
    """A new temporary folder and a ``git clone`` of this repository's HEAD inside it."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(work / "clone")], check=True)
    return work, work / "clone"


def score_submission(quick: bool) -> dict:
    """README's policy section followed in a fresh clone: score twice (cold, then warm cache), then doctor."""
    work, clone = _fresh_clone("speed_targets_score-")
    code, command = _readme_policy((clone / "README.md").read_text())
    (clone / "myteam").mkdir()
    (clone / "myteam" / "__init__.py").write_text("")
    (clone / "myteam" / "policy.py").write_text(code)
    # An empty cache of its own, the user's default progress, nothing on PYTHONPATH (--quick: the shrink).
    extra = {"CIRCUIT_GYM_CACHE": str(work / "cache"), "CIRCUIT_GYM_PROGRESS": "", "PYTHONPATH": ""}
    if quick:
        (work / "site").mkdir()
        (work / "site" / "sitecustomize.py").write_text(SHRINK)
        extra["PYTHONPATH"] = str(work / "site")
    env = _env(**extra)
    where = _imported_from(clone, env)
    argv = [sys.executable, "-m", "circuit_gym.cli", *command.split()]
    # "python": the interpreter by name, not this machine's path (the file is committed)
    record: dict = {"python": "python", "command": " ".join(argv[1:]), "readme_command": f"circuit-gym {command}",
                    "clone_commit": _git(clone, "rev-parse", "HEAD"), "imported_from": str(Path(where).relative_to(work)),
                    "quick": quick}  # fmt: skip
    for run in ("cold", "warm"):
        log = work / f"score_{run}.log"
        print(f"$ (in the clone, {run} cache) {' '.join(argv)} > {log} 2>&1", flush=True)
        start = time.perf_counter()
        with log.open("w") as fh:
            rc = subprocess.run(argv, cwd=clone, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
        text = log.read_text(errors="replace")
        shown = text[-4000:].replace(str(work), "<tmp>")  # the file is committed: no machine paths
        record[run] = {"wall_s": time.perf_counter() - start, "returncode": rc, "log": shown,
                       "log_bytes": len(text), "ansi": text.count("\x1b[")}  # fmt: skip
        print(text[-600:], flush=True)
    record["ansi_codes"] = record["cold"]["ansi"] + record["warm"]["ansi"]
    doctor = subprocess.run([sys.executable, "-m", "circuit_gym.cli", "doctor"], cwd=clone, env=env,
                            capture_output=True, text=True)  # fmt: skip
    models = [line.strip() for line in doctor.stdout.splitlines() if "sha256" in line]
    record["doctor"] = {"returncode": doctor.returncode, "model_lines": len(models),
                        "missing": [m for m in models if "sha256 missing" in m or "(0 files" in m],
                        "first_line": (doctor.stdout.splitlines() or [""])[0].replace(str(work), "<tmp>")}  # fmt: skip
    return record


def render_board() -> dict:
    """``leaderboard render`` (no ``--rescore``) in a fresh clone with an empty cache: what a user who
    just cloned waits for (issue 59's target: 30 s on the idle machine)."""
    work, clone = _fresh_clone("speed_targets_render-")
    env = _env(CIRCUIT_GYM_CACHE=str(work / "cache"), CIRCUIT_GYM_PROGRESS="", PYTHONPATH="")
    _imported_from(clone, env)
    argv = [sys.executable, "-m", "circuit_gym.cli", "leaderboard", "render"]
    print(f"$ (in the clone) {' '.join(argv)}", flush=True)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    log = (done.stdout + done.stderr)[-3000:].replace(str(work), "<tmp>")
    return {
        "wall_s": wall,
        "returncode": done.returncode,
        "log": log,
        "clone_commit": _git(clone, "rev-parse", "HEAD"),
    }


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def _shown(path: Path) -> str:
    """Repository paths relative to the root (committed files name them so)."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _machine() -> dict:
    return {"time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load": os.getloadavg(),
            "busiest": busiest_processes()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: small budgets, never the committed path"
    )
    parser.add_argument(
        "--parts", default=",".join(FIGURES), help="comma-separated subset (default: %(default)s)"
    )
    parser.add_argument("--out", type=Path, help=f"the JSON (default: {_shown(RESULTS)}; a temporary file with "
                        "--quick or a subset of --parts)")  # fmt: skip
    parser.add_argument(
        "--from-sources", type=Path, help="rebuild the figures from this sources folder; run nothing"
    )
    args = parser.parse_args()
    parts = args.parts.split(",")
    if unknown := set(parts) - set(FIGURES):
        parser.error(f"unknown parts {sorted(unknown)}; choose from {list(FIGURES)}")
    complete = not args.quick and parts == list(FIGURES) and args.from_sources is None
    scratch = Path(tempfile.mkdtemp(prefix="speed_targets-"))
    out = args.out or (RESULTS if complete else scratch / "speed_targets.json")
    if out.resolve() == RESULTS and not complete:
        parser.error(f"{_shown(RESULTS)} holds only a complete idle run (no --quick, every part)")
    sources = args.from_sources or (SOURCES if out.resolve() == RESULTS else scratch / "sources")
    sources.mkdir(parents=True, exist_ok=True)
    import torch

    report: dict = {"command": "python benchmarks/speed_targets.py " + " ".join(sys.argv[1:]), "quick": args.quick,
                    "python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
                    "nice": os.nice(0), "sources": _shown(sources), "before": _machine(), "parts": []}  # fmt: skip
    for part in [] if args.from_sources else parts:
        print(f"\n=== {part}", flush=True)
        entry: dict = {"part": part, "before": _machine()}
        start = time.perf_counter()
        try:
            run_part(part, sources, args.quick)
        except (subprocess.CalledProcessError, RuntimeError, OSError) as err:
            entry["error"] = f"{type(err).__name__}: {err}"
        entry.update(wall_s=time.perf_counter() - start, after=_machine())
        report["parts"].append(entry)
    report["after"] = _machine()
    failed = {e["part"]: e["error"] for e in report["parts"] if "error" in e}
    report["figures"], report["failures"] = build_figures(
        parts, sources, commands_of(sources, args.quick), failed
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print()
    for f in report["figures"]:
        verdict = {True: "met", False: "MISSED", None: "not measured"}[f["met"]]
        value = "-" if f["value"] is None else f"{f['value']:.4g}"
        print(
            f"{verdict:>12}  {f['figure']}: {value} {f['unit']} (target {f['comparison']} {f['target']:.4g})"
        )
    for f in report["failures"]:
        print(f"      FAILED  {f['part']}: {f['error']}")
    print(f"wrote {out}")
    sys.exit(1 if report["failures"] else 0)


if __name__ == "__main__":
    main()
