"""The generated tables of the docs (``<!--table NAME-->`` blocks): one function per table, each
rendered from committed result files (:data:`TABLES`: name -> function)."""

from __future__ import annotations

from collections.abc import Callable

from circuit_gym.docs_numbers.engine import ROOT, fmt, in_fresh_interpreter, load, source_path


def _row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def _ci(block: dict, key: str = "recovery", ci: str = "ci95", spec: str = ".3f") -> str:
    return f"{fmt(block[key], spec)} {fmt(block[ci], '[.2f]')}"


SOLVER_NAMES = {
    "random": "random",
    "fixed": "fixed (memoriser)",
    "greedy": "greedy (white-box)",
    "ppo": "PPO",
}


def pooled_recovery() -> str:
    """Seed 0's pooled recovery per solver: held-out and training tasks, best-of-1 and -5."""
    seed0 = load(source_path("seeds"))["per_seed"]["0"]
    lines = [_row(["solver", "held-out best-of-1", "held-out best-of-5", "training tasks (eval) best-of-1",
                   "training tasks (eval) best-of-5"]), _row(["---"] * 5)]  # fmt: skip
    for solver, name in SOLVER_NAMES.items():
        keys = ("held_out_k1", "held_out_k5", "train_k1", "train_k5")
        lines.append(_row([name, *(_ci(seed0[solver][k]) for k in keys)]))
    return "\n".join(lines)


CIRCUIT_SOLVERS = {
    "acdc": "ACDC (white-box, ~{acdc} partial passes / episode)",
    "eap_ig": "EAP-IG (white-box, gradients)",
    "greedy": "greedy (attribution patching)",
    "ppo": "PPO (observations only)",
    "random": "random",
    "fixed": "fixed (memoriser)",
}


def circuit_scores() -> str:
    """The main job's CPR / CMD per held-out task and solver (single-head solvers' preferences)."""
    circuits = load(source_path("results"))["circuits"]
    tasks = list(circuits["tasks"])
    acdc = fmt(circuits["white_box_passes_per_episode"]["acdc"], ",.0f")
    lines = [_row(["solver", *(f"{t} CPR / CMD" for t in tasks)]), _row(["---"] * (len(tasks) + 1))]
    for solver, name in CIRCUIT_SOLVERS.items():
        cells = [f"{_ci(s, 'cpr', 'cpr_ci95', '.2f')} / {_ci(s, 'cmd', 'cmd_ci95', '.2f')}"
                 for s in (circuits["tasks"][t][solver] for t in tasks)]  # fmt: skip
        lines.append(_row([name.format(acdc=acdc), *cells]))
    return "\n".join(lines)


def _circuit_track_table(detail: bool) -> str:
    """The circuit-building track over the held-out tasks: references, PPO's seeds, random; with
    ``detail``, also the built circuit's faithfulness and size, and every seed's CPR."""
    rows = [r for r in load(source_path("track"))["rows"] if r["task"] == "all"]
    by = {r["solver"]: r for r in rows}
    ppo = [r for r in rows if r["solver"] == "ppo" or r["solver"].startswith("ppo_seed")]
    extra = ["f of the built circuit", "heads"] if detail else []
    lines = [_row(["solver", "CPR (3 held-out tasks)", "CMD", *extra, "forward passes / episode"]),
             _row(["---"] * (4 + len(extra)))]  # fmt: skip

    def row(name: str, cpr: str, values: list[dict]) -> str:
        def mean(key: str) -> float:
            return sum(r[key] for r in values) / len(values)

        more = [fmt(mean("faithfulness")), fmt(mean("circuit_size"), ".3g")] if detail else []
        return _row([name, cpr, fmt(mean("cmd")), *more, fmt(mean("forward_passes"), ",.0f")])

    for solver, name in (("greedy_search", "exact greedy search (upper reference)"),
                         ("attribution", "attribution insertion")):  # fmt: skip
        lines.append(row(name, _ci(by[solver], "cpr", "cpr_ci95"), [by[solver]]))
    cprs = [r["cpr"] for r in ppo]
    spread = ("seeds " + ", ".join(fmt(c) for c in cprs)) if detail else f"{fmt(min(cprs))}-{fmt(max(cprs))}"
    lines.append(row(f"PPO, mean of seeds 0-{len(ppo) - 1}", f"{fmt(sum(cprs) / len(cprs))} ({spread})", ppo))
    lines.append(row("random insertion", _ci(by["random"], "cpr", "cpr_ci95"), [by["random"]]))
    return "\n".join(lines)


def circuit_track() -> str:
    """The circuit-building track (README's short table)."""
    return _circuit_track_table(detail=False)


def circuit_track_detail() -> str:
    """The circuit-building track with the built circuits and every seed (docs/circuit_envs.md)."""
    return _circuit_track_table(detail=True)


def circuit_track_tasks() -> str:
    """Per held-out task: CPR of the references and the range over PPO's seeds."""
    rows = load(source_path("track"))["rows"]
    tasks = [t for t in dict.fromkeys(r["task"] for r in rows) if t != "all"]
    lines = [_row(["task", "exact greedy search", "attribution insertion", "PPO (seeds, min-max)", "random"]),
             _row(["---"] * 5)]  # fmt: skip
    for task in tasks:
        by = {r["solver"]: r["cpr"] for r in rows if r["task"] == task}
        ppo = [c for solver, c in by.items() if solver == "ppo" or solver.startswith("ppo_seed")]
        lines.append(_row([task, fmt(by["greedy_search"]), fmt(by["attribution"]),
                           f"{fmt(min(ppo))}-{fmt(max(ppo))}", fmt(by["random"])]))  # fmt: skip
    return "\n".join(lines)


PER_TASK_SOLVERS = ("random", "fixed", "greedy", "ppo")


def per_task_recovery() -> str:
    """The main job's best-of-1 / best-of-5 recovery per task (training tasks, then held out)."""
    results = load(source_path("results"))
    table = {(r["solver"], r["task"], r["k"]): r["recovery"] for r in results["rows"]}
    train = [t for t in dict.fromkeys(r["task"] for r in results["rows"] if r["split"] == "eval")]
    held = [t for t in dict.fromkeys(r["task"] for r in results["rows"] if r["split"] == "test")]
    header = ["solver", *train, *(f"**{t}** (held out)" for t in held)]
    lines = [_row(header), _row(["---"] * len(header))]
    for solver in PER_TASK_SOLVERS:
        lines.append(
            _row([solver, *(f"{table[solver, t, 1]:.2f} / {table[solver, t, 5]:.2f}" for t in train + held)])
        )
    return "\n".join(lines)


MODEL_LABELS = {
    "toy": "`toy` (run F, 12 x 12)",
    "toy_d": "`toy_d` (run D, 12 x 12)",
    "tiny": "`tiny` (4 x 4)",
    "gpt2": "GPT-2 small",
    "zoo": "zoo v1 (`zoo1`-`zoo4`, a retired board's)",
    "zoo-v2": "zoo v2 (`zoo5`-`zoo8`, a retired board's)",
    "zoo-v3": "zoo v3 (`zoo9`-`zoo12`, benchmark v8)",
}


def env_ids() -> str:
    """The current IDs (``circuit-gym list``), one row per family, model and version: the task
    part of the ID in braces."""
    import circuit_gym

    entries = {e["id"]: e for e in circuit_gym.list_envs()}
    groups: dict[tuple, list[dict]] = {}
    for entry in entries.values():
        parts = entry["id"].split("-")
        multi = len(entry["tasks"]) > 1
        key = (
            parts[0],
            parts[1],
            "-".join(parts[3:]),
            entry["model"],
            multi,
            tuple(entry["tasks"]) if multi else (),
        )
        groups.setdefault(key, []).append(entry)
    lines = [_row(["IDs", "kind", "model", "tasks"]), _row(["---"] * 4)]

    def order(key: tuple) -> tuple:  # single head first, Toy before GPT2, newest first; not registry order
        prefix, model_part, suffix, model, multi, tasks = key
        return (_id_kind(suffix), model_part != "Toy", -int(suffix.rsplit("v", 1)[1]), multi)

    for key in sorted(groups, key=order):
        (prefix, model_part, suffix, model, multi, tasks), members = key, groups[key]
        names = sorted(m["id"].split("-")[2] for m in members)
        task_part = names[0] if len(names) == 1 else "{" + ",".join(names) + "}"
        kind = ID_KINDS[_id_kind(suffix)][1]
        what = ("samples " + ", ".join(tasks)) if multi else "the task in its name"
        lines.append(
            _row(
                [f"`{prefix}-{model_part}-{task_part}-{suffix}`", kind, MODEL_LABELS.get(model, model), what]
            )
        )
    return "\n".join(lines)


# An ID's kind from its family suffix (circuit_gym.envs.registration.Family.suffix), in table order.
ID_KINDS = (
    ("", "single head"),
    ("Circuit", "circuit building"),
    ("Edges", "edge building"),
    ("KnockOut", "knock-out"),
)


def _id_kind(suffix: str) -> int:
    """The index in :data:`ID_KINDS` of an ID's suffix part (``Circuit-v0``, ``Edges-v0``, ``v4``)."""
    return max(i for i, (marker, _) in enumerate(ID_KINDS) if not marker or suffix.startswith(marker + "-"))


def sweep_speed() -> str:
    """One single-head sweep per task: engine (the run before in brackets), bridge blocks, plain loop."""
    rows = load(source_path("bench/sweep"))["rows"]
    before = {r["task"]: r for r in load(source_path("bench/sweep_run1"))["rows"]}
    lines = [_row(["task", "prompt tokens", "engine", "bridge blocks", "plain loop (one hook per head)",
                   "speed-up over the loop"]), _row(["---"] * 6)]  # fmt: skip
    for r in sorted(rows, key=lambda r: (r["prompts"][1], r["task"])):  # shortest prompts first
        lines.append(_row([r["task"], str(r["prompts"][1]), f"{r['engine_s']:.2f} s ({before[r['task']]['engine_s']:.2f} s)",
                           f"{r['bridge_blocks_s']:.2f} s", f"{r['naive_s']:.2f} s", f"{r['speedup']:.1f}x"]))  # fmt: skip
    return "\n".join(lines)


def gpt2_cost() -> str:
    """The GPT-2-shape cost per configuration: first step, general sweep's speed-up, next batch."""
    bench = load(source_path("bench/gpt2"))
    lines = [
        _row(["configuration", "first step", "general sweep (speed-up)", "next batch"]),
        _row(["---"] * 4),
    ]
    for name, r in bench["results"].items():
        speedup = bench["speedup_vs_baseline"][name]["general_sweep"]
        lines.append(
            _row([name, f"{r['first_step']:,.0f} s", f"{speedup:.2f}x", f"{r['next_batch']:,.0f} s"])
        )
    return "\n".join(lines)


def transfer_table(track: str, key: str, headline: bool = False) -> Callable[[], str]:
    """Zoo v1's archived board (``docs/results/transfer/report.json``): the table of one track and measure;
    ``headline``: only the private model and the held-out tasks of the public held-out models."""

    def render() -> str:
        from circuit_gym.reporting import transfer as report

        cols = ("private", report.UNSEEN) if headline else ("private", *report.B.QUADRANTS)
        return report.table(load(source_path("transfer")), track, key, cols)

    return render


def version_table(version: str, kind: str, key: str, headline: bool = False) -> Callable[[], str]:
    """A transfer version's board table of one kind and measure, from the hard-circuits report
    (``docs/results/v8/report.json``: the references of the version in force); ``headline``: only the private
    model and the held-out tasks of the public held-out models."""

    def render() -> str:
        from circuit_gym import benchmark as B
        from circuit_gym.reporting import transfer as report

        refs = load(source_path("hard"))["versions"][version]["references"]
        cols = ("private", report.UNSEEN) if headline else ("private", *B.QUADRANTS)
        return report.table({"references": refs}, B.transfer_benchmark(version).track(kind), key, cols)

    return render


def in_force_headline() -> str:
    """README's headline: the benchmark in force's single-head table (private model, held-out tasks
    of the public held-out models), from the report that holds every version's references."""
    from circuit_gym import benchmark as B

    return version_table(B.IN_FORCE, B.SINGLE_HEAD, "k1", headline=True)()


def hard_circuits_targets() -> str:
    """Issue 41's targets on every transfer version, side by side (the report's first table)."""
    from circuit_gym.baselines.hard_circuits_report import markdown

    text = markdown(load(source_path("hard")))
    return text[text.index("| target |") :].split("\n\n", 1)[0]


def edge_agent_targets() -> str:
    """Issue 43's target on every edge track: the edge PPO against the best reference of no more
    passes (``edge_tables.agent_target``), from the references' committed result files."""
    import json

    from circuit_gym.leaderboard.edge_benchmark import EDGE_BENCHMARKS
    from circuit_gym.leaderboard.edge_tables import agent_target, edge_row
    from circuit_gym.leaderboard.references import load_manifest

    manifest = load_manifest()
    lines = [_row(["track", "measure", "edge PPO", "LM passes", "best reference of no more passes", "met"]),
             _row(["---"] * 6)]  # fmt: skip
    for bench in EDGE_BENCHMARKS.values():
        if not manifest[bench.track]:  # a version being built: no reference scored yet, no row
            continue
        rows = [edge_row({**json.loads(r.result_path().read_text()), "board": {"check": "reviewed", "reference": True}})
                for r in manifest[bench.track].values()]  # fmt: skip
        targets = agent_target(rows)
        for key, label in (
            ("secret_auc", "AUC, secret planted models"),
            ("private_cpr", "edge CPR, private model"),
        ):
            t = targets.get(key)
            cells = ([fmt(t["agent"]), fmt(t["passes"], ",.0f"), f"{t['best_reference']} {fmt(t['reference'])} "
                      f"({fmt(t['reference_passes'], ',.0f')} passes)", "yes" if t["met"] else "no"]
                     if t else ["-", "-", "not scored there", "-"])  # fmt: skip
            lines.append(_row([bench.track, label, *cells]))
    return "\n".join(lines)


LEARNED_AGENTS = {"ppo": "PPO, single head", "circuit_ppo": "circuit PPO"}


def transfer_learned_agents() -> str:
    """Learned agents on zoo v1's archived board, one row per (track, design, measure) that
    its report summarised (``issue_34.designs``): mean over training seeds (95%
    t-interval over seeds) on the held-out tasks of the public held-out models and on the private
    model, the checkpoint-selection score the design is chosen by, and LM passes per episode."""
    from circuit_gym.reporting import transfer as report

    rep = load(source_path("transfer"))["issue_34"]
    measures = {"ppo": {"k1": "best-of-1", "k5": "best-of-5"}, "circuit_ppo": {"cpr": "CPR"}}
    lines = [_row(["agent", "design", "seeds", "measure", "unseen task, unseen model", "private model",
                   "selection score (training tasks)", "LM passes / episode"]), _row(["---"] * 8)]  # fmt: skip
    for track, by_measure in measures.items():
        for design, entry in rep["designs"].items():
            e = entry[track]
            if not e["selection"]:
                continue
            kept = " (kept)" if rep["chosen"][track] == design else ""
            selection = f"{fmt(e['selection']['mean'])} {fmt(e['selection']['ci95_over_seeds'], '[.2f]')}"
            passes = "-" if e["passes_per_episode"] is None else fmt(e["passes_per_episode"], ",.1f")
            for measure, label in by_measure.items():
                cells = [e.get(f"{measure}_{where}") for where in (report.UNSEEN, "private")]
                values = [
                    f"{fmt(c['mean'])} {fmt(c['ci95_over_seeds'], '[.2f]')}" if c else "-" for c in cells
                ]
                seeds = len(e["selection"]["values"])
                lines.append(
                    _row(
                        [LEARNED_AGENTS[track], design + kept, str(seeds), label, *values, selection, passes]
                    )
                )
    return "\n".join(lines)


def speed_targets() -> str:
    """Every speed target of issues 42, 45 and 46 from one run (benchmarks/speed_targets.py,
    benchmarks/results/speed_targets.json): figure, value, target, met."""
    report = load(source_path("bench/speed_targets"))
    lines = [_row(["figure", "measured", "target", "met"]), _row(["---"] * 4)]
    for f in report["figures"]:
        value, unit = f["value"], f["unit"]
        shown = (
            "-"
            if value is None
            else f"{value:.0f} {unit}"
            if unit == "s" and value >= 10
            else f"{value:.3g} {unit}"
        )
        met = {True: "yes", False: "**no**", None: "-"}[f["met"]]
        target = "-" if f["target"] is None else f"{f['comparison']} {f['target']:.3g}"
        cell = f["figure"].replace("|", "\\|")  # a bar would split the cell
        lines.append(_row([cell, shown, target, met]))
    for failure in report["failures"]:  # a part that did not run is shown, not dropped
        lines.append(_row([f"{failure['part']}: not measured ({failure['error']})", "-", "-", "-"]))
    return "\n".join(lines)


def planted_baselines() -> str:
    """The first planted-model measurement per kind (benchmarks/results/planted.json,
    scripts/planted_baselines.py): the oracle, the best single column, shallow-first and ACDC."""
    summary = load(source_path("bench/planted"))["summary"]
    lines = [_row(["kind", "oracle: hit / recall@C", "best single column (chosen on 0-2), on 100-102",
                   "shallow-first: recovery", "ACDC after the sweep: precision / recall", "ACDC, middle threshold"]),
             _row(["---"] * 6)]  # fmt: skip
    for kind, s in summary.items():
        oracle, best, shallow, acdc = s["oracle"], s["best_feature"], s["shallow_first"], s["acdc"]
        sign = "+" if best["sign"] > 0 else "-"
        lines.append(_row([kind, f"{fmt(oracle['hit'], '.2f')} / {fmt(oracle['recall_at_c'], '.2f')}",
                           f"`{best['column']}` ({sign}): {fmt(best['recovery'], '.2f')}, hit {fmt(best['hit'], '.2f')}, "
                           f"recall@C {fmt(best['recall_at_c'], '.2f')}",
                           f"{fmt(shallow['recovery'], '.3f')}, hit {fmt(shallow['hit'], '.0f')}",
                           f"{fmt(acdc['precision'], '.2f')} / {fmt(acdc['recall'], '.2f')} (exact {fmt(acdc['exact'], '.0%')}, "
                           f"{fmt(acdc['kept_size'], '.1f')} heads)",
                           f"{fmt(acdc['precision_middle_tau'], '.2f')} / {fmt(acdc['recall_middle_tau'], '.2f')}"]))  # fmt: skip
    return "\n".join(lines)


ZOO = ROOT / "circuit_gym" / "models" / "zoo"


def zoo_members() -> str:
    """The zoo's members (docs/zoo.md): seed and placement, training steps and minutes and the
    held-out stdlib loss at the end (training_log.json), the tasks its gate admits (card_metrics.json)."""
    lines = [_row(["member", "seed", "identity layers", "trained", "held-out stdlib loss", "tasks gated", "card"]),
             _row(["---"] * 7)]  # fmt: skip
    for member in sorted(d for d in ZOO.iterdir() if (d / "card_metrics.json").is_file()):
        log = load(member / "training_log.json")
        setup, last = log["setup"], log["log"][-1]
        tasks = load(member / "card_metrics.json")["suite"]["tasks"]
        left_out = [task for task, t in tasks.items() if not t["included"]]
        gated = f"{len(tasks) - len(left_out)}" + (f" (all but {', '.join(left_out)})" if left_out else "")
        lines.append(_row([f"`{member.name}`", str(setup["seed"]), str(setup["identity_layers"]),
                           f"{last['step']:,} steps, {fmt(last['minutes'], '.1f')} min",
                           fmt(last["stdlib_heldout_loss"], ".2f"), gated,
                           f"[card](../circuit_gym/models/zoo/{member.name}/MODEL_CARD.md)"]))  # fmt: skip
    return "\n".join(lines)


def zoo_placement() -> str:
    """Per task the zoo's members gate: each model's modal oracle head, how many distinct ones, and the
    mean top-5 overlap over model pairs (docs/results/zoo_placement.json, scripts/zoo_placement.py)."""
    placement = load(ROOT / "docs/results/zoo_placement.json")
    models, in_zoo = list(placement["models"]), placement["targets"]["distinct_modal_heads_in_zoo"]
    lines = [_row(["task", *models, "distinct modal heads (zoo / with toy)", "mean top-5 overlap"]),
             _row(["---"] * (len(models) + 3))]  # fmt: skip
    for task in in_zoo:
        t = placement["tasks"][task]
        lines.append(_row([task, *(t["modal_head"].get(m, "-") for m in models),
                           f"{in_zoo[task]} / {t['distinct_modal_heads']}", fmt(t["mean_top5_overlap"], ".1f")]))  # fmt: skip
    return "\n".join(lines)


def zoo_self_repair(which: str) -> Callable[[], str]:
    """docs/zoo.md's self-repair pilot (issue 41; docs/results/zoo/self_repair.json, written by
    scripts/self_repair_pilot.py): ``summary`` (one row per model) or ``tasks`` (per gated task)."""

    def table() -> str:
        from circuit_gym.reporting.self_repair_pilot import pilot_table, summary_table

        report = load(ROOT / "docs/results/zoo/self_repair.json")
        return summary_table(report) if which == "summary" else pilot_table(report)

    return table


def backup_pairs(name: str, summary: bool = False) -> Callable[[], str]:
    """docs/zoo.md's backup-pair tables (issue 55; ``docs/results/zoo/<name>.json``, written by
    scripts/backup_pilot.py): one row per model and recorded pair (the pilot's, then zoo v3's), or
    (``summary``) per model, the pairs meeting issue 55's bar and the backup's median ranks."""

    def table() -> str:
        from circuit_gym.reporting.backup_pairs import pairs_table, summary_table

        return (summary_table if summary else pairs_table)(load(ROOT / f"docs/results/zoo/{name}.json"))

    return table


def planted_track(track: str) -> Callable[[], str]:
    """A Planted track's public and secret tables (``v8-planted``: leaderboard/results/v8/planted/;
    docs/planted.md). In a child process: importing
    the track registers the planted tasks, which would change the ``registry`` counts of this one."""

    def table() -> str:
        code = (
            "from circuit_gym.leaderboard.planted_tables import planted_tables; "
            f"print(planted_tables(track={track!r}), end='')"
        )
        return in_fresh_interpreter(code).rstrip()

    return table


TABLES: dict[str, Callable[[], str]] = {
    "transfer-single-head-k1": transfer_table("transfer-single-head", "k1"),
    "transfer-single-head-k5": transfer_table("transfer-single-head", "k5"),
    "transfer-circuit-cpr": transfer_table("transfer-circuit", "cpr"),
    "transfer-headline": in_force_headline,
    "v8-single-head-k1": version_table("v8", "single-head", "k1"),
    "v8-single-head-k5": version_table("v8", "single-head", "k5"),
    "v8-circuit-cpr": version_table("v8", "circuit", "cpr"),
    "hard-circuits-targets": hard_circuits_targets,
    "edge-agent-targets": edge_agent_targets,
    "transfer-learned-agents": transfer_learned_agents,
    "gpt2-cost": gpt2_cost,
    "sweep-speed": sweep_speed,
    "env-ids": env_ids,
    "pooled-recovery": pooled_recovery,
    "circuit-scores": circuit_scores,
    "circuit-track": circuit_track,
    "circuit-track-detail": circuit_track_detail,
    "circuit-track-tasks": circuit_track_tasks,
    "per-task-recovery": per_task_recovery,
    "v8-planted-track": planted_track("v8-planted"),
    "planted-baselines": planted_baselines,
    "speed-targets": speed_targets,
    "zoo-members": zoo_members,
    "zoo-placement": zoo_placement,
    "zoo-self-repair-summary": zoo_self_repair("summary"),
    "zoo-self-repair": zoo_self_repair("tasks"),
    "zoo-backup-pilot": backup_pairs("backup_pilot"),
    "zoo-v3-pairs": backup_pairs("zoo_v3"),
    "zoo-v3-summary": backup_pairs("zoo_v3", summary=True),
}
