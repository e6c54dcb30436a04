"""Measure what an embedded model's card shows (``card_metrics.json``, ``oracle_heads.png``):
every task's clean accuracy and metric, induction head scores, the inclusion gate and the
per-episode oracle structure (``circuit_gym.suite``, the same code as ``circuit-gym suite``), and
per-task top-5 heads by mean contrastive reward. ``scripts/model_card.py`` calls :func:`write_card`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from circuit_gym.ablation import default_ablation, head_name
from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.tables import sweep_table
from circuit_gym.models import load_model
from circuit_gym.models.behaviour import induction_metrics, task_metrics
from circuit_gym.models.cards import render_card, render_from_files
from circuit_gym.models.loading import embedded_dir
from circuit_gym.suite import default_tasks, suite_report, write_figure
from circuit_gym.tasks import get_task
from circuit_gym.tasks.reference import reference_batch


def top_heads(model, episodes: int, split: str = "eval", batch_size: int = 16, ablation: str | None = None,
              reference: str | None = None) -> dict:  # fmt: skip
    """Per task: top-5 heads by mean contrastive reward over ``episodes`` batches (the model's default
    ablation and reference batch unless named)."""
    name = model.circuit_gym_info.name
    ref, kind = reference_batch(model, reference), ablation or default_ablation(name)
    out = {}
    for task_name in default_tasks(name):
        task = get_task(task_name)
        tables = [sweep_table(model, task, task.batch(model, split, batch_size, s), ref, ablation=kind,
                              cache=SweepCache()) for s in range(episodes)]  # fmt: skip
        reward = np.mean([t.reward for t in tables], 0)
        order = np.argsort(-reward)[:5]
        out[task_name] = [(head_name(int(h), model.cfg.n_heads), round(float(reward[h]), 3)) for h in order]
    return out


# eval-split prompts per recorded backup pair (as the zoo v3 report, scripts/backup_pilot.py)
BACKUP_PROMPTS = 32


def write_card(model_name: str, path: Path | None = None, episodes: int = 48, top_episodes: int = 8,
               render_only: bool = False, ablation: str | None = None, reference: str | None = None) -> None:  # fmt: skip
    """Measure model ``model_name`` (or the model directory ``path``) and write its
    ``card_metrics.json``, ``oracle_heads.png`` and ``MODEL_CARD.md`` there; ``render_only``:
    measure nothing, rewrite ``MODEL_CARD.md`` from the committed files. ``ablation`` and
    ``reference`` override the model's defaults (a private zoo model outside the package is measured
    as its public siblings are: ``"resample"`` and ``"stdlib+taskstyle"``; its name alone would give
    zero ablation and ``"prose"``)."""
    directory = path or embedded_dir(model_name)
    model = load_model(model_name, path=path)
    if render_only:
        (directory / "MODEL_CARD.md").write_text(render_from_files(model, directory))
        print(f"wrote {directory / 'MODEL_CARD.md'} from {directory / 'card_metrics.json'}")
        return
    behaviour = {}
    for name in default_tasks(model_name):
        try:
            behaviour[name] = task_metrics(model, name, "test")
        except ValueError as err:
            print(f"{name}: {err}")
    suite = suite_report(
        model, split="test", episodes=episodes, cache=SweepCache(), ablation=ablation, reference=reference
    )
    write_figure(
        suite, directory / "oracle_heads.png", model.cfg.n_layers, model.cfg.n_heads
    )  # JSON: card_metrics
    result = {"weights_hash": model.circuit_gym_info.weights_hash, "behaviour": behaviour,
              "induction": induction_metrics(model, "test"),
              "induction_seen": induction_metrics(model, "test", task="induction_seen"), "suite": suite,
              "top_heads": top_heads(model, top_episodes, ablation=ablation, reference=reference),
              "ablation": ablation or default_ablation(model_name), "reference": reference_batch(model, reference).name}  # fmt: skip
    log = json.loads((directory / "training_log.json").read_text())
    if log.get("backup_pairs"):  # zoo v3: the trained truth and the numbers that verify it
        from circuit_gym.reporting.backup_pairs import model_entry

        result["backup_pairs"] = model_entry(model, log["backup_pairs"], prompts=BACKUP_PROMPTS, seed=0,
                                             accuracy_batches=4)  # fmt: skip
    (directory / "card_metrics.json").write_text(json.dumps(result, indent=1))
    (directory / "MODEL_CARD.md").write_text(render_card(model, log, result))
    print(f"wrote {directory / 'MODEL_CARD.md'}")
