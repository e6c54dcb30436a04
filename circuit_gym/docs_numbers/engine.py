"""The engine that fills the numbers in README.md and docs/*.md from the committed result files (one source).

A number in a page is written between markers that name where it comes from:

    PPO reaches <!--n seeds:per_seed.0.ppo.held_out_k5.recovery:.3f-->0.986<!--/n--> ...

``SOURCE:PATH[:FORMAT]``: SOURCE is an alias from ``SOURCES`` (or a ``.json`` path relative to
the repository; with a ``*`` in it, the list of every matching file's JSON), or one of ``COMPUTED``: ``weights/NAME`` (an embedded model's safetensors file:
``parameters``, ``megabytes``), ``py/MODULE`` (a module's constants, e.g.
``py/circuit_gym.benchmark:EVAL_SEEDS|len:d``), ``registry`` (``tasks``, ``families``), ``prose``
(the English reference text: ``gpt2_tokens``, ``rows_of_48``). PATH walks
the value: keys and list indices separated by dots, ``key[field=value,...]`` picks the one list
element with those fields, ``*`` maps the rest of the path over a list's or dict's elements,
``|len`` / ``|mean`` / ``|min`` / ``|max`` / ``|join`` at the end reduce a list (``|millions``
divides by 10^6);
FORMAT is a Python format spec (default ``.3f``; a spec ending in ``s`` for a string, e.g.
``.8s`` for a hash's first 8 characters), or ``[SPEC]`` for an interval ``[low, high]``. Whole
tables sit between ``<!--table NAME-->`` and ``<!--/table-->`` and come from the functions in
``TABLES`` (:mod:`circuit_gym.docs_numbers.tables`).

A number that no shipped file holds (a one-off timing, a run that does not ship) is a
historical measurement: its passage sits between ``<!--measured-->`` and ``<!--/measured-->``
and says when (a date, YYYY-MM-DD) and how (a command in backticks) it was measured;
tests/test_docs_numbers.py checks both, and that no result number outside these two kinds of
marker is typed in on the pages it lists.

    python scripts/gen_docs_numbers.py            # rewrite the pages
    python scripts/gen_docs_numbers.py --check    # list stale numbers, exit 1 if any (a test runs this)
"""

from __future__ import annotations

import importlib
import json
import math
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the repository: its pages and result files
PAGES = ("README.md", "CONTRIBUTING.md", "docs/*.md")
SOURCES = {
    "results": "docs/results/results.json",  # the main job (circuit-gym run --out docs/results)
    "seeds": "docs/results/seeds/seeds.json",  # scripts/ppo_seeds.py
    "track": "docs/results/circuit/track.json",  # scripts/circuit_track.py
    "timings": "docs/results/timings.json",  # durations of the make commands, with where each was measured
    "redundancy_ioi": "docs/results/redundancy_ioi.json",
    "redundancy_successor": "docs/results/redundancy_successor.json",
    "board": "leaderboard/results/{}.json",  # board/ppo, board/circuit/greedy_search ...
    "card": "circuit_gym/models/{}/card_metrics.json",  # card/toy
    "bench": "benchmarks/results/{}.json",  # bench/sweep
    "transfer": "docs/results/transfer/report.json",  # zoo v1's board, archived (its script: docs/archive.md)
    "hard": "docs/results/v8/report.json",  # python -m circuit_gym.baselines.hard_circuits_report
}
# A marker right after a backtick is an example in inline code (CONTRIBUTING.md shows the syntax).
INLINE = re.compile(r"(?<!`)<!--n (?P<spec>[^>]*?)-->(?P<text>.*?)<!--/n-->")
BLOCK = re.compile(r"(?P<open><!--table (?P<name>[\w-]+)-->\n)(?P<text>.*?)(?P<close><!--/table-->)", re.S)
REDUCERS: dict[str, Callable[[Any], Any]] = {
    "len": len, "mean": lambda v: sum(v) / len(v), "min": min, "max": max,
    "millions": lambda v: v / 1e6,  # 1,603,872 parameters -> 1.6 (the page writes "1.6M")
    "join": lambda v: ", ".join(map(str, v)),  # a list of names, with a format ending in s
}  # fmt: skip
# A historical measurement's passage (see the module docstring); the tests read its text.
MEASURED = re.compile(r"(?<!`)<!--measured-->(?P<text>.*?)<!--/measured-->", re.S)  # not `examples`


class SpecError(ValueError):
    """A marker that names no file, key or format that exists."""


def source_path(source: str) -> Path:
    alias, _, rest = source.partition("/")
    if alias in SOURCES:
        template = SOURCES[alias]
        if "{}" in template and not rest:
            raise SpecError(f"source {source!r}: write {alias}/NAME for {template.format('NAME')}")
        if "{}" not in template and rest:
            raise SpecError(f"source {source!r}: {alias!r} is the one file {template}")
        return ROOT / template.format(rest)
    if source.endswith(".json"):
        return ROOT / source
    raise SpecError(f"unknown source {source!r} (aliases: {', '.join(SOURCES)}, or a .json path)")


@cache
def load(path: Path):
    if not path.is_file():
        raise SpecError(f"no result file {path.relative_to(ROOT)}")
    return json.loads(path.read_text())


def _select(items: list, condition: str, where: str):
    wanted = dict(part.split("=", 1) for part in condition.split(","))
    found = [x for x in items if all(str(x.get(k)) == v for k, v in wanted.items())]
    if len(found) != 1:
        raise SpecError(f"{where}: [{condition}] matches {len(found)} elements, not 1")
    return found[0]


@cache
def weights(name: str) -> dict:
    """An embedded model's weight file: its parameter count and size, read from the file's header."""
    from safetensors import safe_open

    path = ROOT / "circuit_gym" / "models" / name / "model.safetensors"
    if not path.is_file():
        raise SpecError(f"no weight file {path.relative_to(ROOT)}")
    with safe_open(str(path), "np") as tensors:
        count = 0
        for key in tensors.keys():  # noqa: SIM118 (safe_open is not a mapping)
            shape = tensors.get_slice(key).get_shape()
            count += math.prod(shape)
    return {"parameters": count, "megabytes": path.stat().st_size / 1e6}


def module_constants(name: str) -> dict:
    """A module's upper-case names (its constants), e.g. the benchmark's definition."""
    try:
        module: ModuleType = importlib.import_module(name)
    except ImportError as err:
        raise SpecError(f"py/{name}: {err}") from None
    return {key: value for key, value in vars(module).items() if key.isupper()}


@cache
def registry(_: str = "") -> dict:
    """What the package registers on import: the built-in task names and their families (tasks
    registered later in the process, e.g. the planted models' when a Planted ID is made, are not
    the package's task suite)."""
    code = (
        "import json, circuit_gym\n"
        "from circuit_gym.tasks import get_task, list_tasks\n"
        "tasks = list_tasks()\n"
        "print(json.dumps({'tasks': tasks, 'families': sorted({get_task(t).family for t in tasks})}))"
    )
    # A fresh interpreter: this process may have registered more (a test that made a Planted ID).
    return json.loads(in_fresh_interpreter(code))


def in_fresh_interpreter(code: str) -> str:
    """What ``code`` prints in a new Python process run from the repository root: for numbers that
    depend on what the package registers on import, which this process may have added to."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


@cache
def prose(_: str = "") -> dict:
    """The shipped English reference text (``prose``) under GPT-2's vendored tokenizer, joined and
    cut as ``reference_batch`` cuts it (rows of 48: BOS and 47 tokens)."""
    from circuit_gym.models.random_checkpoint import gpt2_tokenizer
    from circuit_gym.tasks.reference import _texts

    tokens = len(gpt2_tokenizer().encode("\n\n".join(_texts("prose")), add_special_tokens=False))
    return {"gpt2_tokens": tokens, "rows_of_48": tokens // 47}


# Sources computed from what ships (code, weights) rather than read from a result file.
COMPUTED: dict[str, tuple[bool, Callable[[str], object]]] = {  # alias -> (takes /NAME, function)
    "weights": (True, weights),
    "py": (True, module_constants),
    "registry": (False, registry),
    "prose": (False, prose),
}


def source_value(source: str):
    """What ``source`` names: a result file's JSON, or a computed source's value."""
    alias, _, rest = source.partition("/")
    if alias in COMPUTED:
        named, compute = COMPUTED[alias]
        if named != bool(rest):
            raise SpecError(
                f"source {source!r}: write {alias}/NAME" if named else f"source {source!r}: write {alias}"
            )
        return compute(rest)
    if "*" in source and source.endswith(".json"):  # every matching file, in path order: a list
        files = sorted(ROOT.glob(source))
        if not files:
            raise SpecError(f"no result file matches {source}")
        return [load(f) for f in files]
    return load(source_path(source))


def _step(value, segment: str, where: str):
    """One PATH segment: a key or index, then an optional ``[field=value,...]`` selection."""
    key, _, condition = segment.partition("[")
    try:
        value = value[int(key)] if isinstance(value, list | tuple) else value[key]
    except (KeyError, IndexError, ValueError, TypeError):
        raise SpecError(f"{where}: no such key or index") from None
    return _select(value, condition.rstrip("]"), where) if condition else value


def lookup(source: str, path: str):
    """The value at ``path`` (see the module docstring) in ``source``. A ``*`` segment takes every
    element of a list or dict, and the segments after it apply to each (``tasks.*.accuracy|min``)."""
    path, _, reducer = path.partition("|")
    value, mapped = source_value(source), False
    where = source
    for segment in path.split("."):
        where += "." + segment
        if segment == "*":
            if mapped or not isinstance(value, list | tuple | dict):
                raise SpecError(f"{where}: '*' wants one list or dict")
            value, mapped = list(value.values() if isinstance(value, dict) else value), True
        elif mapped:
            value = [_step(v, segment, where) for v in value]
        else:
            value = _step(value, segment, where)
    if reducer:
        if reducer not in REDUCERS:
            raise SpecError(f"{where}: unknown reducer {reducer!r} ({', '.join(REDUCERS)})")
        value = REDUCERS[reducer](value)
    return value


def fmt(value, spec: str = ".3f") -> str:
    if spec.startswith("[") and spec.endswith("]"):
        low, high = value
        return f"[{fmt(low, spec[1:-1])}, {fmt(high, spec[1:-1])}]"
    if spec.endswith("s"):  # a string on purpose (a version, a hash); a number is not one
        if not isinstance(value, str):
            raise SpecError(f"not a string: {value!r} (format {spec!r})")
        return format(value, spec)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"not a number: {value!r}")
    return format(value, spec)


def render_spec(spec: str) -> str:
    parts = spec.strip().split(":")
    if len(parts) not in (2, 3):
        raise SpecError(f"marker {spec!r}: want SOURCE:PATH[:FORMAT]")
    return fmt(lookup(parts[0], parts[1]), parts[2] if len(parts) == 3 else ".3f")


def pages(root: Path = ROOT) -> list[Path]:
    """The pages whose numbers are generated (:data:`PAGES`)."""
    return sorted({p for pattern in PAGES for p in root.glob(pattern)})


def fill(text: str, tables: Mapping[str, Callable[[], str]], where: str = "") -> tuple[str, list[str]]:
    """``text`` with every marked number and every table (rendered by ``tables[NAME]``) regenerated,
    and what changed; ``where`` names the page in the changes."""
    changes: list[str] = []

    def line_of(pos: int) -> str:
        return f"{where}:{text.count(chr(10), 0, pos) + 1}"

    def block(m: re.Match) -> str:
        name = m["name"]
        if name not in tables:
            raise SpecError(f"{line_of(m.start())}: unknown table {name!r} ({', '.join(tables)})")
        new = tables[name]() + "\n"
        if new != m["text"]:
            changes.append(f"{line_of(m.start())}: table {name} differs from its source")
        return m["open"] + new + m["close"]

    def inline(m: re.Match) -> str:
        try:
            new = render_spec(m["spec"])
        except SpecError as err:
            raise SpecError(f"{line_of(m.start())}: {err}") from None
        if new != m["text"]:
            changes.append(f"{line_of(m.start())}: {m['text']!r} should be {new!r} ({m['spec'].strip()})")
        return f"<!--n {m['spec']}-->{new}<!--/n-->"

    return INLINE.sub(inline, BLOCK.sub(block, text)), changes
