"""The leaderboard as one static, self-contained web page (``leaderboard/index.html``).

(Named ``html_page`` so that it never shadows the standard library's ``html``.)

Nothing is fetched when the page is viewed: the style and the sorting script are inline, so the
file can be opened from disk, attached to an e-mail or served by any static host. A Content-Security-Policy forbids every network request and runs
only the page's own script (by its SHA-256), so even a string that escaped escaping could not
run code or load anything.

Every string that comes from a result file (entry names, policy specs, failure reasons) or from a
refusal message is HTML-escaped; numbers are formatted here. The transfer tracks' tables are
sortable by clicking their header: each cell carries its sort value in ``data-sort`` (numbers;
empty for "no value", which sorts last either way); the other tracks' sections are their Markdown
tables, escaped (:func:`markdown_section`).
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Mapping, Sequence
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


def _number(x: object, digits: int = 3, ci: Sequence | None = None) -> str:
    """Escaped text of a number with its interval underneath (``-`` for no value)."""
    if not _finite(x):
        return "-"
    text = f"{x:.{digits}f}"
    if ci is not None and len(ci) == 2 and all(_finite(c) for c in ci):
        text += f"<small>[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]</small>"
    return text


def _entry_cell(row: Mapping) -> str:
    tags = ""
    if row.get("reference"):
        tags += '<span class="tag reference">reference</span>'
    if row.get("white_box"):
        tags += '<span class="tag white-box" title="reads the task metric">white-box</span>'
    return _cell(f"{escape(str(row['name']))}{tags}<small>{escape(str(row.get('policy', '')))}</small>",
                 str(row["name"]), css="text")  # fmt: skip


def _check_cell(check: str, isolation: str | None = None) -> str:
    """The check column's cell; ``isolation``: what the board says of an entry not run in the
    complete sandbox (``tables.isolation_note``), marked after the check and in the cell's title."""
    text = check + (" (not isolated)" if isolation else "")
    return _cell(escape(text), {"verified": "3", "rescored": "2", "hash-checked": "1"}.get(check, "0"),
                 css="text verified" if check == "verified" else "text", title=isolation or "")  # fmt: skip


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
        cells = [_cell(str(rank), rank), entry, _check_cell(str(r["check"]), r.get("isolation"))]
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
            f"<li><b>{escape(str(f.get('name')))}</b> ({escape(str(f.get('track')))}, "
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


def page(*, about: str, title: str = "circuit_gym leaderboard", failed: Sequence[Mapping] = (),
         refused: Sequence[str] = (), transfer: Sequence[tuple[str, str, Sequence[Mapping]]] = (),
         planted: str = "", edges: str = "") -> str:  # fmt: skip
    """The whole page as a string (``about``: plain text, escaped here). ``transfer``: (track, about,
    ranked rows) of each single-head and circuit track, each in its own sortable table first, the
    benchmark in force first; ``planted`` and ``edges``: those tracks' sections, in Markdown
    (:func:`markdown_section`); then the failed submissions and refused files."""
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    csp = (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; "
           "base-uri 'none'; form-action 'none'")  # fmt: skip
    transfer_html = "".join(
        f"<h2>{escape(transfer_heading(t))}</h2>"
        f'<p class="about">{escape(about_t)}</p>{transfer_table(rows_t, t)}'
        for t, about_t, rows_t in transfer
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
        f"{_failures(failed, refused)}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def write_page(path: Path, *args: Any, **kwargs: Any) -> Path:
    """Write :func:`page` to ``path``."""
    path = Path(path)
    path.write_text(page(*args, **kwargs), encoding="utf-8")
    return path
