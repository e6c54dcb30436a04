"""What a task's metric computes, as a hash: the part of a sweep's cache key that names the metric.

A qualified name is not enough: every lambda is ``<lambda>``, and a function edited and
re-run in a notebook keeps its name, so a table computed with the old metric would be
served for the new one. :func:`fingerprint` hashes instead:

- a function: its bytecode, constants (nested code objects recursively), the names it
  uses, its defaults, the values in its closure cells and the global values it reads
  (functions among them fingerprinted the same way, recursively);
- a ``functools.partial``: the function, its arguments and keywords;
- a bound method: the function and the object it is bound to;
- a callable object: its class (module, name and the fingerprint of its ``__call__``) and
  its state (``__dict__`` / ``__slots__``);
- values: numbers, strings, bytes, None, containers of them, numpy arrays and torch
  tensors (dtype, shape, bytes), modules (by name), classes and built-in functions (by
  module and qualified name, e.g. ``torch.nn.functional.log_softmax``).

Anything else (an open file, a model object in a closure, ...) cannot be fingerprinted:
:func:`fingerprint` returns None, and the caller must not cache on disk.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import types

_SCALARS = (type(None), bool, int, float, complex, str, bytes, type(...), type(NotImplemented), range, slice)


class _UnfingerprintableError(Exception):
    pass


def fingerprint(obj) -> str | None:
    """A hex digest of what ``obj`` computes, or None if some part of it cannot be hashed."""
    h = hashlib.sha256()
    try:
        _feed(h, obj, set())
    except (_UnfingerprintableError, RecursionError):
        return None
    return h.hexdigest()[:24]


def _feed(h, obj, seen: set[int]) -> None:
    """Add ``obj`` to the hash ``h``; ``seen``: objects on the current path (recursion)."""
    if isinstance(obj, _SCALARS):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
        return
    if id(obj) in seen:
        h.update(b"<cycle>;")
        return
    seen = seen | {id(obj)}
    if isinstance(obj, tuple | list):
        h.update(f"{type(obj).__name__}[{len(obj)}](".encode())
        for item in obj:
            _feed(h, item, seen)
        h.update(b")")
    elif isinstance(obj, dict):
        h.update(f"dict[{len(obj)}](".encode())
        for k, v in sorted(obj.items(), key=lambda kv: repr(kv[0])):
            _feed(h, k, seen)
            _feed(h, v, seen)
        h.update(b")")
    elif isinstance(obj, set | frozenset):
        h.update(f"set[{len(obj)}]({sorted(repr(x) for x in obj)!r})".encode())
    elif isinstance(obj, types.ModuleType):
        h.update(f"module:{obj.__name__};".encode())
    elif isinstance(obj, types.CodeType):
        _feed_code(h, obj, seen)
    elif isinstance(obj, types.FunctionType):
        _feed_function(h, obj, seen)
    elif isinstance(obj, functools.partial):
        h.update(b"partial(")
        for part in (obj.func, obj.args, obj.keywords):
            _feed(h, part, seen)
        h.update(b")")
    elif isinstance(obj, types.MethodType):
        h.update(b"method(")
        _feed(h, obj.__func__, seen)
        _feed_state(h, obj.__self__, seen)
        h.update(b")")
    elif isinstance(obj, type | types.BuiltinFunctionType | types.BuiltinMethodType):
        h.update(f"named:{getattr(obj, '__module__', None)}.{obj.__qualname__};".encode())
    elif _is_array(obj):
        _feed_array(h, obj)
    elif callable(obj):
        _feed_state(h, obj, seen)
    else:
        raise _UnfingerprintableError(type(obj).__qualname__)


def _feed_code(h, code: types.CodeType, seen: set[int]) -> None:
    h.update(b"code(")
    h.update(code.co_code)
    _feed(h, code.co_consts, seen)
    _feed(h, (code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars), seen)
    h.update(b")")


def _feed_function(h, fn: types.FunctionType, seen: set[int]) -> None:
    h.update(f"function:{fn.__module__}.{fn.__qualname__}(".encode())
    _feed_code(h, fn.__code__, seen)
    _feed(h, (fn.__defaults__, fn.__kwdefaults__), seen)
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell (a name assigned after the closure was made)
            value = None
        _feed(h, value, seen)
    # The global values it reads: a helper it calls may have been edited too.
    for name in _global_names(fn.__code__):
        if name in fn.__globals__:
            h.update(f"global:{name}=".encode())
            _feed(h, fn.__globals__[name], seen)
        elif not hasattr(builtins, name):
            h.update(f"unbound:{name};".encode())
    h.update(b")")


def _global_names(code: types.CodeType) -> list[str]:
    """Names ``code`` (and the code nested in it) may look up as globals, sorted, each once."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(_global_names(const))
    return sorted(names)


def _feed_state(h, obj, seen: set[int]) -> None:
    """A callable object or a method's owner: its class, its ``__call__`` and its attributes."""
    cls = type(obj)
    h.update(f"object:{cls.__module__}.{cls.__qualname__}(".encode())
    call = next((vars(c)["__call__"] for c in cls.__mro__ if "__call__" in vars(c)), None)
    if isinstance(call, types.FunctionType):
        _feed_function(h, call, seen)
    state = dict(getattr(obj, "__dict__", {}))
    for slot in getattr(cls, "__slots__", ()):
        if hasattr(obj, slot):
            state[slot] = getattr(obj, slot)
    _feed(h, state, seen)
    h.update(b")")


def _is_array(obj) -> bool:
    return (
        hasattr(obj, "dtype") and hasattr(obj, "shape") and (hasattr(obj, "tobytes") or hasattr(obj, "numpy"))
    )


def _feed_array(h, obj) -> None:
    array = obj.detach().cpu().numpy() if hasattr(obj, "detach") else obj
    h.update(f"array:{array.dtype}:{tuple(array.shape)}:".encode())
    h.update(array.tobytes())
