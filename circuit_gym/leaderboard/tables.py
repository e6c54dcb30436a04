"""The board's tables: one row per entry of each track, ranked, and their Markdown."""

from __future__ import annotations

import numpy as np

from circuit_gym import benchmark as B
from circuit_gym.leaderboard.verification import track
from circuit_gym.reporting.transfer_tables import interval as _ci
from circuit_gym.reporting.transfer_tables import number as _num
from circuit_gym.stats import recovery_difference_ci95


def _f(x) -> float:
    """A stored number (None where the scorer had NaN) as a float."""
    return float("nan") if x is None else float(x)


def single_head_row(e: dict) -> dict:
    s, prov, board = e["scores"], e["provenance"], e["board"]
    private = (e.get("private") or {}).get("scores")
    k5, k1 = s["overall"]["k5"], s["overall"]["k1"]
    return {
        "name": e["name"], "k5": _f(k5["recovery"]), "k5_ci": [_f(x) for x in k5["recovery_ci95"]],
        "k1": _f(k1["recovery"]), "top1": _f(k1["top1_rate"]),
        "private_k5": _f(private["overall"]["k5"]["recovery"]) if private else None,
        "private_k5_ci": [_f(x) for x in private["overall"]["k5"]["recovery_ci95"]] if private else None,
        "private_k1": _f(private["overall"]["k1"]["recovery"]) if private else None,
        "no_positive_oracle": k5["episodes_without_positive_oracle"],
        "forward": s["compute"]["forward_passes_per_episode"], "partial": s["compute"]["partial_passes_per_episode"],
        "backward": s["compute"]["backward_passes_per_episode"],
        "spread": _f(s["reproducibility"]["k5_recovery_spread"]),
        "consistency": float(np.mean([_f(v) for v in s["consistency_top5_jaccard"].values()])),
        "white_box": prov["white_box"], "policy": prov["policy"], "episodes": k5["episodes"],
        "check": board["check"], "reference": board["reference"], "isolation": isolation_note(e),
        **{f"per_task_k{k}": {t: _f(v[f"k{k}"]["recovery"]) for t, v in s["per_task"].items()} for k in B.KS},
        "circuits": s.get("circuits") or {},
        "private_circuits": (private or {}).get("circuits") or {},
    }  # fmt: skip


def above_memoriser(entry: dict, fixed: dict | None) -> dict:
    """How far the entry's best-of-1 and best-of-5 recovery are above the fixed-head
    memoriser's on the same episodes (paired bootstrap 95% interval; NaN without the
    memoriser's entry)."""
    theirs = {(e["task"], e["seed"]): e for e in fixed["scores"]["episodes"]} if fixed else {}
    mine = [e for e in entry["scores"]["episodes"] if (e["oracle_reward"] or 0) > 0]
    out: dict = {}
    for k in B.KS:
        if fixed is None:
            out[f"above_fixed_k{k}"], out[f"above_fixed_k{k}_ci"] = float("nan"), [float("nan")] * 2
            continue
        value, ci = recovery_difference_ci95([e[f"reward_k{k}"] for e in mine],
                                             [theirs[(e["task"], e["seed"])][f"reward_k{k}"] for e in mine],
                                             [e["oracle_reward"] for e in mine])  # fmt: skip
        out[f"above_fixed_k{k}"], out[f"above_fixed_k{k}_ci"] = value, ci
    return out


def isolation_note(result: dict) -> str | None:
    """None if the policy was scored with complete isolation, else what the board says about it."""
    iso = result.get("isolation")
    if not isinstance(iso, dict):
        return "scored without isolation (not recorded)"
    if iso.get("complete") is True:
        return None
    missing = iso.get("missing") if isinstance(iso.get("missing"), list) else []
    return "scored without isolation" + (f" ({'; '.join(str(m) for m in missing)})" if missing else "")


def _areas(c: dict | None) -> str:
    """``CPR [ci] / CMD [ci]`` of a circuit summary, or a dash where the result has none."""
    if not c or c.get("cpr") is None:
        return "-"

    return f"{_num(c['cpr'])}{_ci(c.get('cpr_ci95'))} / {_num(c['cmd'])}{_ci(c.get('cmd_ci95'))}"


def _label(r: dict) -> str:
    tags = (["reference"] if r["reference"] else []) + (
        ["white-box: reads the task metric"] if r["white_box"] else []
    )
    return r["name"] + (f" ({'; '.join(tags)})" if tags else "")


def _entry_cells(rank: int, r: dict) -> str:
    """A ranked row's first cells, the same on every table: rank, entry with its tags, check
    (and whether the policy ran isolated); the caller appends the track's own cells."""
    return f"| {rank} | {_label(r)} | {r['check']}{' (not isolated)' if r['isolation'] else ''} "


def _per_task_header(title: str, columns: list[str]) -> list[str]:
    """A per-task table's title and header rows: the entry, then one column per name in ``columns``."""
    return ["", title, "", "| entry | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]


def _not_isolated(rows: list[dict], title: str) -> list[str]:
    """The list of entries scored without complete isolation, under ``title`` (none: no lines)."""
    unisolated = [r for r in rows if r["isolation"]]
    return ["", title, *(f"- {r['name']}: {r['isolation']}" for r in unisolated)] if unisolated else []


def rank_rows(rows: list[dict]) -> list[dict]:
    """Best-of-5 recovery first; ties (common with 16 heads) go to best-of-1, then top-1 hits."""

    def key(r: dict) -> tuple:
        return tuple(-r[k] if np.isfinite(r[k]) else np.inf for k in ("k5", "k1", "top1"))

    return sorted(rows, key=key)


def markdown(rows: list[dict], refused: list[str], failed: list[dict]) -> str:
    lines = [
        f"Benchmark `{B.BENCHMARK_VERSION}`: held-out tasks {', '.join(B.HELD_OUT_TASKS)} ({B.SPLIT} split), "
        f"seeds 0-{len(B.EVAL_SEEDS) - 1}, {B.ABLATION} ablation, lambda {B.LAM}. Recovery: sum of chosen "
        "rewards / sum of oracle rewards over the episodes with a positive oracle reward (95% paired "
        "bootstrap interval); private: the same on the maintainers' private seeds. LM passes: language-model "
        "passes the solver made per episode inside its rank call (full forward / partial / backward). "
        "A submitted policy's own computing in its sandbox is no LM pass: its CPU time is recorded in its "
        "result (diagnostics.policy_cpu); the time limits of a call: leaderboard/README.md. "
        "Check: hash-checked (content hash and provenance only), rescored (`render --rescore` matched), "
        "verified (rescored, private scores included).",
        "",
        "| rank | entry | check | best-of-5 recovery (95% CI) | best-of-1 recovery | top-1 hit "
        "| above memoriser, best-of-5 (95% CI) | above memoriser, best-of-1 (95% CI) "
        "| private best-of-5 (95% CI) | private best-of-1 | LM passes / episode (fwd / partial / bwd) "
        "| reproducibility spread | top-5 consistency | policy |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows, 1):
        lines.append(
            _entry_cells(i, r) + f"| {r['k5']:.3f}{_ci(r['k5_ci'])} | {r['k1']:.3f} | {r['top1']:.2f} "
            f"| {r['above_fixed_k5']:+.3f}{_ci(r['above_fixed_k5_ci'])} "
            f"| {r['above_fixed_k1']:+.3f}{_ci(r['above_fixed_k1_ci'])} "
            f"| {_num(r['private_k5'])}{_ci(r['private_k5_ci'])} | {_num(r['private_k1'])} "
            f"| {r['forward']:.3g} / {r['partial']:.3g} / {r['backward']:.3g} | {r['spread']:.3f} | {r['consistency']:.2f} "
            f"| `{r['policy']}` |"
        )
    tasks = list(B.HELD_OUT_TASKS)
    lines += _per_task_header("Per held-out task, best-of-5 / best-of-1 recovery:", tasks)
    for r in rows:
        lines.append(f"| {r['name']} | "
                     + " | ".join(f"{r['per_task_k5'][t]:.3f} / {r['per_task_k1'][t]:.3f}" for t in tasks) + " |")  # fmt: skip
    if any(r["circuits"] for r in rows):
        lines += _per_task_header("Circuits per held-out task (MIB's areas at head level over the evaluation "
                                  "episodes: CPR, higher is better / CMD, lower is better, 95% t-interval), and "
                                  "over the private episodes:", [*tasks, "private (all tasks)"])  # fmt: skip
        for r in rows:
            cells = [_areas(r["circuits"].get(t)) for t in tasks] + [_areas(r["private_circuits"].get("all"))]
            lines.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    lines += ["", "Above memoriser: recovery minus the fixed-head memoriser's on the same episodes."]
    without = {r["name"]: r["no_positive_oracle"] for r in rows if r["no_positive_oracle"]}
    if without:
        lines += ["", "Episodes without a positive oracle reward (counted, not in recovery): "
                  + ", ".join(f"{k}: {v}" for k, v in without.items())]  # fmt: skip
    lines += _not_isolated(rows, "Not isolated: these entries' policies ran without the complete sandbox (trust "
                                 "them as you trust their code):")  # fmt: skip
    return "\n".join(lines + failures_markdown(failed, refused))


def failures_markdown(failed: list[dict], refused: list[str], with_track: bool = False) -> list[str]:
    """The board's lines on failed submissions (each a failure, never an entry; ``with_track``: each
    names its track, where the list is not under its track's table) and refused files."""
    lines = []
    if failed:
        lines += ["", f"Failed submissions ({len(failed)}, no score):"]
        lines += [
            f"- {f['name']}{f' ({track(f)})' if with_track else ''}, {f['board']['check']}: "
            f"{f['failure']['type']}: {(str(f['failure'].get('reason') or '').splitlines() or [''])[0]}"
            for f in failed
        ]
    if refused:
        lines += ["", "Refused result files:"] + [f"- {r}" for r in refused]
    return lines


def circuit_row(e: dict) -> dict:
    """A circuit-track entry's board row: its summary over every episode (``"all"``), per task,
    and its private summary."""
    s, prov, board = e["scores"]["summary"], e["provenance"], e["board"]
    private = (((e.get("private") or {}).get("scores") or {}).get("summary") or {}).get("all")
    every = s["all"]
    return {
        "name": e["name"], "cpr": _f(every["cpr"]), "cpr_ci": [_f(x) for x in every["cpr_ci95"]],
        "cmd": _f(every["cmd"]), "cmd_ci": [_f(x) for x in every["cmd_ci95"]],
        "faithfulness": _f(every["faithfulness"]), "size": _f(every["circuit_size"]),
        "forward": _f(every["forward_passes"]), "episodes": every["episodes"],
        "private_cpr": _f(private["cpr"]) if private else None,
        "private_cpr_ci": [_f(x) for x in private["cpr_ci95"]] if private else None,
        "private_cmd": _f(private["cmd"]) if private else None,
        "private_cmd_ci": [_f(x) for x in private["cmd_ci95"]] if private else None,
        "per_task": {t: v for t, v in s.items() if t != "all"},
        "white_box": prov["white_box"], "policy": prov["policy"], "check": board["check"],
        "reference": board["reference"], "isolation": isolation_note(e),
    }  # fmt: skip


def rank_circuit_rows(rows: list[dict]) -> list[dict]:
    """CPR first (higher is better), then CMD (lower is better)."""

    def key(r: dict) -> tuple:
        return (-r["cpr"] if np.isfinite(r["cpr"]) else np.inf, r["cmd"] if np.isfinite(r["cmd"]) else np.inf)

    return sorted(rows, key=key)


def circuit_about() -> str:
    return (
        f"Circuit track `{B.CIRCUIT_BENCHMARK_VERSION}`: a circuit-building policy plays "
        f"`{B.circuit_env()}` (start {B.CIRCUIT_START}, budget {B.CIRCUIT_BUDGET}, alpha {B.CIRCUIT_ALPHA}) "
        f"on the held-out tasks {', '.join(B.HELD_OUT_TASKS)} ({B.SPLIT} split), seeds "
        f"{', '.join(map(str, B.CIRCUIT_EVAL_SEEDS))}; private: the first {B.CIRCUIT_PRIVATE_SEEDS} of the "
        "maintainers' private seeds. Its episode's ranking (heads in insertion order, then the rest by its "
        "rank_heads) is scored by CPR (area under faithfulness, higher is better) and CMD (area under "
        "|1 - f|, lower is better), means over episodes with 95% t-intervals; faithfulness and size of the "
        "circuit it built; forward passes per episode (the environment's, plus a white-box solver's own)."
    )


def circuit_markdown(rows: list[dict]) -> str:
    lines = [
        "### Circuit track",
        "",
        circuit_about(),
        "",
        "| rank | entry | check | CPR (95% CI) | CMD (95% CI) | faithfulness | circuit size "
        "| forward passes / episode | private CPR (95% CI) | private CMD (95% CI) | policy |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows, 1):
        lines.append(
            _entry_cells(i, r)
            + f"| {r['cpr']:.3f}{_ci(r['cpr_ci'])} | {r['cmd']:.3f}{_ci(r['cmd_ci'])} | {r['faithfulness']:.3f} "
            f"| {r['size']:.2f} | {r['forward']:.4g} | {_num(r['private_cpr'])}{_ci(r['private_cpr_ci'])} "
            f"| {_num(r['private_cmd'])}{_ci(r['private_cmd_ci'])} | `{r['policy']}` |"
        )
    tasks = list(B.HELD_OUT_TASKS)
    lines += _per_task_header("Circuit track per held-out task, CPR / CMD (95% t-interval):", tasks)
    for r in rows:
        lines.append(f"| {r['name']} | " + " | ".join(_areas(r["per_task"].get(t)) for t in tasks) + " |")
    lines += _not_isolated(rows, "Not isolated (circuit track):")
    return "\n".join(lines)


def _stored(v) -> str:
    """A stored number for the terminal (NaN is stored as None)."""
    return "nan" if v is None else f"{v:.3f}"


def single_head_headline(result: dict) -> list[str]:
    """A scored single-head (v5) result in a line or two, for the terminal."""
    k5, k1 = (result["scores"]["overall"][k] for k in ("k5", "k1"))
    passes = result["scores"]["compute"]
    lines = [
        f"held-out best-of-5 recovery {_stored(k5['recovery'])} [{_stored(k5['recovery_ci95'][0])}, "
        f"{_stored(k5['recovery_ci95'][1])}], best-of-1 {_stored(k1['recovery'])}, top-1 {k1['top1_rate']:.2f} "
        f"({k5['episodes']} episodes, {k5['episodes_without_positive_oracle']} without a positive oracle); LM passes "
        f"per episode: {passes['forward_passes_per_episode']:g} forward, {passes['partial_passes_per_episode']:g} "
        f"partial, {passes['backward_passes_per_episode']:g} backward"
    ]  # fmt: skip
    if result.get("private"):
        private = result["private"]
        pk5, pk1 = (private["scores"]["overall"][k] for k in ("k5", "k1"))
        lines.append(f"private seeds ({private['n_seeds']}, file sha256 {private['seed_file_sha256'][:12]}): best-of-5 "
                     f"{_stored(pk5['recovery'])} [{_stored(pk5['recovery_ci95'][0])}, {_stored(pk5['recovery_ci95'][1])}], "
                     f"best-of-1 {_stored(pk1['recovery'])}")  # fmt: skip
    return lines


def _circuit_line(s: dict) -> str:
    return (f"CPR {_stored(s['cpr'])} [{_stored(s['cpr_ci95'][0])}, {_stored(s['cpr_ci95'][1])}], CMD {_stored(s['cmd'])} "
            f"[{_stored(s['cmd_ci95'][0])}, {_stored(s['cmd_ci95'][1])}], faithfulness {_stored(s['faithfulness'])}, "
            f"circuit size {_stored(s['circuit_size'])}, {s['forward_passes']:g} forward passes per episode "
            f"({s['episodes']} episodes)")  # fmt: skip


def circuit_headline(result: dict) -> list[str]:
    """A scored circuit-track (v5) result, for the terminal."""
    lines = [f"circuit track: {_circuit_line(result['scores']['summary']['all'])}"]
    if result.get("private"):
        private = result["private"]
        lines.append(f"private seeds ({private['n_seeds']}, file sha256 {private['seed_file_sha256'][:12]}): "
                     f"{_circuit_line(private['scores']['summary']['all'])}")  # fmt: skip
    return lines
