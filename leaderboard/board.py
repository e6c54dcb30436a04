"""Build the leaderboard from scorer-written result files only.

Each file is verified before it is shown: its entry name must be valid, its content hash
must match its content, and it must be current (``leaderboard/protocol.py``: the scorer
protocol, its track's benchmark definition and the model weights; the package version,
commit and source hashes are provenance only). A refused file is named with the reason and
never shown. Every entry's row says how far it was checked:

- ``hash-checked``: content hash and provenance match (anyone can recompute a hash, so this
  proves no more than that the file is internally consistent);
- ``rescored``: ``render --rescore`` re-ran the scorer on the recorded policy and got the
  same scores;
- ``verified``: rescored, and its private scores (on the maintainers' private seeds) were
  re-computed from a seed file with the recorded SHA-256 and matched.

The reference entries (random, fixed, greedy, PPO) must be present; they are the files the
reviewed manifest names (``leaderboard/references.py``: scores and checkpoint digests), and
their names are reserved for them.

Result files with ``"track": "circuit"`` (``circuit_gym.leaderboard.circuit_scorer``) are
checked the same way against the circuit track's definition (``benchmark.circuit_definition``)
and its references (the manifest's ``circuit`` entries, required once any circuit entry is on
the board), and shown in their own "Circuit track" table. Their default place is
``leaderboard/results/circuit/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import circuit_gym
from circuit_gym.leaderboard import benchmark as B
from circuit_gym.leaderboard.compare import differences
from circuit_gym.leaderboard.html_page import Figure, write_page
from circuit_gym.leaderboard.protocol import stale_reason
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.references import (
    Reference,
    ReferenceMismatchError,
    References,
    load_manifest,
    recognise,
)
from circuit_gym.leaderboard.scorer import check_name, read_private_seeds
from circuit_gym.plots import _pyplot
from circuit_gym.stats import recovery_difference_ci95

CIRCUIT = "circuit"
SINGLE_HEAD = "single-head"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
CIRCUIT_RESULTS_DIR = RESULTS_DIR / "circuit"  # the circuit track's committed results
MARK_BEGIN, MARK_END = "<!-- board:begin -->", "<!-- board:end -->"


class RefusedResultError(ValueError):
    pass


def verify(path: Path, weights_hash: str | None) -> dict:
    """The result in ``path`` if it is authentic and current; else :class:`RefusedResultError`."""
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise RefusedResultError(f"{path}: not a readable JSON result ({type(err).__name__})") from None
    if not isinstance(result, dict) or "content_hash" not in result:
        raise RefusedResultError(
            f"{path}: no content hash; only files written by `circuit-gym leaderboard score` count"
        )
    try:
        check_name(result.get("name"))
    except ValueError as err:
        raise RefusedResultError(f"{path}: {err}") from None
    if content_hash(result) != result["content_hash"]:
        raise RefusedResultError(f"{path}: content hash mismatch: the file was edited after scoring")
    track = result.get("track", SINGLE_HEAD)
    if track not in (SINGLE_HEAD, CIRCUIT):
        raise RefusedResultError(f"{path}: unknown track {track!r}")
    if result.get("status") not in ("scored", "failed"):
        raise RefusedResultError(
            f"{path}: status {result.get('status')!r}: only scored or failed results go on the board "
            "(a canary's sample run is not an entry)"
        )
    prov = result.get("provenance")
    if not isinstance(prov, dict):
        raise RefusedResultError(f"{path}: no provenance")
    stale = stale_reason(prov, B.circuit_definition() if track == CIRCUIT else B.definition(), weights_hash)
    if stale is not None:
        raise RefusedResultError(f"{path}: {stale}")
    return result


def rescore_matches(
    path: Path,
    result: dict,
    private_seeds: Path | None = None,
    model_path: str | None = None,
    require_isolation: bool = True,
    reference: Reference | None = None,
) -> str:
    """Re-run the scorer on the recorded policy (a reference's: the manifest's policy and
    checkpoint); refuse unless the scores are the same numbers (``compare.differences``).

    A content hash proves a file was not edited by accident, but anyone can recompute
    it; re-scoring is what makes hand-edited numbers impossible to slip in. Returns
    ``"verified"`` when the entry's private scores were re-computed too (``private_seeds``
    has the SHA-256 the entry records) and matched, else ``"rescored"``. A sandboxed policy is
    rescored only with its isolation complete, unless ``require_isolation`` is False (an
    ``IsolationUnavailableError`` then stops the render: the machine, not the entry, is at fault).
    """
    from circuit_gym.leaderboard.circuit_scorer import score_circuit
    from circuit_gym.leaderboard.scorer import score

    scorer = score_circuit if result.get("track", SINGLE_HEAD) == CIRCUIT else score  # same arguments
    prov = result["provenance"]
    policy = reference.policy if reference is not None else prov["policy"]
    checkpoint = reference.checkpoint_path() if reference is not None else prov.get("checkpoint")
    builtin = policy.split(":", 1)[1] if policy.startswith("builtin:") else None
    private = result.get("private") or None
    with_private = (
        private is not None
        and private_seeds is not None
        and read_private_seeds(private_seeds)[1] == private.get("seed_file_sha256")
    )
    try:
        fresh = scorer(result["name"], policy_spec=None if builtin else policy, checkpoint=checkpoint,
                      builtin=builtin, model=prov["model"], model_path=model_path,
                      private_seeds=private_seeds if with_private else None,
                      require_isolation=require_isolation)  # fmt: skip
    except (ImportError, ValueError) as err:  # e.g. the policy's module is gone
        raise RefusedResultError(f"{path}: cannot re-score {policy}: {err}") from None
    found = differences(
        {"status": fresh.get("status"), "scores": fresh.get("scores")},
        {"status": result.get("status"), "scores": result.get("scores")},
    )
    if found:
        raise RefusedResultError(
            f"{path}: re-scoring {policy} gives different scores than the file claims ({'; '.join(found[:3])})"
        )
    if with_private:
        found = differences(fresh.get("private"), private, "private")
        if found:
            raise RefusedResultError(
                f"{path}: re-scoring {policy} on the private seeds gives different scores than the file claims "
                f"({'; '.join(found[:3])})"
            )
        return "verified"
    return "rescored"


def collect(paths: list[Path], weights_hash: str | None, rescore: bool = False, private_seeds: Path | None = None,
            model_path: str | None = None, require_isolation: bool = True, jobs: int = 1,
            references: References | None = None) -> tuple[list[dict], list[str], list[dict]]:  # fmt: skip
    """(scored entries, refusal messages, failure records), in ``paths`` order.

    Each returned result gets ``result["board"] = {"check": ..., "reference": name or None}``
    (not part of the file). A name is refused when it repeats an earlier file's, or when it
    is a reference entry's name but the file is not the one the manifest (``references``,
    default ``leaderboard/references.json``) reviewed. With ``rescore``, ``jobs`` > 1 re-scores
    that many entries at once, each in its own process.
    """
    references = load_manifest() if references is None else references
    pending, refused, seen = [], [], set()
    for path in paths:
        try:
            result = verify(path, weights_hash)
            name = result["name"]
            try:
                reference = recognise(result, track(result), references)
            except ReferenceMismatchError as err:
                raise RefusedResultError(f"{path}: {err}") from None
            if (track(result), name) in seen:
                raise RefusedResultError(f"{path}: another result file already uses the name {name!r}")
        except RefusedResultError as err:
            refused.append(str(err))
            continue
        seen.add((track(result), name))
        pending.append((path, result, reference))
    if rescore:
        items = [(p, r, references[track(r)][ref] if ref else None) for p, r, ref in pending]
        checks = _rescore_all(items, private_seeds, model_path, require_isolation, jobs)
    else:
        checks = ["hash-checked"] * len(pending)
    entries, failed = [], []
    for (_, result, reference), check in zip(pending, checks, strict=True):
        if isinstance(check, RefusedResultError):
            refused.append(str(check))
            continue
        result["board"] = {"check": check, "reference": reference}
        (entries if result.get("status") == "scored" else failed).append(result)
    return entries, refused, failed


def _rescore_or_refusal(
    path: Path, result: dict, reference: Reference | None, private_seeds, model_path, require_isolation
) -> str | RefusedResultError:
    try:
        return rescore_matches(path, result, private_seeds, model_path, require_isolation, reference)
    except RefusedResultError as err:
        return err


def _rescore_all(items: list[tuple[Path, dict, Reference | None]], private_seeds: Path | None, model_path: str | None,
                 require_isolation: bool, jobs: int) -> list[str | RefusedResultError]:  # fmt: skip
    """:func:`rescore_matches` of every item (a check, or the refusal); ``jobs`` processes at once.
    Any other error (e.g. isolation unavailable: the machine is at fault) stops the render."""
    args = (private_seeds, model_path, require_isolation)
    if jobs <= 1 or len(items) <= 1:
        return [_rescore_or_refusal(*item, *args) for item in items]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn: a fresh interpreter per worker, so no scorer state is shared between entries
    with ProcessPoolExecutor(min(jobs, len(items)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_rescore_or_refusal, *item, *args) for item in items]
        return [f.result() for f in futures]


def _f(x) -> float:
    """A stored number (None where the scorer had NaN) as a float."""
    return float("nan") if x is None else float(x)


def _row(e: dict) -> dict:
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


def _num(x, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _ci(ci) -> str:
    return f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci is not None and np.isfinite(ci).all() else ""


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

    def ci(key: str) -> str:
        values = c.get(key)
        return _ci(values) if values and all(isinstance(v, int | float) for v in values) else ""

    return f"{_num(c['cpr'])}{ci('cpr_ci95')} / {_num(c['cmd'])}{ci('cmd_ci95')}"


def _label(r: dict) -> str:
    tags = (["reference"] if r["reference"] else []) + (
        ["white-box: reads the task metric"] if r["white_box"] else []
    )
    return r["name"] + (f" ({'; '.join(tags)})" if tags else "")


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
            f"| {i} | {_label(r)} | {r['check']}{' (not isolated)' if r['isolation'] else ''} | {r['k5']:.3f}{_ci(r['k5_ci'])} | {r['k1']:.3f} | {r['top1']:.2f} "
            f"| {r['above_fixed_k5']:+.3f}{_ci(r['above_fixed_k5_ci'])} "
            f"| {r['above_fixed_k1']:+.3f}{_ci(r['above_fixed_k1_ci'])} "
            f"| {_num(r['private_k5'])}{_ci(r['private_k5_ci'])} | {_num(r['private_k1'])} "
            f"| {r['forward']:.3g} / {r['partial']:.3g} / {r['backward']:.3g} | {r['spread']:.3f} | {r['consistency']:.2f} "
            f"| `{r['policy']}` |"
        )
    tasks = list(B.HELD_OUT_TASKS)
    lines += ["", "Per held-out task, best-of-5 / best-of-1 recovery:", "",
              "| entry | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['name']} | "
                     + " | ".join(f"{r['per_task_k5'][t]:.3f} / {r['per_task_k1'][t]:.3f}" for t in tasks) + " |")  # fmt: skip
    if any(r["circuits"] for r in rows):
        lines += ["", "Circuits per held-out task (MIB's areas at head level over the evaluation episodes: CPR, "
                  "higher is better / CMD, lower is better, 95% t-interval), and over the private episodes:", "",
                  "| entry | " + " | ".join(tasks) + " | private (all tasks) |", "|---|" + "---|" * (len(tasks) + 1)]  # fmt: skip
        for r in rows:
            cells = [_areas(r["circuits"].get(t)) for t in tasks] + [_areas(r["private_circuits"].get("all"))]
            lines.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    lines += ["", "Above memoriser: recovery minus the fixed-head memoriser's on the same episodes."]
    without = {r["name"]: r["no_positive_oracle"] for r in rows if r["no_positive_oracle"]}
    if without:
        lines += ["", "Episodes without a positive oracle reward (counted, not in recovery): "
                  + ", ".join(f"{k}: {v}" for k, v in without.items())]  # fmt: skip
    unisolated = [r for r in rows if r["isolation"]]
    if unisolated:
        lines += ["", "Not isolated: these entries' policies ran without the complete sandbox (trust them as you "
                  "trust their code):"] + [f"- {r['name']}: {r['isolation']}" for r in unisolated]  # fmt: skip
    return "\n".join(lines + failures_markdown(failed, refused))


def failures_markdown(failed: list[dict], refused: list[str]) -> list[str]:
    """The board's lines on failed submissions and refused files (both tracks)."""
    lines = []
    if failed:
        lines += ["", "Failed submissions (no score):"]
        lines += [
            f"- {f['name']} ({f['board']['check']}): {f['failure']['type']}: "
            f"{f['failure']['reason'].splitlines()[0]}"
            for f in failed
        ]
    if refused:
        lines += ["", "Refused result files:"] + [f"- {r}" for r in refused]
    return lines


def track(result: dict) -> str:
    """The track a result was scored on (files without ``track`` are single-head)."""
    return result.get("track", SINGLE_HEAD)


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
            f"| {i} | {_label(r)} | {r['check']}{' (not isolated)' if r['isolation'] else ''} "
            f"| {r['cpr']:.3f}{_ci(r['cpr_ci'])} | {r['cmd']:.3f}{_ci(r['cmd_ci'])} | {r['faithfulness']:.3f} "
            f"| {r['size']:.2f} | {r['forward']:.4g} | {_num(r['private_cpr'])}{_ci(r['private_cpr_ci'])} "
            f"| {_num(r['private_cmd'])}{_ci(r['private_cmd_ci'])} | `{r['policy']}` |"
        )
    tasks = list(B.HELD_OUT_TASKS)
    lines += ["", "Circuit track per held-out task, CPR / CMD (95% t-interval):", "",
              "| entry | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['name']} | " + " | ".join(_areas(r["per_task"].get(t)) for t in tasks) + " |")
    unisolated = [r for r in rows if r["isolation"]]
    if unisolated:
        lines += ["", "Not isolated (circuit track):"] + [
            f"- {r['name']}: {r['isolation']}" for r in unisolated
        ]
    return "\n".join(lines)


def _missing_references(
    entries: list[dict], references: dict[str, Reference], refused: list[str], what: str
) -> None:
    """RefusedResultError unless every reference of ``references`` is among ``entries``."""
    present = {e["board"]["reference"] for e in entries}
    missing = [r for r in references if r not in present]
    if missing:
        files = ", ".join(references[r].result for r in missing)
        raise RefusedResultError(
            f"{what}reference entries missing from the board: {missing} (the result files the reviewed manifest "
            f"leaderboard/references.json names: {files}). Rescore them from the repository root with "
            "`circuit-gym leaderboard rescore-references`"
            + ("" if not refused else "; refused: " + " | ".join(refused))
        )


def _bar_chart(rows: list[dict], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * len(rows)))
    names = [r["name"] for r in rows][::-1]
    vals = [r["k5"] for r in rows][::-1]
    errs = np.array([[r["k5"] - r["k5_ci"][0], r["k5_ci"][1] - r["k5"]] for r in rows][::-1]).T
    errs = np.clip(np.nan_to_num(errs), 0, None)  # a bootstrap interval need not contain the estimate
    ax.barh(
        names,
        np.nan_to_num(vals),
        xerr=errs,
        color=["#c44" if r["white_box"] else "#48a" for r in rows][::-1],
    )
    ax.axvline(0.96, ls="--", c="gray", lw=1)
    ax.set_xlabel("held-out best-of-5 oracle recovery")
    ax.set_title(B.BENCHMARK_VERSION, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _per_task_chart(rows: list[dict], path: Path) -> None:
    """Best-of-5 recovery per held-out task and entry; the memoriser and random as lines."""
    plt = _pyplot()
    tasks = list(B.HELD_OUT_TASKS)
    ref = {r["reference"]: r for r in rows if r["reference"] in ("fixed", "random")}
    entries = [r for r in rows if r["reference"] not in ("fixed", "random")]
    fig, ax = plt.subplots(figsize=(1.6 + 2.2 * len(tasks), 3.6))
    width = 0.8 / max(1, len(entries))
    for j, r in enumerate(entries):
        x = np.arange(len(tasks)) - 0.4 + width * (j + 0.5)
        ax.bar(x, [np.nan_to_num(r["per_task_k5"][t]) for t in tasks], width, label=r["name"],
               color="#c44" if r["white_box"] else None)  # fmt: skip
    for name, style in (("fixed", "--"), ("random", ":")):
        if name in ref:
            for i, t in enumerate(tasks):
                ax.hlines(ref[name]["per_task_k5"][t], i - 0.45, i + 0.45, colors="k", linestyles=style,
                          label=f"{name} ({'memoriser' if name == 'fixed' else 'chance'})" if i == 0 else None)  # fmt: skip
    ax.set_xticks(range(len(tasks)))
    ax.set_xticklabels(tasks)
    ax.set_ylabel("held-out best-of-5 recovery")
    ax.set_title(B.BENCHMARK_VERSION, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _radar(row: dict, path: Path) -> None:
    plt = _pyplot()
    axes = [
        "best-of-5\nrecovery",
        "best-of-1\nrecovery",
        "top-1 hit",
        "reproducibility\n(1 - spread)",
        "top-5\nconsistency",
    ]
    vals = [row["k5"], row["k1"], row["top1"], 1 - min(1.0, row["spread"]), row["consistency"]]
    vals = [float(np.clip(np.nan_to_num(v), 0, 1)) for v in vals]
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False).tolist()
    fig = plt.figure(figsize=(3.6, 3.6))
    ax = fig.add_subplot(polar=True)
    ax.plot(angles + angles[:1], vals + vals[:1], c="#48a")
    ax.fill(angles + angles[:1], vals + vals[:1], alpha=0.25, c="#48a")
    ax.set_xticks(angles)
    ax.set_xticklabels(axes, fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_title(row["name"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(result_paths: list[Path] | None = None, out: Path | None = None, model: str | None = None,
           model_path: str | None = None, rescore: bool = False, private_seeds: Path | None = None,
           require_isolation: bool = True, jobs: int = 1, references: References | None = None) -> dict:  # fmt: skip
    """Verify results and write the Markdown table, HTML page, bar chart and radar charts.
    ``jobs`` (with ``rescore``): entries re-scored at once, each in its own process.
    ``references``: the reference manifest (default ``leaderboard/references.json``).

    ``private_seeds`` (with ``rescore``): the maintainers' private seed file, to re-compute the
    private scores of the entries scored on it (the same SHA-256) and call them verified.
    ``require_isolation`` (with ``rescore``): refuse to run a submission without complete isolation.
    """
    out = out or Path(__file__).resolve().parent
    paths = sorted(result_paths or [*RESULTS_DIR.glob("*.json"), *CIRCUIT_RESULTS_DIR.glob("*.json")])
    if private_seeds is not None and not rescore:
        raise ValueError(
            "private_seeds only makes sense with rescore=True (the private scores are re-computed)"
        )
    weights = circuit_gym.load_model(model or B.MODEL, path=model_path).circuit_gym_info.weights_hash
    references = load_manifest() if references is None else references
    entries, refused, failed = collect(
        paths, weights, rescore, private_seeds, model_path, require_isolation, jobs, references
    )
    circuit_entries = [e for e in entries if track(e) == CIRCUIT]
    entries = [e for e in entries if track(e) != CIRCUIT]
    # The single-head references are required unless the board holds circuit entries only.
    single = bool(entries) or not circuit_entries
    if single:
        _missing_references(entries, references[SINGLE_HEAD], refused, "")
    if circuit_entries:
        _missing_references(circuit_entries, references[CIRCUIT], refused, "circuit track: ")
    fixed = next((e for e in entries if e["board"]["reference"] == "fixed"), None)
    rows = rank_rows([{**_row(e), **above_memoriser(e, fixed)} for e in entries])
    crows = rank_circuit_rows([circuit_row(e) for e in circuit_entries])
    table = markdown(rows, refused, failed)
    out.mkdir(parents=True, exist_ok=True)
    radar_dir = out / "radar"
    figures = []
    if single:
        _bar_chart(rows, out / "board.png")
        _per_task_chart(rows, out / "per_task.png")
        radar_dir.mkdir(exist_ok=True)
        for r in rows:
            _radar(r, radar_dir / f"{check_name(r['name'])}.png")
        figures = [Figure("held-out best-of-5 recovery per entry (95% CI)", out / "board.png"),
                   Figure("best-of-5 recovery per held-out task; memoriser and chance as lines", out / "per_task.png")]  # fmt: skip
    readme = out / "README.md"
    text = readme.read_text() if readme.exists() else f"# Leaderboard\n\n{MARK_BEGIN}\n{MARK_END}\n"
    if MARK_BEGIN not in text:
        text += f"\n{MARK_BEGIN}\n{MARK_END}\n"
    head, rest = text.split(MARK_BEGIN, 1)
    tail = rest.split(MARK_END, 1)[1]
    body = f"{table}\n\n![board](board.png)\n![per task](per_task.png)\n" if single else ""
    if crows:
        body += f"\n{circuit_markdown(crows)}\n"
    if not single:  # the single-head table, which lists them, is not there
        body += "\n".join(failures_markdown(failed, refused)) + "\n"
    readme.write_text(f"{head}{MARK_BEGIN}\n{body}{MARK_END}{tail}")
    about = (f"Benchmark {B.BENCHMARK_VERSION}: held-out tasks {', '.join(B.HELD_OUT_TASKS)} ({B.SPLIT} split), "
             f"{len(B.EVAL_SEEDS)} seeds, {B.ABLATION} ablation, lambda {B.LAM}. Recovery: sum of chosen rewards / "
             "sum of oracle rewards over the episodes with a positive oracle; above memoriser: minus the fixed-head "
             "memoriser's on the same episodes; LM passes: what the solver ran per episode inside its rank call. "
             "Check: hash-checked, rescored (render --rescore matched) or verified (rescored with private scores).")  # fmt: skip
    write_page(out / "index.html", rows, {e["name"]: e for e in entries}, tasks=B.HELD_OUT_TASKS, about=about,
               failed=failed, refused=refused, radar={r["name"]: radar_dir / f"{check_name(r['name'])}.png" for r in rows},
               figures=figures, circuit_rows=crows, circuit_about=circuit_about() if crows else "")  # fmt: skip
    return {"rows": rows, "circuit_rows": crows, "refused": refused, "failed": [f["name"] for f in failed]}
