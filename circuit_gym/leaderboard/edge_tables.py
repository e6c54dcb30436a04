"""The edge track's board section (Markdown, which the HTML page renders too) and every entry's
circuits in MIB's layout.

One row per entry (``circuit_gym/leaderboard/edge_scorer.py``'s results), ranked by the columns
only the maintainers can compute (the private model's edge CPR, then the secret planted models'
AUC), then by the public held-out models' edge CPR. The passes each part cost sit beside it.

The track (edge protocol 2, issue 57) ranks on CPR / CMD on the log size axis
(``cpr_log`` / ``cmd_log``), keeps MIB's linear CPR / CMD as secondary columns, and shows for each
entry the **paired difference** to the entry ranked below it (:func:`adjacent_paired`: the mean
of their per-episode differences over the public episodes both played and its 95% t-interval,
``circuit_gym/edges/paired.py``), of the transfer part's ``cpr_log`` and the planted part's AUC.

:func:`write_mib_export`: beside a result ``NAME.json``, ``NAME.mib.tar.xz`` holds one MIB circuit
file per public episode (``transfer/{model}/{task}/seed{seed}.json``, ``planted/{kind}/seed{seed}.json``),
written by ``circuit_gym.edges.mib_files.edge_circuit_to_mib``: every edge of the graph, ``in_graph``
the episode's proposed circuit (the result's row), scores ``null`` (the row keeps the circuit, not
the ranking of 29,089 edges). A tar archive compressed as one stream (xz), because every member
repeats the same 29,089 edge names: 16 members take ~12 kB, where a zip (each member compressed
apart) took 1.2 MB. The archive is a function of the result, whose content hash seals it: fixed
member order, times and owners, so the same result always gives the same bytes.
``circuit-gym circuits score FILE`` scores any member from outside.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from circuit_gym.edges.paired import adjacent_differences, paired_difference
from circuit_gym.leaderboard import costs
from circuit_gym.leaderboard.edge_benchmark import edge_benchmark
from circuit_gym.stats import mean_ci95

MIB_SUFFIX = ".mib.tar.xz"


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _all(scores: dict | None, part: str) -> dict:
    return ((scores or {}).get(part) or {}).get("all") or {}


# what each part's paired difference reads: (part, per-episode metric); the
# planted part's AUC over the candidates only (``auc`` over every edge mostly reads which edges
# are candidates, the top K by |EAP-IG|: edge_scorer.candidate_auc)
PAIRED_COLUMNS = (("transfer", "cpr_log"), ("planted", "auc_candidates"))
PLANTED_COLUMNS = ("precision", "recall", "auc_candidates")


def episode_scores(result: dict, metric: str = "cpr_log", part: str = "transfer") -> dict[tuple, float]:
    """A scored result's per-episode ``metric`` of ``part``, keyed by (model or kind, task, seed)."""
    rows = [r for r in result["scores"]["episodes"] if r["part"] == part]
    return {
        (r.get("model", r.get("kind")), r.get("task", ""), int(r["seed"])): float(r[metric]) for r in rows
    }


def paired_table(results: dict[str, dict], metric: str = "cpr_log", part: str = "transfer") -> list[dict]:
    """The order of ``results`` (name -> scored result) by mean ``metric`` (higher first; CMD lower
    first; ties by name) and each adjacent pair's paired difference with its 95% interval."""
    scored = {name: episode_scores(r, metric, part) for name, r in results.items()}
    per_entry = {name: s for name, s in scored.items() if s}  # a sample may hold none of this part
    lower_better = metric.startswith("cmd")
    means = {n: sum(s.values()) / len(s) for n, s in per_entry.items()}
    order = sorted(means, key=lambda n: (means[n] if lower_better else -means[n], n))
    return adjacent_differences(per_entry, order)


# the report's columns: the ranking pair of the transfer part and the planted part's AUC
REPORT_COLUMNS = (
    ("transfer", "cpr_log"),
    ("transfer", "cmd_log"),
    ("transfer", "cpr"),
    ("transfer", "cmd"),
    ("transfer", "faithfulness"),
    ("planted", "recall"),
    ("planted", "auc_candidates"),
    ("planted", "auc"),
)


def paired_report(results: dict[str, dict], versus: tuple[tuple[str, str], ...] = ()) -> dict:
    """Per column of :data:`REPORT_COLUMNS` (keyed ``{part}_{metric}``): each entry's mean and 95%
    interval over its public episodes (``means``), the adjacent paired differences in the order of
    :func:`paired_table` (``adjacent``), and ``a - b`` for each named pair of ``versus``
    (``versus``, keyed ``{a}_vs_{b}``). An entry whose rows lack a column (scored before the
    column existed) is left out of that column and named under it in ``missing``."""
    out: dict = {"entries": sorted(results), "means": {}, "adjacent": {}, "versus": {}, "missing": {}}
    for part, metric in REPORT_COLUMNS:
        column = f"{part}_{metric}"
        has = {n: r for n, r in results.items()
               if all(metric in e for e in r["scores"]["episodes"] if e["part"] == part)}  # fmt: skip
        if len(has) < len(results):
            out["missing"][column] = sorted(set(results) - set(has))
        scored = {n: episode_scores(r, metric, part) for n, r in has.items()}
        per_entry = {n: s for n, s in scored.items() if s}  # a sample may hold none of this part
        out["means"][column] = {}
        for name, scores in per_entry.items():
            mean, ci = mean_ci95(list(scores.values()))
            out["means"][column][name] = {"mean": mean, "ci95": ci, "episodes": len(scores)}
        out["adjacent"][column] = paired_table(has, metric, part)
        for a, b in versus:
            if a in per_entry and b in per_entry:
                d = paired_difference(per_entry[a], per_entry[b])
                low, high = d["ci95"]
                out["versus"].setdefault(f"{a}_vs_{b}", {})[column] = {
                    **d,
                    "separated": bool(low > 0 or high < 0),
                }
    return out


def _entry_head(entry: dict) -> dict:
    """Who the entry is, and its policy's own CPU seconds per public episode (issue 58)."""
    episodes = len(entry["scores"].get("episodes") or [])
    return {"name": entry["name"], "check": entry["board"]["check"], "reference": entry["board"]["reference"],
            "policy": entry["provenance"]["policy"], "white_box": bool(entry["provenance"].get("white_box")),
            "policy_cpu": costs.policy_cpu_per_episode(entry, episodes)}  # fmt: skip


def _parts(entry: dict) -> tuple[dict, dict, dict, dict]:
    """The "all" summaries of the public transfer and planted parts, then of the private ones."""
    scores, private = entry["scores"], (entry.get("private") or {}).get("scores")
    return (
        _all(scores, "transfer"),
        _all(scores, "planted"),
        _all(private, "transfer"),
        _all(private, "planted"),
    )


def edge_row(entry: dict) -> dict:
    """One verified edge entry's fields: the ranking columns are ``cpr_log`` / ``cmd_log`` (under the
    keys ``cpr`` / ``cmd``, so the board ranks on them), MIB's linear pair under ``mib_cpr`` /
    ``mib_cmd``, and ``paired``: per part, the per-episode scores its paired differences read."""
    head, (transfer, planted, hidden_t, hidden_p) = _entry_head(entry), _parts(entry)
    return {
        **head, "private_cpr": hidden_t.get("cpr_log"), "cpr": transfer.get("cpr_log"),
        "cpr_ci": transfer.get("cpr_log_ci95"), "cmd": transfer.get("cmd_log"), "mib_cpr": transfer.get("cpr"),
        "mib_cmd": transfer.get("cmd"), "faithfulness": transfer.get("faithfulness"),
        "transfer_passes": transfer.get("lm_passes"),
        "secret": tuple(hidden_p.get(m) for m in PLANTED_COLUMNS),
        "public": tuple(planted.get(m) for m in PLANTED_COLUMNS),
        "planted_passes": planted.get("lm_passes"),
        "paired": {part: episode_scores(entry, metric, part) for part, metric in PAIRED_COLUMNS},
    }  # fmt: skip


def adjacent_paired(rows: list[dict], part: str) -> list[dict | None]:
    """For each ranked row, the paired difference (``{"mean", "ci95", "n"}``) of ``part``
    between it and the row below; None for the last row and where the two share no episode."""
    out: list[dict | None] = []
    for upper, lower in zip(rows, rows[1:], strict=False):
        d = paired_difference(upper["paired"][part], lower["paired"][part])
        out.append(d if d["n"] else None)
    return [*out, None] if rows else []


def rank_edge_rows(rows: list[dict]) -> list[dict]:
    """Private model's edge CPR, then the secret models' AUC (entries without them after), then
    the public held-out models' edge CPR."""

    def order(r: dict) -> tuple:
        private, secret, public = r["private_cpr"], r["secret"][2], r["cpr"]
        return (
            private is None,
            -(private or 0.0),
            secret is None,
            -(secret or 0.0),
            -(public or 0.0),
            r["name"],
        )

    return sorted(rows, key=order)


def agent_target(rows: list[dict], agent: str = "edge_ppo") -> dict:
    """Issue 43's target on one edge track's rows (``edge_row``): the agent's secret-model AUC and
    private-model edge CPR against the best reference of **no more passes** than it uses (per part:
    its planted passes for AUC, its transfer passes for CPR); met when the agent's is at least that
    reference's. Missing columns (no secret or private scoring) give no target."""
    me = next((r for r in rows if r["name"] == agent), None)
    out: dict = {}
    if me is None:
        return out
    for key, value_of, passes_key in (("secret_auc", lambda r: r["secret"][2], "planted_passes"),
                                      ("private_cpr", lambda r: r["private_cpr"], "transfer_passes")):  # fmt: skip
        mine, budget = value_of(me), me[passes_key]
        rivals = [r for r in rows if r["name"] != agent and r["reference"]  # every reference, random too
                  and value_of(r) is not None and r[passes_key] is not None and r[passes_key] <= budget]  # fmt: skip
        if mine is None or budget is None or not rivals:
            continue
        best = max(rivals, key=value_of)
        out[key] = {"agent": mine, "passes": budget, "best_reference": best["name"], "reference": value_of(best),
                    "reference_passes": best[passes_key], "met": mine >= value_of(best)}  # fmt: skip
    return out


def edge_about(track: str) -> str:
    """What the edge track's columns mean (plain text), from its definition."""
    d = edge_benchmark(track).definition()
    return (
        f"{d['benchmark_version']} (edge protocol {d['edge_protocol']}): circuits as edges (MIB's graph, exact edge "
        f"patching), played in the edge-building environment (top {d['candidates']} |EAP-IG| edges as candidates, "
        f"at most {d['budget']} added). The entry's ranking is {d['ranking']}. Transfer: CPR (log) [95% CI] and CMD "
        f"(log), MIB's CPR / CMD on a log10 size axis up to 5% of the edges and at most {d['candidates']} edges "
        "(every doubling of the circuit weighs alike), MIB's linear-axis CPR / CMD beside them, and f of the "
        f"proposed circuit, on held-out tasks {', '.join(d['tasks'])} of the public held-out models "
        f"{', '.join(d['held_out_models'])} ({len(d['seeds'])} test batches per pair), and on the maintainers' "
        f"private model ('-' where it was not given). Planted (generator v{d['planted_generator']}, kinds "
        f"{', '.join(d['planted_kinds'])}): precision / recall of the proposed circuit and AUC of the entry's order "
        "of its candidates against the planted edge truth among them, on "
        f"{len(d['planted_public_seeds'])} public seeds per kind and "
        f"{d['planted_private_models']} secret models per kind. 'To next': the paired difference to the entry ranked "
        "below, the mean over the public episodes both played of this entry's score minus that entry's, with its "
        f"95% t-interval. A reference's circuit is {d['reference_proposed']}. LM passes / episode: the environment's "
        "count for a policy, the ranking's own record for a reference."
    )


def _prt(values: tuple) -> str:
    if any(v is None for v in values):
        return "-"
    return f"{values[0]:.2f} / {values[1]:.2f} / {values[2]:.3f}"


def _paired_cell(d: dict | None, digits: int = 3) -> str:
    if d is None:
        return "-"
    low, high = d["ci95"]
    interval = "" if low != low else f" [{low:+.{digits}f}, {high:+.{digits}f}]"  # NaN below two pairs
    return f"{d['mean']:+.{digits}f}{interval}"


def edge_markdown(rows: list[dict], track: str) -> str:
    """The Markdown section of the edge track (rows ranked): the log-axis columns, MIB's linear
    pair, and each entry's paired differences to the entry below."""
    lines = [f"### Edge track ({track})", "", edge_about(track), ""]
    cols = ["private model: CPR (log)", "held-out models: CPR (log)", "CMD (log)", "MIB CPR / CMD (linear)",
            "f (circuit)", "LM passes / episode (transfer)", "to next: paired CPR (log) [95% CI]",
            "planted secret: P / R / AUC (candidates)", "planted public: P / R / AUC (candidates)",
            "to next: paired AUC (candidates) [95% CI]",
            "LM passes / episode (planted)", "policy CPU s / episode"]  # fmt: skip
    lines.append("| # | entry | check | " + " | ".join(cols) + " |")
    lines.append("|---" * (3 + len(cols)) + "|")
    transfer, planted = adjacent_paired(rows, "transfer"), adjacent_paired(rows, "planted")
    for i, r in enumerate(rows):
        ci = r.get("cpr_ci")
        interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci and None not in ci else ""
        name = f"{r['name']} (reference)" if r["reference"] else r["name"]
        linear = "-" if r["mib_cpr"] is None else f"{_num(r['mib_cpr'])} / {_num(r['mib_cmd'])}"
        cells = [_num(r["private_cpr"]), f"{_num(r['cpr'])}{interval}", _num(r["cmd"]), linear,
                 _num(r["faithfulness"]), _num(r["transfer_passes"], 0), _paired_cell(transfer[i]),
                 _prt(r["secret"]), _prt(r["public"]), _paired_cell(planted[i]), _num(r["planted_passes"], 0),
                 costs.cpu_cell(r.get("policy_cpu"))]  # fmt: skip
        lines.append(f"| {i + 1} | {name} | {r['check']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ MIB's layout
def mib_path(result_path: str | Path) -> Path:
    """Where the MIB export of the result ``result_path`` lies: beside it."""
    path = Path(result_path)
    return path.with_name(path.stem + MIB_SUFFIX)


def _graph_cfg(track: str, row: dict) -> dict:
    from circuit_gym.models.loading import embedded_dir
    from circuit_gym.models.planted.versions import generator

    if row["part"] == "transfer":
        return json.loads((embedded_dir(row["model"]) / "config.json").read_text())
    return generator(edge_benchmark(track).planted_generator).layout.config()


def _member(row: dict) -> str:
    if row["part"] == "transfer":
        return f"transfer/{row['model']}/{row['task']}/seed{row['seed']}.json"
    return f"planted/{row['kind']}/seed{row['seed']}.json"


def mib_export(result: dict) -> bytes:
    """The archive of the result's circuits, one MIB file per public episode (deterministic bytes)."""
    from circuit_gym.edges.circuit import EdgeCircuit
    from circuit_gym.edges.graph import EdgeGraph
    from circuit_gym.edges.mib_files import edge_circuit_to_mib

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz", format=tarfile.PAX_FORMAT) as archive:
        for row in result["scores"]["episodes"]:
            cfg = _graph_cfg(result["track"], row)
            graph = EdgeGraph(cfg["n_layers"], cfg["n_heads"], not cfg.get("attn_only", False))
            data = edge_circuit_to_mib(EdgeCircuit.from_names(row["circuit"], graph), d_model=cfg["d_model"])
            body = json.dumps(data, allow_nan=False).encode()
            info = tarfile.TarInfo(_member(row))  # mtime 0, owner 0: no clock or user in the bytes
            info.size, info.mode = len(body), 0o644
            archive.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


# The export's layout: bump it when mib_export's bytes change for the same result, so every
# committed export (and its source record) is made again.
MIB_EXPORT_FORMAT = 1


def mib_source_path(result_path: str | Path) -> Path:
    """The committed record beside an export of what it was made from (``X.mib.source``, JSON; not
    ``.json``: a result folder's ``.json`` files are read as results)."""
    return mib_path(result_path).with_name(mib_path(result_path).name.removesuffix(".tar.xz") + ".source")


def _source_record(result: bytes, export: bytes) -> dict:
    return {"format": MIB_EXPORT_FORMAT, "result_sha256": hashlib.sha256(result).hexdigest(),
            "export_sha256": hashlib.sha256(export).hexdigest()}  # fmt: skip


def mib_export_is_current(result_path: str | Path) -> bool:
    """Whether the export beside ``result_path`` was made from these result bytes, in this layout, and
    is unchanged since: then ``render`` keeps it instead of rebuilding it (rebuilding every export,
    mostly xz compression, was most of a fresh clone's render)."""
    result_path = Path(result_path)
    out, record = mib_path(result_path), mib_source_path(result_path)
    if not (out.is_file() and record.is_file()):
        return False
    return json.loads(record.read_text()) == _source_record(result_path.read_bytes(), out.read_bytes())


def write_mib_export(result_path: str | Path) -> Path | None:
    """Write (or refresh) the MIB export beside a scored edge result, and its source record; None
    for a result with no episodes."""
    result_path = Path(result_path)
    raw = result_path.read_bytes()
    result = json.loads(raw)
    if result.get("status") != "scored":
        return None
    out, data = mib_path(result_path), mib_export(result)
    if not out.is_file() or out.read_bytes() != data:
        out.write_bytes(data)
    mib_source_path(result_path).write_text(json.dumps(_source_record(raw, data), indent=1) + "\n")
    return out
