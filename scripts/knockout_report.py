"""Knock-out references on public planted seeds (issue 60): per kind, each reference's knock-out
area against exact greedy's, its backup recall and truth scores at K, and its passes.

    python scripts/knockout_report.py                       # seeds 0 1 2, every kind, K = 8
    python scripts/knockout_report.py --seeds 0 1 --kinds self_repair and --json out.json
    python scripts/knockout_report.py --merge a.json b.json    # one table from earlier runs' rows
    python scripts/knockout_report.py --zoo zoo9 --json out.json  # a zoo v3 member, its trained truth
    python scripts/knockout_report.py --sealed leaderboard/private/zoo_v3_private_a.enc --key ../shared/private/board.key \
        --secret-planted 8 --kinds self_repair and --no-greedy --json out.json   # maintainers only

Without ``--sealed`` only the board's **public** planted seeds (0-19, ``PlantedBenchmark.public_seeds``)
are accepted. ``--sealed FILE --key KEY`` is the maintainers' measurement on what no entry sees: the
sealed private zoo v3 model in FILE (every gated task whose pair its training log records, scored
against its trained truth) and, with ``--secret-planted N``, the first N secret planted models per
kind of benchmark v8's draw (``planted_scorer.private_model_seeds`` of ``v8-planted`` from the sealed
seed file's first seed). Both are opened in a private temporary directory, no table is written to
the disk cache, and only **aggregates** are printed or written (means and ranges over models: no
seed, head order or per-model row). Each
(kind, seed) plays the ``CircuitDiscovery-Planted-{Kind}-KnockOut-v0`` environment's batch 0 of the
test split (16 prompts, resample ablation); the references (``circuit_gym.solvers.knockout``) read
its runner; the curves are exact (one stacked pass of an order's prefixes).

``--zoo MEMBER`` measures a public zoo v3 member instead: every task it gates that records a backup
pair, on the knock-out environment of that model and task (the same batch), scored against the
trained truth (``circuit_gym.models.trained_truth``: the primary and its backup); the "kind" column
names the task.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402

import circuit_gym  # noqa: E402,F401  (registers the IDs)
from circuit_gym.circuits.knockout_scores import knockout_area, relative_area, truth_scores  # noqa: E402
from circuit_gym.edges.paired import paired_difference  # noqa: E402
from circuit_gym.embedded import ZOO_GENERATIONS  # noqa: E402
from circuit_gym.envs.knockout import KnockOutEnv  # noqa: E402
from circuit_gym.envs.registration import planted_knockout_id  # noqa: E402
from circuit_gym.models.cards import gated_tasks  # noqa: E402
from circuit_gym.models.loading import embedded_dir  # noqa: E402
from circuit_gym.models.planted.generator import truth_of  # noqa: E402
from circuit_gym.models.planted.versions import kinds_of  # noqa: E402
from circuit_gym.models.trained_truth import trained_truth  # noqa: E402
from circuit_gym.solvers.knockout import REFERENCES, knockout_curve, play_actions  # noqa: E402
from circuit_gym.tasks.planted import task_name  # noqa: E402

PUBLIC_SEEDS = range(20)  # circuit_gym.leaderboard.planted_scorer.PlantedBenchmark.public_seeds
GENERATOR = 3
KINDS = kinds_of(GENERATOR)
PRIVATE_KIND = "private_model"  # the sealed model's rows, pooled over its tasks
AGENT = "ppo"  # the row of the learned agent (--agent)


def measure(kind: str, seed: int, k: int, names: list[str], greedy: bool = True, agent=None) -> list[dict]:
    env = gym.make(planted_knockout_id(kind), seeds=[seed], split="test", pool_size=1, steps=k,
                   **_agent_env(agent))  # fmt: skip
    try:
        env.reset(seed=0, options={"model_seed": seed, "batch_index": 0})
        inner = env.unwrapped.current.unwrapped
        return measure_state(inner.state, truth_of(seed, GENERATOR), kind, seed, k, names, greedy, inner,
                             task_name(kind), agent)  # fmt: skip
    finally:
        env.close()


def _agent_env(agent) -> dict:
    """The environment arguments the agent was trained with (its observation's scores, no last
    observation), or none without an agent."""
    return {} if agent is None else {"scores": agent.scores, "observe_last": False}


def load_agent(checkpoint: Path):
    """The knock-out PPO kept in ``checkpoint`` (``knockout_policy.load_policy``), with the scores its
    observation was trained on."""
    from circuit_gym.baselines.knockout_policy import KnockOutPPOConfig, load_policy

    policy = load_policy(str(checkpoint))
    policy.scores = KnockOutPPOConfig(**json.loads((checkpoint / "config.json").read_text())).scores
    return policy


def measure_zoo(
    member: str, k: int, names: list[str], tasks: list[str] | None = None, greedy: bool = True
) -> list[dict]:
    """Every gated task of zoo v3 ``member`` that records a backup pair (module docstring), or
    those of ``tasks``."""
    truth = trained_truth(embedded_dir(member), member)
    rows = []
    for task in [t for t in truth.tasks if t in gated_tasks(member) and (tasks is None or t in tasks)]:
        env = KnockOutEnv(model=member, tasks=(task,), split="test", pool_size=1, steps=k)
        try:
            env.reset(seed=0, options={"batch_index": 0})
            rows += measure_state(env.state, truth, task, member, k, names, greedy)
        finally:
            env.close()
    return rows


def measure_sealed(sealed: Path, key: Path, k: int, names: list[str], secret_planted: int,
                   kinds: list[str], greedy: bool, agent=None, tasks: list[str] | None = None) -> list[dict]:  # fmt: skip
    """The private zoo v3 model in ``sealed`` (its gated tasks with a recorded pair) and, with
    ``secret_planted``, that many secret planted models per kind of v8's draw; rows keyed by
    ``kind`` (:data:`PRIVATE_KIND` for every task of the private model, pooled, or the planted kind)
    with ``seed`` None (module docstring)."""
    from circuit_gym.leaderboard.custody import open_private
    from circuit_gym.leaderboard.planted_scorer import PrivateCache, private_model_seeds
    from circuit_gym.leaderboard.scoring import read_private_seeds
    from circuit_gym.leaderboard.transfer_scorer import PRIVATE

    rows: list[dict] = []
    with open_private(sealed, key) as opened:
        truth = trained_truth(opened.model_dir, PRIVATE)
        card = json.loads((opened.model_dir / "card_metrics.json").read_text())
        gated = set(card["suite"]["included"])
        for task in [t for t in truth.tasks if t in gated and (tasks is None or t in tasks)]:
            env = KnockOutEnv(model=PRIVATE, model_path=str(opened.model_dir), tasks=(task,), split="test",
                              pool_size=1, steps=k, ablation="resample", cache=False, **_agent_env(agent))  # fmt: skip
            try:
                env.reset(seed=0, options={"batch_index": 0})
                got = measure_state(env.state, truth, task, None, k, names, greedy, env, task, agent)
                rows += [{**r, "kind": PRIVATE_KIND} for r in got]  # pooled over tasks: no per-task score
            finally:
                env.close()
            print(f"private model, {task}: done", file=sys.stderr, flush=True)
        if secret_planted:
            seeds = private_model_seeds(read_private_seeds(opened.seeds)[0], "v8-planted")[:secret_planted]
            cache = PrivateCache()  # the secret models' tables in a temporary cache, never the disk's
            try:
                with cache.scope():
                    for kind in kinds:
                        for i, seed in enumerate(seeds):
                            rows += [
                                {**r, "seed": None} for r in measure(kind, seed, k, names, greedy, agent)
                            ]
                            print(f"secret {kind} {i + 1}/{len(seeds)}: done", file=sys.stderr, flush=True)
            finally:
                cache.close()
    return rows


def aggregate(rows: list[dict]) -> list[dict]:
    """Per (kind, reference): the mean and range over models of each score (no seed, no order)."""
    out = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        for name in dict.fromkeys(r["reference"] for r in rows):
            got = [r for r in rows if r["kind"] == kind and r["reference"] == name]
            cell: dict = {"kind": kind, "reference": name, "models": len(got)}
            for c in ("area", "relative_area", "backup_recall", "recall", "precision", "auc", "passes"):
                x = np.asarray([r[c] for r in got], dtype=np.float64)
                x = x[np.isfinite(x)]
                cell[c] = (
                    None
                    if x.size == 0
                    else {"mean": float(x.mean()), "min": float(x.min()), "max": float(x.max())}
                )
            out.append(cell)
    return out


_EPISODES = itertools.count()  # an id per measured state: the key of paired differences


def measure_state(state, truth, kind: str, seed, k: int, names: list[str], greedy: bool = True,
                  env: KnockOutEnv | None = None, task: str | None = None, agent=None) -> list[dict]:  # fmt: skip
    """Each reference's order, curve and truth scores on one knock-out state (``kind``: the truth's key);
    ``greedy`` False: no exact greedy curve (its ~1,000 passes), the relative area NaN. With ``agent``
    (a knock-out policy: ``act(observation, mask)``), it plays ``env``'s episode of ``task`` too, as
    the row ``AGENT``, its passes the environment's count of what it read."""
    clean = state.clean_metric
    if not np.isfinite(clean) or clean <= 0:  # the behaviour is not there on this batch: nothing to knock out
        print(f"skipped {kind}: clean metric {clean:.3f} on this batch", file=sys.stderr, flush=True)
        return []
    greedy_curve = state.greedy_curve(k)[1] if greedy else None
    episode, n_total = next(_EPISODES), state.runner.n_layers * state.runner.n_heads
    played = []
    for name in names:
        start = time.perf_counter()
        run = REFERENCES[name](state, k)
        played.append((name, run.order, knockout_curve(state, run.order).tolist(), run.passes, start))
    if agent is not None:
        start = time.perf_counter()
        got = play_actions(env, task, 0, agent.act)
        played.append((AGENT, got.order, list(got.metrics), got.passes, start))
    rows = []
    for name, order, curve, passes, start in played:
        rows.append({"kind": kind, "seed": seed, "episode": episode, "reference": name, "order": list(order),
                     "passes": passes, "clean": clean, "curve": curve, "area": knockout_area(curve, clean, k),
                     "relative_area": float("nan") if greedy_curve is None else relative_area(curve, greedy_curve, clean, k),
                     **truth_scores(order, truth.circuit(kind), truth.backups(kind), n_total),
                     "seconds": time.perf_counter() - start})  # fmt: skip
    return rows


def paired_versus(rows: list[dict], entry: str, reference: str) -> dict:
    """Per kind and over all: ``entry - reference`` of the knock-out area (and backup recall) over the
    episodes both played, mean and 95% t-interval (``circuit_gym.edges.paired.paired_difference``)."""
    out: dict = {}
    for key in (*dict.fromkeys(r["kind"] for r in rows), "all"):
        sel = [r for r in rows if key in ("all", r["kind"])]
        of = {name: {r["episode"]: r for r in sel if r["reference"] == name} for name in (entry, reference)}
        out[key] = {m: paired_difference({e: r[m] for e, r in of[entry].items() if np.isfinite(r[m])},
                                         {e: r[m] for e, r in of[reference].items() if np.isfinite(r[m])})
                    for m in ("area", "backup_recall")}  # fmt: skip
    return out


def _cell(values: list[float]) -> str:
    """Mean over seeds and, with several seeds, their range (a few seeds: no interval is honest)."""
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=np.float64)
    if x.size == 0:
        return "-"
    lo, hi = f"{x.min():.2f}", f"{x.max():.2f}"
    return f"{x.mean():.2f}" + (f" ({lo} to {hi})" if lo != hi else "")


def versus_lines(versus: dict) -> str:
    """The agent minus conditional attribution, per kind: area and backup recall, [95% interval]."""

    def cell(d: dict) -> str:
        lo, hi = d["ci95"] if d["ci95"] is not None else (float("nan"), float("nan"))
        return f"{d['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}] (n={d['n']})"

    return "\n".join(f"{AGENT} - conditional_attribution, {kind}: area {cell(v['area'])}, backup recall "
                     f"{cell(v['backup_recall'])}" for kind, v in versus.items())  # fmt: skip


def table(rows: list[dict], kinds: list[str], names: list[str]) -> str:
    lines = ["| kind | reference | area | area / greedy | backup recall | recall | precision | AUC | passes |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for kind in kinds:
        for name in names:
            got = [r for r in rows if r["kind"] == kind and r["reference"] == name]
            cells = [
                _cell([r.get(c, float("nan")) for r in got])
                for c in ("area", "relative_area", "backup_recall", "recall", "precision", "auc")
            ]
            lines.append(
                f"| {kind} | {name} | "
                + " | ".join(cells)
                + f" | {np.mean([r['passes'] for r in got]):.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS))
    parser.add_argument("--references", nargs="+", default=list(REFERENCES))
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--json", type=Path, default=None, help="write every row here")
    parser.add_argument(
        "--merge", type=Path, nargs="+", default=None, help="print the table of these runs' rows"
    )
    parser.add_argument("--zoo", default=None, help="a public zoo v3 member instead of planted seeds")
    parser.add_argument("--tasks", nargs="+", default=None, help="with --zoo or --sealed: only these tasks")
    parser.add_argument(
        "--sealed", type=Path, default=None, help="a sealed private zoo v3 model (maintainers)"
    )
    parser.add_argument("--key", type=Path, default=None, help="with --sealed: the maintainers' key")
    parser.add_argument("--secret-planted", type=int, default=0,
                        help="with --sealed: secret planted models per kind (v8's draw from its seed file)")  # fmt: skip
    parser.add_argument("--no-greedy", action="store_true", help="skip exact greedy's curve (area NaN)")
    parser.add_argument("--agent", type=Path, default=None,
                        help="a knock-out PPO run folder: its kept policy plays every episode too, paired "
                             "with conditional attribution")  # fmt: skip
    args = parser.parse_args(argv)
    agent = load_agent(args.agent) if args.agent is not None else None
    if args.sealed is not None:
        if args.key is None:
            parser.error("--sealed needs --key (the maintainers' key)")
        unknown = sorted(set(args.kinds) - set(KINDS)) + sorted(set(args.references) - set(REFERENCES))
        if unknown:
            parser.error(f"unknown kinds or references: {unknown}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = measure_sealed(args.sealed, args.key, args.k, args.references, args.secret_planted, args.kinds,
                                  not args.no_greedy, agent, args.tasks)  # fmt: skip
        cells = aggregate(rows)
        versus = paired_versus(rows, AGENT, "conditional_attribution") if agent is not None else None
        print(f"K = {args.k}, sealed private model {args.sealed.name} and {args.secret_planted} secret planted "
              "models per kind; test split batch 0 (16 prompts); mean (range over models)")  # fmt: skip
        names = [*args.references, *([AGENT] if agent is not None else [])]
        print(table(rows, list(dict.fromkeys(r["kind"] for r in rows)), names))
        if versus is not None:
            print(versus_lines(versus))
        if args.json is not None:
            args.json.write_text(json.dumps({"sealed": args.sealed.name, "k": args.k, "agent": str(args.agent),
                                             "secret_planted_per_kind": args.secret_planted, "cells": cells,
                                             "agent_minus_conditional_attribution": versus}, indent=1))  # fmt: skip
        return 0
    if args.zoo is not None:
        if args.zoo not in ZOO_GENERATIONS.get("v3", ()):
            parser.error(
                f"--zoo takes a public zoo v3 member {ZOO_GENERATIONS.get('v3', ())}, got {args.zoo!r}"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = measure_zoo(args.zoo, args.k, args.references, args.tasks, not args.no_greedy)
        tasks = list(dict.fromkeys(r["kind"] for r in rows))
        print(
            f"K = {args.k}, {args.zoo}, every gated task with a recorded pair, test split batch 0 (16 prompts)"
        )
        print(table(rows, tasks, args.references))
        if args.json is not None:
            args.json.write_text(json.dumps(rows, indent=1))
        return 0
    if args.merge:
        rows = [row for path in args.merge for row in json.loads(path.read_text())]
        kinds = list(dict.fromkeys(r["kind"] for r in rows))
        names = [n for n in REFERENCES if any(r["reference"] == n for r in rows)]
        seeds = sorted({r["seed"] for r in rows})
        print(f"K = {max(len(r['curve']) for r in rows)}, public planted seeds {seeds}, generator {GENERATOR}, test split batch 0 "
              "(16 prompts); mean (range over seeds)")  # fmt: skip
        print(table(rows, kinds, names))
        return 0
    bad = [s for s in args.seeds if s not in PUBLIC_SEEDS]
    if bad:
        parser.error(f"only public planted seeds (0-19) are measured here, got {bad}")
    unknown = sorted(set(args.kinds) - set(KINDS)) + sorted(set(args.references) - set(REFERENCES))
    if unknown:
        parser.error(f"unknown kinds or references: {unknown}")
    rows: list[dict] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in args.kinds:
            for seed in args.seeds:
                start = time.perf_counter()
                rows += measure(kind, seed, args.k, args.references)
                print(f"{kind} seed {seed}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print(f"K = {args.k}, public planted seeds {args.seeds}, generator {GENERATOR}, test split batch 0 (16 prompts); "
          "mean (range over seeds)")  # fmt: skip
    print(table(rows, args.kinds, args.references))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
