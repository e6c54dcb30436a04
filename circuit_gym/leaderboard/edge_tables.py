"""The edge track's board section (Markdown, which the HTML page renders too) and every entry's
circuits in MIB's layout.

One row per entry (``circuit_gym/leaderboard/edge_scorer.py``'s results), ranked by the columns
only the maintainers can compute (the private model's edge CPR, then the secret planted models'
AUC), then by the public held-out models' edge CPR. The passes each part cost sit beside it.

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

import io
import json
import tarfile
from pathlib import Path

from circuit_gym.leaderboard.edge_benchmark import edge_benchmark

MIB_SUFFIX = ".mib.tar.xz"


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _all(scores: dict | None, part: str) -> dict:
    return ((scores or {}).get(part) or {}).get("all") or {}


def edge_row(entry: dict) -> dict:
    """The table's fields of one verified edge entry."""
    scores, private = entry["scores"], (entry.get("private") or {}).get("scores")
    transfer, planted = _all(scores, "transfer"), _all(scores, "planted")
    hidden_t, hidden_p = _all(private, "transfer"), _all(private, "planted")
    return {
        "name": entry["name"], "check": entry["board"]["check"], "reference": entry["board"]["reference"],
        "policy": entry["provenance"]["policy"], "white_box": bool(entry["provenance"].get("white_box")),
        "private_cpr": hidden_t.get("cpr"), "cpr": transfer.get("cpr"), "cpr_ci": transfer.get("cpr_ci95"),
        "cmd": transfer.get("cmd"), "faithfulness": transfer.get("faithfulness"),
        "transfer_passes": transfer.get("lm_passes"),
        "secret": tuple(hidden_p.get(m) for m in ("precision", "recall", "auc")),
        "public": tuple(planted.get(m) for m in ("precision", "recall", "auc")),
        "planted_passes": planted.get("lm_passes"),
    }  # fmt: skip


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
    """What the edge track's columns mean (plain text)."""
    d = edge_benchmark(track).definition()
    return (
        f"{d['benchmark_version']}: circuits as edges (MIB's graph, exact edge patching), played in the "
        f"edge-building environment (top {d['candidates']} |EAP-IG| edges as candidates, at most {d['budget']} added). "
        f"Transfer: edge CPR [95% CI] and CMD of the ranking at MIB's sizes, and f of the proposed circuit, on "
        f"held-out tasks {', '.join(d['tasks'])} of the public held-out models {', '.join(d['held_out_models'])} "
        f"({len(d['seeds'])} test batch per pair), and on the maintainers' private model (only they can reproduce "
        f"it; '-' where it was not given). Planted (generator v{d['planted_generator']}, kinds "
        f"{', '.join(d['planted_kinds'])}): precision / recall of the proposed circuit and AUC of the ranking "
        f"against the planted edge truth, on {len(d['planted_public_seeds'])} public seeds per kind and "
        f"{d['planted_private_models']} secret models per kind. A reference's circuit is {d['reference_proposed']}. "
        "LM passes / episode: the environment's count for a policy (setup and one per added edge), the "
        "ranking's own record for a reference."
    )


def _prt(values: tuple) -> str:
    if any(v is None for v in values):
        return "-"
    return f"{values[0]:.2f} / {values[1]:.2f} / {values[2]:.3f}"


def edge_markdown(rows: list[dict], track: str) -> str:
    """The Markdown section of one edge track (rows ranked)."""
    lines = [f"### Edge track ({track})", "", edge_about(track), ""]
    cols = ["private model: edge CPR", "held-out models: edge CPR", "edge CMD", "f (circuit)",
            "LM passes / episode (transfer)", "planted secret: P / R / AUC", "planted public: P / R / AUC",
            "LM passes / episode (planted)"]  # fmt: skip
    lines.append("| # | entry | check | " + " | ".join(cols) + " |")
    lines.append("|---" * (3 + len(cols)) + "|")
    for i, r in enumerate(rows, 1):
        ci = r.get("cpr_ci")
        interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci and None not in ci else ""
        name = (
            f"{r['name']} (reference)" if r["reference"] else r["name"]
        )  # plain: the HTML page shows it as text
        cells = [_num(r["private_cpr"]), f"{_num(r['cpr'])}{interval}", _num(r["cmd"]), _num(r["faithfulness"]),
                 _num(r["transfer_passes"], 0), _prt(r["secret"]), _prt(r["public"]), _num(r["planted_passes"], 0)]  # fmt: skip
        lines.append(f"| {i} | {name} | {r['check']} | " + " | ".join(cells) + " |")
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


def write_mib_export(result_path: str | Path) -> Path | None:
    """Write (or refresh) the MIB export beside a scored edge result; None for a result with no episodes."""
    result = json.loads(Path(result_path).read_text())
    if result.get("status") != "scored":
        return None
    out, data = mib_path(result_path), mib_export(result)
    if not out.is_file() or out.read_bytes() != data:
        out.write_bytes(data)
    return out
