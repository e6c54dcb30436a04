"""Whether two score trees are the same numbers: integers, strings and structure exactly,
floats to a relative tolerance.

Exactly equal floats cannot be asked for across machines: the committed board, scored on the
development machine, and this code on another CPU differ from float32 summation order in the
model's kernels: oracle reward 6.7193111926 there, 6.7193143442 here (3e-6 apart); the fixed
policy's reward -0.0433381498 there, -0.0433353484 here (also 3e-6 apart: a reward is a
difference of two damages, so its error is absolute, not relative). :data:`ATOL` and
:data:`RTOL` leave 30 times that; anything a change of the code's meaning moves (a head, a count,
a seed, a reward) moves far more, and every head choice, order and pass count is compared exactly.
"""

from __future__ import annotations

import math

RTOL = 1e-5
ATOL = 1e-4


def differences(fresh, recorded, path: str = "", limit: int = 10) -> list[str]:
    """Where ``fresh`` and ``recorded`` (JSON-like trees) differ, as ``path: fresh != recorded``
    lines (at most ``limit``); empty when they are the same numbers."""
    out: list[str] = []
    _walk(fresh, recorded, path or "$", out, limit)
    return out


def _is_float(x) -> bool:
    return isinstance(x, float) or (isinstance(x, int) and not isinstance(x, bool))


def _walk(a, b, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            out.append(f"{path}: keys {sorted(set(a) ^ set(b))} in only one of them")
            return
        for key in sorted(a):
            _walk(a[key], b[key], f"{path}.{key}", out, limit)
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items != {len(b)} items")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(x, y, f"{path}[{i}]", out, limit)
    elif isinstance(a, float) or isinstance(b, float):
        same = _is_float(a) and _is_float(b) and math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)
        if not same:
            out.append(f"{path}: {a!r} != {b!r}")
    elif type(a) is not type(b) or a != b:
        out.append(f"{path}: {a!r} != {b!r}")
