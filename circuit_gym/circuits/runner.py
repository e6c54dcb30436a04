"""Running circuits: the one place where heads outside a circuit are patched.

A :class:`CircuitRunner` wraps the ablation engine of one model, prompt batch and ablation
kind (:class:`~circuit_gym.ablation.engine.AblationEngine`: its cached clean residual
stream, its replacement values and its block replay). Each head outside a circuit has its
``hook_z`` output replaced by the engine's replacement:

- ``resample`` (the embedded models' default): its value on the counterfactual prompt,
  i.e. MIB's counterfactual *patching* at node level;
- ``mean``: its mean over the batch, per position; ``zero``: zeros.

Several circuits are run in one pass, stacked along the batch as the engine's sweep stacks
single-head ablations: copy ``i`` of the batch runs circuit ``i``. The pass starts at the
lowest layer any of them ablates, from the cached residual stream, and is cut into chunks
of at most the engine's ``RESID_BUDGET`` floats.

Replays (``replay``): on attention-only models (the engine's SDPA replay) the default,
``"masked"``, runs the stack through :func:`~circuit_gym.ablation.masked_replay.replay_masks`:
one copy per distinct prefix of masks and only the heads some circuit keeps, bit for bit
the numbers of ``"plain"`` (every block on every copy, ablated heads overwritten), which
stays as the reference. Other architectures always take the plain path. A runner built
without a ``replay`` follows ``$CIRCUIT_GYM_REPLAY`` (``masked`` unless set), read at each
call, so a whole job can be re-run on the reference path: ``CIRCUIT_GYM_REPLAY=plain``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import torch

from circuit_gym.ablation.circuit_metric import CircuitMetric
from circuit_gym.ablation.engine import RESID_BUDGET, AblationEngine
from circuit_gym.ablation.masked_replay import replay_masks
from circuit_gym.circuits.circuit import Circuit
from circuit_gym.heads import z_hook

REPLAYS = ("masked", "plain")
REPLAY_ENV_VAR = "CIRCUIT_GYM_REPLAY"


def check_replay(replay: str) -> str:
    if replay not in REPLAYS:
        raise ValueError(f"replay must be one of {REPLAYS}, got {replay!r}")
    return replay


def default_replay() -> str:
    """``$CIRCUIT_GYM_REPLAY`` when set (checked), else ``"masked"``."""
    return check_replay(os.environ.get(REPLAY_ENV_VAR) or "masked")


class CircuitRunner(CircuitMetric[Circuit]):
    """Task metric of any circuit of heads on one prompt batch (higher = better behaviour);
    ``CircuitRunner.for_task(model, task, batch, ablation, replay=...)`` builds its engine."""

    def __init__(self, engine: AblationEngine, replay: str | None = None) -> None:
        super().__init__(engine)
        self.replay = None if replay is None else check_replay(replay)
        self.n_layers, self.n_heads = engine.n_layers, engine.n_heads

    @torch.no_grad()
    def metric_rows(self, circuits: Sequence[Circuit]) -> np.ndarray:
        """Per-prompt task metric of each circuit, ``[len(circuits), batch]``, float64."""
        for c in circuits:
            if (c.n_layers, c.n_heads) != (self.n_layers, self.n_heads):
                raise ValueError(
                    f"a circuit of a {c.n_layers} x {c.n_heads} model cannot run on this "
                    f"{self.n_layers} x {self.n_heads} model"
                )
        out = np.empty((len(circuits), self.batch_size), dtype=np.float64)
        clean = self.engine.clean_rows.double().cpu().numpy()
        todo = [i for i, c in enumerate(circuits) if c.size < c.n_total]
        for i in set(range(len(circuits))) - set(todo):  # nothing ablated: the clean pass
            out[i] = clean
        tokens = self.engine.ev.tokens
        per_pass = max(1, RESID_BUDGET // (tokens.numel() * int(self.engine.model.cfg.d_model)))
        for first in range(0, len(todo), per_pass):
            chunk = todo[first : first + per_pass]
            out[chunk] = self._run_stacked([circuits[i] for i in chunk])
        return out

    def _run_stacked(self, circuits: list[Circuit]) -> np.ndarray:
        k, batch = len(circuits), self.batch_size
        device = self.engine.ev.tokens.device
        # ablate[i, layer, head]: circuit i replaces that head's output
        ablate = ~torch.tensor(np.stack([c.mask for c in circuits]), device=device)
        ablate = ablate.view(k, self.n_layers, self.n_heads)
        layers = [layer for layer in range(self.n_layers) if bool(ablate[:, layer].any())]
        start = layers[0]
        engine = self.engine
        if (self.replay or default_replay()) == "masked" and engine._fast is not None:
            x = replay_masks(engine._fast, start, engine.resid_pre[start], engine.replacement,
                             ablate.cpu().numpy())  # fmt: skip
            per_row = engine._score_rows_chunked(engine.model.ln_final(x[:, engine.ev.positions]))
            return per_row.view(k, batch).double().cpu().numpy()
        hooks = []
        for layer in layers:
            # [k * batch, 1, head, 1]: copy i of the batch (rows i*batch ...) runs circuit i
            where = ablate[:, layer].repeat_interleave(batch, dim=0)[:, None, :, None]
            repl = self.engine.replacement[layer].repeat(k, 1, 1, 1)

            def patch(z: torch.Tensor, hook=None, where=where, repl=repl) -> torch.Tensor:
                return torch.where(where, repl, z)

            hooks.append((z_hook(layer), patch))
        resid = self.engine.resid_pre[start].repeat(k, 1, 1)
        # The engine's own replay from a cached residual stream (SDPA blocks on attention-only
        # models, the bridge's blocks otherwise), as its sweep uses it.
        per_row = self.engine._run_from(start, resid, hooks)
        return per_row.view(k, batch).double().cpu().numpy()
