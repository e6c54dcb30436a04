"""MIB circuit files in and out, from the command line (``circuit-gym circuits export|score``).

``export``: a reference solver's ranking of each prompt batch of a task's pool, written as MIB's
circuit JSON (``circuit_gym.circuits.mib``: nodes ``a{l}.h{h}`` with ``in_graph`` and the
solver's score, edges implied by the head circuit, named as MIB names them).

``score``: a MIB circuit file made anywhere (MIB's own, another tool's) read back as a head
circuit and scored here: its faithfulness on each batch (MIB's formula, the environment's
ablation), with the mean and 95% interval over batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from circuit_gym.baselines.acdc import acdc_ranking
from circuit_gym.baselines.eap_ig import attribution_patching_ranking, eap_ig_ranking
from circuit_gym.circuits import Circuit, CircuitRunner, faithfulness
from circuit_gym.circuits.mib import export_circuits, read_mib_json
from circuit_gym.stats import mean_ci95
from circuit_gym.tasks import get_task

RANKERS = {"acdc": acdc_ranking, "eap_ig": eap_ig_ranking, "attribution": attribution_patching_ranking}


def export(model, solver: str, task: str, split: str, batches: Sequence[int], out: str | Path, *,
           batch_size: int = 8, size: int | None = None) -> list[Path]:  # fmt: skip
    """Write ``{solver}-{task}-{split}-{i}.json`` for every batch seed ``i`` (top ``size`` heads)."""
    if solver not in RANKERS:
        raise ValueError(f"solver must be one of {sorted(RANKERS)}, got {solver!r}")
    t = get_task(task)
    rankings = [RANKERS[solver](model, t, t.batch(model, split, batch_size, seed=int(i))) for i in batches]
    names = [f"{solver}-{task}-{split}-{int(i)}" for i in batches]
    return export_circuits(model, rankings, out, size=size, names=names)


def score_file(model, path: str | Path, task: str, split: str, batches: Sequence[int], *,
               batch_size: int = 8, ablation: str | None = None) -> dict:  # fmt: skip
    """Faithfulness of the head circuit in the MIB file at ``path`` on each batch of ``task``."""
    n_layers, n_heads = int(model.cfg.n_layers), int(model.cfg.n_heads)
    circuit, _ = read_mib_json(path, n_layers, n_heads)
    t = get_task(task)
    values = []
    for i in batches:
        runner = CircuitRunner.for_task(model, t, t.batch(model, split, batch_size, seed=int(i)), ablation)
        m_empty, m_circuit = runner.metric([Circuit.empty(n_layers, n_heads), circuit])
        values.append(float(faithfulness(m_circuit, m_empty, runner.full_metric)))
    mean, ci = mean_ci95([v for v in values if np.isfinite(v)])
    return {"file": str(path), "heads": len(circuit.heads), "task": task, "split": split,
            "faithfulness": mean, "faithfulness_ci95": ci, "per_batch": values}  # fmt: skip
