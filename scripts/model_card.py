"""Measure the embedded model and write its model card (numbers, not claims).

    python scripts/model_card.py [--model-dir circuit_gym/models/toy] [--episodes 8]

Reads the training log written by ``scripts/train_toy_model.py`` and measures, on
held-out templates and fillers: induction (loss on the repeated half vs the first half,
head scores), IOI accuracy, docstring accuracy, and the per-task top-5 heads by
contrastive reward under every reference batch and ablation kind.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym.ablation import ABLATIONS, default_ablation, head_name  # noqa: E402
from circuit_gym.ablation.tables import sweep_table  # noqa: E402
from circuit_gym.models import load_model  # noqa: E402
from circuit_gym.models.behaviour import docstring_metrics, induction_metrics, ioi_metrics  # noqa: E402
from circuit_gym.tasks import get_task  # noqa: E402
from circuit_gym.tasks.reference import REFERENCE_CHOICES, reference_batch  # noqa: E402

TASKS = ("induction", "ioi", "docstring")


def top_heads(model, episodes: int) -> dict:
    """Mean contrastive reward over eval-split batches -> top-5 heads, per reference x ablation x task."""
    out = {}
    for ref_name in ("stdlib", "stdlib+taskstyle", "prose+taskstyle"):
        if ref_name not in REFERENCE_CHOICES:
            continue
        ref = reference_batch(model, ref_name)
        for kind in ABLATIONS:
            for name in TASKS:
                task = get_task(name)
                tables = [sweep_table(model, task, task.batch(model, "eval", 16, s), ref, ablation=kind)
                          for s in range(episodes)]  # fmt: skip
                reward = np.mean([t.reward for t in tables], 0)
                oracle_counts = np.bincount([t.oracle_head for t in tables], minlength=len(reward))
                order = np.argsort(-reward)[:5]
                out[f"{ref_name}|{kind}|{name}"] = {
                    "top5": [
                        (head_name(int(h), model.cfg.n_heads), round(float(reward[h]), 3)) for h in order
                    ],
                    "most_frequent_oracle": head_name(int(np.argmax(oracle_counts)), model.cfg.n_heads),
                    "oracle_frequency": float(oracle_counts.max() / len(tables)),
                }
    return out


def episode_oracles(model, episodes: int = 48, batch_size: int = 8) -> dict:
    """How often each head is the per-episode oracle under the environments' defaults
    (default ablation and reference, batches of 8): eval split for the training tasks,
    test split for docstring; IOI also per name order (the IO first = ABBA, or second)."""
    ref, kind = reference_batch(model, None), default_ablation("toy")
    out = {"ablation": kind, "reference": ref.name, "episodes": episodes, "batch_size": batch_size}
    for name, split in (("induction", "eval"), ("ioi", "eval"), ("docstring", "test")):
        task, counts = get_task(name), {}
        for seed in range(episodes):
            batch = task.batch(model, split, batch_size, seed)
            table = sweep_table(model, task, batch, ref, ablation=kind)
            group = name
            if name == "ioi":
                group = (
                    "ioi ABBA" if batch.template.index("{IO}") < batch.template.index("{S}") else "ioi BABA"
                )
            counts.setdefault(group, Counter())[head_name(table.oracle_head, model.cfg.n_heads)] += 1
        out.update({g: dict(c.most_common()) for g, c in counts.items()})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=ROOT / "circuit_gym" / "models" / "toy")
    parser.add_argument("--episodes", type=int, default=8)
    args = parser.parse_args()
    model = load_model("toy", path=args.model_dir)
    metrics = {}
    for split in ("eval", "test"):
        metrics[split] = {
            "induction": induction_metrics(model, split), "ioi": ioi_metrics(model, split),
            "docstring": docstring_metrics(model, split),
        }  # fmt: skip
    heads = top_heads(model, args.episodes)
    oracles = episode_oracles(model)
    log = json.loads((args.model_dir / "training_log.json").read_text())
    result = {"weights_hash": model.circuit_gym_info.weights_hash, "behaviour": metrics, "top_heads": heads,
              "episode_oracles": oracles}  # fmt: skip
    (args.model_dir / "card_metrics.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "top_heads"}, indent=1)[:3000])
    for key, v in heads.items():
        print(
            f"{key:>40}: {v['top5']}  oracle mode {v['most_frequent_oracle']} ({v['oracle_frequency']:.2f})"
        )
    last = log["log"][-1]
    print(
        f"training: {last['step']} steps, {last['minutes']} min, phase switch at {log['phase_switch_step']}"
    )
    (args.model_dir / "MODEL_CARD.md").write_text(render_card(model, log, result))


def _head_table(scores: list[list[float]], n_heads: int, top: int = 3) -> str:
    flat = np.asarray(scores).ravel()
    order = np.argsort(-flat)[:top]
    return ", ".join(f"{head_name(int(h), n_heads)} ({flat[h]:.2f})" for h in order)


def render_card(model, log: dict, result: dict) -> str:
    cfg, n_heads = model.cfg, int(model.cfg.n_heads)
    history = log.get("history", []) + [{k: v for k, v in log.items() if k != "history"}]
    lines = [
        "# Model card: circuit_gym embedded model (`toy`)",
        "",
        "Generated by `scripts/model_card.py` from the training log and fresh measurements; do not edit by hand.",
        "",
        "## Model",
        f"- Attention-only transformer (TransformerLens-native `NativeModel`): {cfg.n_layers} layers x "
        f"{n_heads} heads, d_model {cfg.d_model}, d_head {cfg.d_head}, context {cfg.n_ctx}, LayerNorm, learned "
        f"positions (sinusoidal init), vocabulary {cfg.d_vocab} (byte-level BPE trained with `tokenizers`; every "
        "task name and parameter word is one token), 0.54M parameters.",
        f"- Weights hash `{result['weights_hash']}`; stored in fp16 (1.1 MB), loaded as fp32.",
        "",
        "## Training stages (oldest first)",
    ]
    for run in history:
        a = run["args"]
        last = run["log"][-1]
        cont = a.get("init_from") not in (None, "None")
        lines.append(
            f"- `train_toy_model.py --steps {a['steps']} --lr {a['lr']} --warmup {a['warmup']}"
            + (" --init-from PREVIOUS" if cont else "")
            + (f" --phase2-mix {a['phase2_mix']}" if a.get("phase2_mix") not in (None, "None") else "")
            + f"`: ran {last['step']} steps ({last['minutes']} min, one thread); at the end: train loss "
            f"{last['train_loss']:.2f}, held-out stdlib loss {last['stdlib_heldout_loss']:.2f}, eval-split IOI "
            f"{last['ioi_accuracy']:.2f}, docstring {last['docstring_3way']:.2f}"
            + (f"; phase 2 from step {run['phase_switch_step']}" if run.get("phase_switch_step") else "")
        )
    lines += [
        "",
        "Data: Python standard-library source (non-UTF-8 files skipped; 10% of files held out), generated IOI "
        "sentences and documented functions from the *train* templates and filler combinations only, repeated "
        "random-token sequences, and ordinary sentences/code using the same names and parameter words.",
        "",
        "## Behaviour on held-out templates and fillers",
        "",
        "| split | induction loss first / repeated half | IOI accuracy (logit diff) | docstring 3-way accuracy (chance 0.33) | docstring top-1 |",
        "|---|---|---|---|---|",
    ]
    for split, m in result["behaviour"].items():
        ind, ioi, doc = m["induction"], m["ioi"], m["docstring"]
        lines.append(
            f"| {split} | {ind['loss_first_half']:.2f} / {ind['loss_repeated_half']:.2f} | {ioi['accuracy']:.3f} "
            f"({ioi['logit_diff']:.2f}) | {doc['three_way_accuracy']:.3f} | {doc['top1_accuracy']:.3f} |"
        )
    hs = result["behaviour"]["eval"]["induction"]["head_scores"]
    lines += [
        "",
        "Head roles by attention-pattern scores (repeated random tokens, eval split; top 3):",
        f"- induction: {_head_table(hs['induction'], n_heads)}",
        f"- previous token: {_head_table(hs['previous_token'], n_heads)}",
        f"- duplicate token: {_head_table(hs['duplicate_token'], n_heads)}",
        "",
        "## Per-task best heads by contrastive reward (eval split, mean over batches of 16 prompts)",
        "",
        "| reference | ablation | induction top-5 | IOI top-5 | docstring top-5 |",
        "|---|---|---|---|---|",
    ]
    keys = sorted({tuple(k.split("|")[:2]) for k in result["top_heads"]})
    for ref, kind in keys:
        cells = []
        for task in TASKS:
            v = result["top_heads"][f"{ref}|{kind}|{task}"]
            cells.append(" ".join(f"{h} ({r:.2f})" for h, r in v["top5"]))
        lines.append(f"| {ref} | {kind} | " + " | ".join(cells) + " |")
    eo = result["episode_oracles"]
    lines += [
        "",
        f"## Per-episode oracle under the benchmark's default ({eo['ablation']} ablation, reference "
        f"{eo['reference']}, {eo['episodes']} batches of {eo['batch_size']})",
        "",
        "This is what the environments' oracle is: the best single head of each episode's batch.",
        "",
        "| task (split) | oracle head: number of episodes |",
        "|---|---|",
    ]
    for group in [k for k in eo if k.startswith(("induction", "ioi", "docstring"))]:
        split = "test" if group == "docstring" else "eval"
        lines.append(f"| {group} ({split}) | " + ", ".join(f"{h}: {n}" for h, n in eo[group].items()) + " |")
    lines += ["", "## What was tried and what is known to be weak", "", WHAT_WAS_TRIED]
    return "\n".join(lines) + "\n"


WHAT_WAS_TRIED = """- First run, following the recipe measured before the project (4x4 attention-only,
  vocabulary 1,024, staged curriculum) with 8 fixed IOI templates and 6x8 fixed docstring
  skeletons: induction formed at ~2,000 steps; by 7,000 steps IOI and docstring were solved
  on the *training* templates (accuracy 1.0) but at or below chance on held-out templates
  (IOI 0.55, docstring 0.04): the model memorised templates. A focus phase with one example
  right after BOS did not help.
- Fix: templates are combinations of familiar parts (openings x places x actions x things
  for IOI; signature x summary x descriptions for docstring) and the held-out splits are
  unseen combinations (`circuit_gym/tasks/fillers.py`). Continuing the first run's step-7,000
  checkpoint on such data reached held-out accuracy ~1.0 within 250 steps, but its best
  heads overlapped (docstring and induction both 1.1; IOI 0.3 in layer 0).
- This model: one run of the current script from its seed (`--steps 11000`), ~49 minutes
  on one thread (a second run from the same seed gave the same weights hash).
- Zero ablation makes layer-0 heads look like bottlenecks: docstring's best head under zero
  ablation is 0.3, a layer-0 head that from the final `:param` attends to line starts and
  `):` (the layout), and 0.0/0.1 are runners-up for every task. Zeroing a layer-0 head also
  removes its constant contribution, on which every later head's queries and keys rely;
  mean and resample ablation keep it. Under resample ablation (each head's output replaced
  by its output on the counterfactual prompt: same template, other names / parameters /
  tokens) every task's best heads are in layers 1-3 and differ: induction 1.3 and 3.1 (the
  two induction heads, within ~4% of each other, so which one wins depends on the batch),
  IOI 1.0 when the indirect object comes first (ABBA) and 2.1 when it comes second (BABA),
  docstring 1.0. Resample is therefore the embedded model's default; zero ablation stays
  available (`ablation="zero"`) and is GPT-2's default. Mean ablation was not chosen:
  induction's best head under it is the layer-0 head 0.0.
- IOI batches mixed both name orders at first; head 1.0 matters only for ABBA prompts
  (task damage 24 vs -4 per prompt under zero ablation), so the best head of a batch of 8
  depended on how many ABBA prompts it drew. A batch is now one template in one order, as
  in the IOI paper's template list."""


if __name__ == "__main__":
    main()
