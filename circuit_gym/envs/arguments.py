"""What every environment of the package accepts: ``make`` arguments, reset options, actions, call order.

One set of checks for the single-head and the circuit-building environments, so that they
cannot drift apart (they had: one accepted ``True`` as an ``episode_length``, the other
refused it as a ``budget``). Bad values raise ``ValueError`` naming the argument; an action
of the wrong type raises ``TypeError`` saying which types are actions; ``step`` before
``reset`` or after the episode ended raises :class:`ResetNeededError`, Gymnasium's
``ResetNeeded`` (what its ``OrderEnforcing`` wrapper raises for a step before reset).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

import numpy as np
from gymnasium.error import ResetNeeded

from circuit_gym.ablation.engine import ABLATIONS, default_ablation
from circuit_gym.tasks import SPLITS, list_tasks


class ResetNeededError(ResetNeeded, RuntimeError):
    """``step`` before ``reset``, or after the episode ended: call ``reset()``.

    Gymnasium's ``ResetNeeded`` (so code written for its ``OrderEnforcing`` wrapper catches it),
    and a ``RuntimeError`` (what these environments raised for a step before reset until then)."""


STEP_BEFORE_RESET = "Cannot call env.step() before calling env.reset()"
STEP_AFTER_END = (
    "Cannot call env.step() after the episode ended (it returned terminated=True); call env.reset() "
    "to start the next episode"
)


def check_step_order(reset_done: bool, episode_over: bool) -> None:
    """Gymnasium's call order: ``reset`` before the first ``step``, and again after the episode ends."""
    if not reset_done:
        raise ResetNeededError(STEP_BEFORE_RESET)
    if episode_over:
        raise ResetNeededError(STEP_AFTER_END)


# The paragraphs of the head environments' docstrings that describe what this module checks,
# written once: a class docstring names one as a line ``{name}`` and :func:`shared_docs` fills it in.
SHARED_DOCS = {
    "call_order": """\
Gymnasium's contract after the end: ``step`` after the step that returned
``terminated=True``, or before the first ``reset``, raises ``circuit_gym.envs.ResetNeededError``
(Gymnasium's ``ResetNeeded``, which its ``OrderEnforcing`` wrapper raises for a step before
reset; also a ``RuntimeError``). ``spec.max_episode_steps`` is the number of heads of the ID's
model, the longest episode there is; ``gymnasium.make``'s ``TimeLimit`` therefore never
cuts an episode short (at that length it also sets ``truncated`` on the terminating step).""",
    "common_arguments": """\
``gymnasium.make(id, **kwargs)``; bad values raise ``ValueError`` naming the argument.

| argument | meaning | default |
|---|---|---|
| `model` | `"toy"` (embedded, 12 x 12), `"tiny"` (embedded, 4 x 4), `"gpt2"` or a TransformerLens name | set by the ID |
| `tasks` | task name or names sampled at reset | set by the ID |
| `split` | `"train"`, `"eval"` or `"test"`: prompt templates and fillers | `"train"` |""",
}


def shared_docs(cls: type) -> type:
    """Class decorator: each docstring line that is only ``{name}`` of :data:`SHARED_DOCS` becomes
    that paragraph, at the line's indentation (``env_pages`` and ``help()`` read the result)."""

    def fill(match: re.Match) -> str:
        return textwrap.indent(SHARED_DOCS[match.group(2)], match.group(1))

    cls.__doc__ = re.sub(r"^([ \t]*)\{(\w+)\}$", fill, cls.__doc__ or "", flags=re.MULTILINE)
    return cls


def check_choice(name: str, value, allowed: Sequence) -> None:
    if value not in tuple(allowed):
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def _is_integer(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def check_count(name: str, value) -> int:
    """An integer >= 1 (``True`` is not a count)."""
    if not _is_integer(value) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def check_weight(name: str, value, unit: str = "") -> float:
    """A finite number >= 0 (``True`` is not a weight)."""
    if (
        isinstance(value, bool | np.bool_)
        or not isinstance(value, int | float | np.integer | np.floating)
        or not (np.isfinite(value) and value >= 0)
    ):
        raise ValueError(f"{name} must be a finite number >= 0{f' ({unit})' if unit else ''}, got {value!r}")
    return float(value)


def check_flag(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def common_arguments(model: str, tasks: str | Sequence[str], split: str, ablation: str | None, batch_size,
                     pool_size, cache, oracle_info, render_mode: str | None,
                     render_modes: Sequence[str]) -> tuple[tuple[str, ...], str]:  # fmt: skip
    """Checks the arguments every environment takes; returns the tasks as a tuple and the
    ablation kind (the model's default when ``ablation`` is None)."""
    tasks = (tasks,) if isinstance(tasks, str) else tuple(tasks)
    check_choice("split", split, SPLITS)
    ablation = default_ablation(model) if ablation is None else ablation
    check_choice("ablation", ablation, ABLATIONS)
    check_choice("render_mode", render_mode, (None, *render_modes))
    if not tasks:
        raise ValueError(f"tasks must name at least one of {list_tasks()}")
    for t in tasks:
        check_choice("tasks", t, list_tasks())
    check_count("batch_size", batch_size)
    check_count("pool_size", pool_size)
    check_flag("cache", cache)
    check_flag("oracle_info", oracle_info)
    return tasks, ablation


def check_action(action, n_actions: int, what: str) -> int:
    """``action`` as an int: a Python or numpy integer (or a 0-d integer array) in ``[0, n_actions)``.

    ``TypeError`` for anything else (a string, a float, a list, an array of another shape or
    dtype, a bool); ``ValueError`` naming the range (``what``) for an integer outside it."""
    if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
        action = action[()]
    if not _is_integer(action):
        shown = (
            f"a numpy array of shape {action.shape} and dtype {action.dtype}"
            if isinstance(action, np.ndarray)
            else f"{type(action).__name__} {action!r}"
        )
        # the vector-environment hint only where the action is several values (a float is one value)
        several = isinstance(action, np.ndarray | list | tuple) and np.size(action) > 1
        hint = "; a vector environment takes one action per sub-environment" if several else ""
        if isinstance(action, float | np.floating):
            hint = "; a float is never rounded: pass int(action) if you mean that head"
        raise TypeError(f"action must be one integer (int or numpy integer, {what}), got {shown}{hint}")
    if not 0 <= action < n_actions:
        raise ValueError(f"action must be {what}, got {action!r}")
    return int(action)


def reset_options(options) -> dict:
    """A copy of ``reset(options=...)`` as a dict (None: empty); anything else is a ``TypeError``
    that names the type expected (a string once failed as "unknown reset options ['x']")."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(
            f"options must be a dict (or None), such as {{'task': 'ioi', 'batch_index': 0}}, "
            f"got {type(options).__name__} {options!r}"
        )
    return dict(options)


def reset_choice(env, options: dict | None) -> tuple[str, int]:
    """The task and pool batch a reset asks for in ``options`` (``task``, ``batch_index``), each
    drawn from ``env.np_random`` when absent (task first, then batch); unknown options and tasks
    are clear errors. ``env`` has ``tasks``, ``pool_size`` and ``np_random``."""
    options = reset_options(options)
    unknown = set(options) - {"task", "batch_index"}
    if unknown:
        raise ValueError(f"unknown reset options {sorted(unknown)}; allowed: 'task', 'batch_index'")
    task = options.get("task")
    if task is None:
        task = env.tasks[int(env.np_random.integers(len(env.tasks)))]
    check_choice("options['task']", task, list_tasks())
    index = options.get("batch_index")
    if index is None:
        index = int(env.np_random.integers(env.pool_size))
    elif not _is_integer(index):
        raise ValueError(f"options['batch_index'] must be an integer, got {index!r}")
    return task, int(index)
