"""``circuit-gym play``: a person is the policy for an episode, in the terminal.

Each step shows the layer x head grid as text (``X`` = ablated, ``.`` = still available),
asks for a head (``L.H`` as in the literature, e.g. ``9.9``, or a flat id ``layer * n_heads +
head``), ablates it and shows what the environment returned: the reward, this step's oracle
head and reward, the recovery, and then the whole step's per-head reward table on the same
grid, so the player sees where the oracle was. ``q`` quits, ``?`` repeats the help.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np

from circuit_gym.ablation.contrastive import head_name
from circuit_gym.envs.circuit_env import CircuitDiscoveryEnv

HELP = ("Type a head as L.H (layer.head, e.g. 1.2) or as a flat id (layer * heads per layer + head); "
        "q quits, ? shows this again.")  # fmt: skip


class PlayerQuitError(Exception):
    """The player typed ``q``."""


def parse_head(text: str, n_layers: int, n_heads: int) -> int:
    """The flat head id of ``L.H`` or of a flat id; ValueError with the allowed range otherwise."""
    text = text.strip()
    n_total = n_layers * n_heads
    try:
        if "." in text:
            layer_text, head_text = text.split(".", 1)
            layer, head = int(layer_text), int(head_text)
            if not (0 <= layer < n_layers and 0 <= head < n_heads):
                raise ValueError(
                    f"no head {text}: layers are 0-{n_layers - 1} and heads 0-{n_heads - 1} in this model"
                )
            return layer * n_heads + head
        flat = int(text)
    except ValueError as err:
        if str(err).startswith("no head"):
            raise
        raise ValueError(f"not a head: {text!r}. {HELP}") from None
    if not 0 <= flat < n_total:
        raise ValueError(f"no head {flat}: flat ids are 0-{n_total - 1} in this model")
    return flat


def grid_text(n_layers: int, n_heads: int, ablated: set[int], values: np.ndarray | None = None,
              chosen: int | None = None, oracle: int | None = None) -> str:  # fmt: skip
    """The layer x head grid: ``X``/``.`` per head, or ``values`` (a per-head table) as numbers.

    With values, the chosen head is marked ``*`` and the oracle head ``!`` after its number.
    """
    width = 8 if values is not None else 3
    lines = ["layer\\head" + "".join(f"{h:>{width}}" for h in range(n_heads))]
    for layer in range(n_layers):
        cells = []
        for head in range(n_heads):
            flat = layer * n_heads + head
            if values is None:
                cells.append(f"{'X' if flat in ablated else '.':>{width}}")
                continue
            value = values[flat]
            mark = "*" if flat == chosen else "!" if flat == oracle else " "
            text = "     X " if not np.isfinite(value) else f"{value:+7.2f}"
            cells.append(f"{text}{mark}")
        lines.append(f"{layer:>10}" + "".join(cells))
    return "\n".join(lines)


def play(env: gym.Env, *, seed: int | None = None, read: Callable[[str], str] = input,
         write: Callable[[str], Any] = print) -> list[dict]:  # fmt: skip
    """Play one episode of ``env`` (a circuit_gym environment with oracle info); returns one
    record per step (head, reward, oracle head and reward, recovery)."""
    base = cast(CircuitDiscoveryEnv, env.unwrapped)
    n_layers, n_heads = base.n_layers, base.n_heads
    _, info = env.reset(seed=seed)
    write(f"task {info['task']}, prompt batch {info['batch_index']} ({base.split} split), {n_layers} layers x "
          f"{n_heads} heads, {base.episode_length} step(s). Reward: task damage - {base.lam:g} x general damage, "
          f"in the task's unit. {HELP}")  # fmt: skip
    prompt = _first_prompt(base)
    if prompt:
        write(f"first prompt of the batch: {prompt!r}")
    records: list[dict] = []
    ablated: set[int] = set()
    terminated = False
    while not terminated:
        write(grid_text(n_layers, n_heads, ablated))
        head = _ask(read, write, n_layers, n_heads, len(records) + 1, base.episode_length)
        _, reward, terminated, _, info = env.step(head)
        ablated.add(head)
        name = head_name(head, n_heads)
        oracle = info.get("oracle_head")
        record = {"head": head, "reward": float(reward), "oracle_head": oracle,
                  "oracle_reward": info.get("oracle_reward"), "recovery": info.get("oracle_recovery")}  # fmt: skip
        records.append(record)
        write(f"step {len(records)}: you ablated {name} (flat id {head}): reward {reward:+.3f} (task damage "
              f"{info['task_damage']:.3f}, general damage {info['general_damage']:.3f} of the ablated set)")  # fmt: skip
        if oracle is None:
            write("oracle information is off for this environment")
            continue
        write(f"oracle this step: {head_name(oracle, n_heads)} with reward {info['oracle_reward']:+.3f}; "
              f"your recovery {info['oracle_recovery']:.3f}" + ("  (you found it)" if info["top1_hit"] else ""))  # fmt: skip
        write("this step's reward of every head (* your choice, ! the oracle):")
        write(grid_text(n_layers, n_heads, ablated, info["per_head_reward"], chosen=head, oracle=oracle))
    total = sum(r["reward"] for r in records)
    write(f"episode over: total reward {total:+.3f} over {len(records)} step(s)")
    return records


def _ask(read: Callable[[str], str], write: Callable[[str], Any], n_layers: int, n_heads: int, step: int,
         steps: int) -> int:  # fmt: skip
    while True:
        try:
            text = read(f"step {step}/{steps}, head to ablate> ")
        except EOFError:
            raise PlayerQuitError from None
        if text.strip().lower() in ("q", "quit", "exit"):
            raise PlayerQuitError
        if text.strip() in ("?", "h", "help", ""):
            write(HELP)
            continue
        try:
            return parse_head(text, n_layers, n_heads)
        except ValueError as err:
            write(str(err))


def _first_prompt(base: Any) -> str | None:
    """The batch's first prompt as text, where the model has a tokenizer (for the person only:
    a policy never sees it)."""
    tokenizer = getattr(base.model, "tokenizer", None)
    if tokenizer is None:
        return None
    return tokenizer.decode(base.episode.batch.tokens[0].tolist(), skip_special_tokens=True)
