"""The leaderboard as one static, self-contained web page (``leaderboard/index.html``).

(Named ``html_page`` so that it never shadows the standard library's ``html``.)

Nothing is fetched when the page is viewed: the style and the sorting script are inline and
every figure is a ``data:`` URI, so the file can be opened from disk, attached to an e-mail or
served by any static host. A Content-Security-Policy forbids every network request and runs
only the page's own script (by its SHA-256), so even a string that escaped escaping could not
run code or load anything.

Every string that comes from a result file (entry names, policy specs, failure reasons,
isolation details) or from a refusal message is HTML-escaped; numbers are formatted here.
Columns are sortable by clicking their header: each cell carries its sort value in
``data-sort`` (numbers; empty for "no value", which sorts last either way).

Optional fields of a result are shown when present and said to be absent otherwise:
``isolation`` (``{"complete": bool, "mechanism": str | None, "missing": [...]}``, written by a
scorer that isolates the policy) and circuit scores per held-out task (``cpr`` / ``cmd`` with
``cpr_ci95`` / ``cmd_ci95``, under ``scores["circuits"][task]`` or ``scores["per_task"][task]``).
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from circuit_gym import benchmark as B
from circuit_gym.reporting.transfer_tables import transfer_heading

# The page's style and sorting script are files of their own (static/board.css, static/board.js)
# and go inline into every page (nothing is fetched when it is viewed). The script sorts a
# column numerically where every non-empty data-sort parses as a number, else as text, empty
# last. Each is inlined after a newline, as the page has always had it, so the script's
# hash (the CSP's) is unchanged.
_STATIC = resources.files("circuit_gym.leaderboard") / "static"
SCRIPT = "\n" + (_STATIC / "board.js").read_text(encoding="utf-8")
STYLE = "\n" + (_STATIC / "board.css").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Figure:
    caption: str
    path: Path


def data_uri(path: Path) -> str:
    """A PNG file as a ``data:`` URI (no file or network access when the page is viewed)."""
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _finite(x: object) -> bool:
    return x is not None and isinstance(x, int | float) and math.isfinite(x)


def _cell(text: str, sort: float | str | None = None, *, css: str = "", title: str = "") -> str:
    """A ``<td>``; ``text`` is escaped here, ``sort`` is its sort value (None: no value)."""
    attrs = f' class="{css}"' if css else ""
    if sort is not None:
        value = (repr(float(sort)) if _finite(sort) else "") if not isinstance(sort, str) else sort
        attrs += f' data-sort="{escape(value)}"'
    if title:
        attrs += f' title="{escape(title)}"'
    return f"<td{attrs}>{text}</td>"


def _number(x: object, digits: int = 3, signed: bool = False, ci: Sequence | None = None) -> str:
    """Escaped text of a number with its interval underneath (``-`` for no value)."""
    if not _finite(x):
        return "-"
    text = f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
    if ci is not None and len(ci) == 2 and all(_finite(c) for c in ci):
        text += f"<small>[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]</small>"
    return text


def isolation_text(result: Mapping) -> tuple[str, str]:
    """(escaped cell text, sort value) of a result's ``isolation`` record."""
    iso = result.get("isolation")
    if not isinstance(iso, Mapping):
        return '<span class="missing">not recorded</span>', "0"
    mechanism = iso.get("mechanism")
    label = escape(str(mechanism)) if mechanism else "none"
    if iso.get("complete") is True:
        return f"complete<small>{label}</small>", "2"
    missing = iso.get("missing") or []
    missing_text = ", ".join(str(m) for m in missing) if isinstance(missing, list) else str(missing)
    return f'<span class="missing">partial</span><small>{label}; missing: {escape(missing_text)}</small>', "1"


def circuit_scores(result: Mapping, task: str) -> Mapping | None:
    """The ``cpr`` / ``cmd`` record of a held-out task, if the result has one."""
    scores = result.get("scores") or {}
    for record in ((scores.get("circuits") or {}).get(task), (scores.get("per_task") or {}).get(task)):
        if isinstance(record, Mapping) and ("cpr" in record or "cmd" in record):
            return record
    return None


def _per_task(result: Mapping, task: str, k: int) -> tuple[float | None, Sequence | None]:
    record = ((result.get("scores") or {}).get("per_task") or {}).get(task) or {}
    kk = record.get(f"k{k}") or {}
    return kk.get("recovery"), kk.get("recovery_ci95")


def _entry_cell(row: Mapping) -> str:
    tags = ""
    if row.get("reference"):
        tags += '<span class="tag reference">reference</span>'
    if row.get("white_box"):
        tags += '<span class="tag white-box" title="reads the task metric">white-box</span>'
    return _cell(f"{escape(str(row['name']))}{tags}<small>{escape(str(row.get('policy', '')))}</small>",
                 str(row["name"]), css="text")  # fmt: skip


def _check_cell(check: str) -> str:
    return _cell(escape(check), {"verified": "3", "rescored": "2", "hash-checked": "1"}.get(check, "0"),
                 css="text verified" if check == "verified" else "text")  # fmt: skip


def table(rows: Sequence[Mapping], results: Mapping[str, Mapping], tasks: Sequence[str],
          radar: Mapping[str, Path] | None = None) -> str:  # fmt: skip
    """The sortable entries table; ``rows`` as ranked by the board, ``results`` by entry name."""
    circuits = any(circuit_scores(results[r["name"]], t) for r in rows for t in tasks)
    head = ["rank", "entry", "check", "isolation", "best-of-5 recovery", "best-of-1 recovery", "top-1 hit",
            "above memoriser, best-of-5", "above memoriser, best-of-1", "private best-of-5", "private best-of-1"]  # fmt: skip
    head += [f"{t}: best-of-5" for t in tasks] + [f"{t}: best-of-1" for t in tasks]
    if circuits:
        head += [f"{t}: {m}" for t in tasks for m in ("CPR", "CMD")]
    head += ["LM forward passes / episode", "partial passes / episode", "backward passes / episode",
             "reproducibility spread", "top-5 consistency"]  # fmt: skip
    if radar:
        head.append("profile")
    text_columns = {"entry", "check", "isolation", "profile"}
    ths = "".join(
        f'<th scope="col"{" class=text" if h in text_columns else ""}>{escape(h)}</th>' for h in head
    )
    body = []
    for rank, r in enumerate(rows, 1):
        result = results[r["name"]]
        iso_text, iso_sort = isolation_text(result)
        cells = [_cell(str(rank), rank), _entry_cell(r), _check_cell(str(r["check"])),
                 _cell(iso_text, iso_sort, css="text"),
                 _cell(_number(r["k5"], ci=r.get("k5_ci")), r["k5"]), _cell(_number(r["k1"]), r["k1"]),
                 _cell(_number(r["top1"], 2), r["top1"]),
                 _cell(_number(r["above_fixed_k5"], signed=True, ci=r.get("above_fixed_k5_ci")), r["above_fixed_k5"]),
                 _cell(_number(r["above_fixed_k1"], signed=True, ci=r.get("above_fixed_k1_ci")), r["above_fixed_k1"]),
                 _cell(_number(r.get("private_k5"), ci=r.get("private_k5_ci")), r.get("private_k5")),
                 _cell(_number(r.get("private_k1")), r.get("private_k1"))]  # fmt: skip
        for k in (5, 1):
            for t in tasks:
                value, ci = _per_task(result, t, k)
                cells.append(_cell(_number(value, ci=ci), value))
        if circuits:
            for t in tasks:
                record = circuit_scores(result, t) or {}
                for m in ("cpr", "cmd"):
                    cells.append(_cell(_number(record.get(m), ci=record.get(f"{m}_ci95")), record.get(m)))
        cells += [_cell(f"{r['forward']:.3g}", r["forward"]), _cell(f"{r['partial']:.3g}", r["partial"]),
                  _cell(f"{r['backward']:.3g}", r["backward"]), _cell(_number(r["spread"]), r["spread"]),
                  _cell(_number(r["consistency"], 2), r["consistency"])]  # fmt: skip
        if radar:
            src = radar.get(r["name"])
            img = (
                f'<img src="{data_uri(src)}" width="100" alt="profile of {escape(str(r["name"]))}">'
                if src
                else ""
            )
            cells.append(_cell(img, css="text"))
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="sortable" id="entries"><thead><tr>{ths}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")  # fmt: skip


def circuit_table(rows: Sequence[Mapping]) -> str:
    """The circuit track's sortable table (rows as ``board.circuit_row`` makes them, ranked)."""
    head = ["rank", "entry", "check", "CPR", "CMD", "faithfulness", "circuit size", "forward passes / episode",
            "private CPR", "private CMD"]  # fmt: skip
    ths = "".join(
        f'<th scope="col"{" class=text" if h in ("entry", "check") else ""}>{escape(h)}</th>' for h in head
    )
    body = []
    for rank, r in enumerate(rows, 1):
        check = str(r["check"]) + (" (not isolated)" if r.get("isolation") else "")
        cells = [_cell(str(rank), rank), _entry_cell(r), _check_cell(check),
                 _cell(_number(r["cpr"], ci=r.get("cpr_ci")), r["cpr"]),
                 _cell(_number(r["cmd"], ci=r.get("cmd_ci")), r["cmd"]),
                 _cell(_number(r["faithfulness"]), r["faithfulness"]), _cell(_number(r["size"], 2), r["size"]),
                 _cell(f"{r['forward']:.4g}" if _finite(r["forward"]) else "-", r["forward"]),
                 _cell(_number(r.get("private_cpr"), ci=r.get("private_cpr_ci")), r.get("private_cpr")),
                 _cell(_number(r.get("private_cmd"), ci=r.get("private_cmd_ci")), r.get("private_cmd"))]  # fmt: skip
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="sortable" id="circuit"><thead><tr>{ths}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")  # fmt: skip


def transfer_table(rows: Sequence[Mapping], track: str) -> str:
    """A transfer track's sortable table (rows as ``transfer_tables.transfer_row`` makes them,
    ranked): the private model's column, then the four public quadrants."""
    from circuit_gym.benchmark import QUADRANTS
    from circuit_gym.leaderboard.transfer_tables import AWAITING, SHORT

    circuit = B.is_transfer_circuit(track)
    groups = ("private", *QUADRANTS)
    head = ["rank", "entry", "check"]
    for g in groups:
        label = "private model" if g == "private" else SHORT[g]
        head += [f"{label}: CPR"] if circuit else [f"{label}: best-of-1", f"{label}: best-of-5"]
    head += ["LM passes / episode", "policy CPU s / episode"]
    ths = "".join(
        f'<th scope="col"{" class=text" if h in ("entry", "check") else ""}>{escape(h)}</th>' for h in head
    )
    body = []
    for rank, r in enumerate(rows, 1):
        entry = _entry_cell(r)
        if r.get("awaiting"):  # no private score yet: placed on its public scores (transfer_tables)
            entry = entry.replace("</td>", f'<br><span class="tag">{escape(AWAITING)}</span></td>', 1)
        check = str(r["check"]) + (" (not isolated)" if r.get("isolation") else "")
        cells = [_cell(str(rank), rank), entry, _check_cell(check)]
        for g in groups:
            for key in (g,) if circuit else (f"{g}_k1", f"{g}_k5"):
                if g == "private" and r.get("awaiting"):
                    cells.append(_cell("awaiting", None, title=AWAITING))
                    continue
                cells.append(_cell(_number(r.get(key), ci=r.get(f"{key}_ci")), r.get(key)))
        cells.append(_cell(f"{r['passes']:.4g}" if _finite(r.get("passes")) else "-", r.get("passes")))
        cpu = r.get("policy_cpu")
        cells.append(_cell(f"{cpu:.2g}" if _finite(cpu) else "-", cpu))
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="sortable" id="{escape(track)}"><thead><tr>{ths}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")  # fmt: skip


def markdown_section(text: str) -> str:
    """A board section written in Markdown (headings, paragraphs, pipe tables) as escaped HTML."""
    out: list[str] = []
    rows: list[str] = []

    def flush() -> None:
        if rows:
            head, *body = [[escape(c.strip()) for c in r.strip().strip("|").split("|")] for r in rows
                           if not set(r.replace("|", "").strip()) <= {"-"}]  # fmt: skip
            ths = "".join(f"<th scope=col>{c}</th>" for c in head)
            trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in body)
            out.append(
                f'<div class="scroll"><table><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table></div>'
            )
            rows.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            rows.append(line)
            continue
        flush()
        if line.startswith("#"):
            out.append(f"<h2>{escape(line.lstrip('#').strip())}</h2>")
        elif line.strip():
            out.append(f'<p class="about">{escape(line)}</p>')
    flush()
    return "".join(out)


def _failures(failed: Sequence[Mapping], refused: Sequence[str]) -> str:
    out = ""
    if failed:
        items = "".join(
            f"<li><b>{escape(str(f.get('name')))}</b> ({escape(str(f.get('track') or B.SINGLE_HEAD))}, "
            f"{escape(str((f.get('board') or {}).get('check', '')))}): "
            f"{escape(str((f.get('failure') or {}).get('type', '')))}"
            f"<pre>{escape(str((f.get('failure') or {}).get('reason', '')))}</pre></li>"
            for f in failed
        )
        out += f'<h2>Failed submissions ({len(failed)}, no score)</h2><ul id="failed">{items}</ul>'
    if refused:
        out += '<h2>Refused result files</h2><ul id="refused">' + "".join(
            f"<li>{escape(m)}</li>" for m in refused
        ) + "</ul>"  # fmt: skip
    return out


def page(rows: Sequence[Mapping], results: Mapping[str, Mapping], *, tasks: Sequence[str], about: str,
         title: str = "circuit_gym leaderboard", failed: Sequence[Mapping] = (), refused: Sequence[str] = (),
         figures: Sequence[Figure] = (), radar: Mapping[str, Path] | None = None,
         circuit_rows: Sequence[Mapping] = (), circuit_about: str = "",
         transfer: Sequence[tuple[str, str, Sequence[Mapping]]] = (), planted: str = "",
         edges: str = "") -> str:  # fmt: skip
    """The whole page as a string (``about``: plain text, escaped here). ``circuit_rows``: the
    circuit track's entries, in their own table after the single-head one (which is left out
    when there are circuit entries only). ``transfer``: (track, about, ranked rows) of each
    transfer track (benchmark v6), each in its own table first: the board ranks on them.
    ``planted`` and ``edges``: those tracks' sections, in Markdown (``markdown_section``)."""
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    csp = (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; "
           "base-uri 'none'; form-action 'none'")  # fmt: skip
    circuit = (
        f'<h2>Circuit track</h2><p class="about">{escape(circuit_about)}</p>{circuit_table(circuit_rows)}'
        if circuit_rows
        else ""
    )
    transfer_html = "".join(
        f"<h2>{escape(transfer_heading(t))}</h2>"
        f'<p class="about">{escape(about_t)}</p>{transfer_table(rows_t, t)}'
        for t, about_t, rows_t in transfer
    )
    figs = "".join(
        f'<figure><img src="{data_uri(f.path)}" alt="{escape(f.caption)}"><figcaption>{escape(f.caption)}'
        "</figcaption></figure>"
        for f in figures
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f'<h1>{escape(title)}</h1><p class="about">{escape(about)}</p>'
        '<p class="about">Click a column header to sort by it (again to reverse). Intervals are 95% '
        "paired-bootstrap intervals; '-' means no value.</p>"
        f"{transfer_html}{markdown_section(planted)}{markdown_section(edges)}"
        f"{table(rows, results, tasks, radar) if rows or not (circuit_rows or transfer) else ''}{figs}{circuit}"
        f"{_failures(failed, refused)}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def write_page(path: Path, *args: Any, **kwargs: Any) -> Path:
    """Write :func:`page` to ``path``."""
    path = Path(path)
    path.write_text(page(*args, **kwargs), encoding="utf-8")
    return path
