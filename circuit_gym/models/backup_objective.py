"""The backup objective (zoo v3, issue 55): train a dormant backup for each task's primary head.

Dropout knobs (zoo v2, pilot rounds 1-10) spread a task's load over heads that act together; they
never made a backup that is **silent while its primary works**, which is what defeats first-order
methods on GPT-2's backup name movers. This objective asks for that behaviour directly, with the
board's ablation (resample: a head's output replaced by its value on the counterfactual prompt).
Per task, a primary head ``P`` (the task's top head by attribution patching when the objective
starts, as the targeted knob finds it) and a backup ``Q`` in a later layer (drawn) get three terms,
each on the task metric ``m`` (per prompt, higher = better; ``m0`` the clean run's, held fixed):

- **carry**: ``relu(clean0 - m(P ablated))``: when ``P`` is gone the task still works (``Q`` takes
  over) as well as the clean model did when the objective started (``clean0``);
- **dormancy**: ``|m(Q ablated) - m0|``: ablating ``Q`` while ``P`` works changes nothing;
- **pair**: ``relu(m(P, Q ablated) - fail)``: with both gone the task fails, as ``P`` alone once made
  it fail (InterpBench's pair intervention for an OR gate). Without it the optimiser meets "carry"
  by strengthening the whole circuit instead of ``Q`` (issue 55's probe: redundancy 1.02 without,
  1.79 with it). ``fail`` is the metric with ``P`` ablated in the model the objective started from,
  capped at half its clean metric so a diffuse task still has a failure to aim at;
- **clean**: ``|mean(m0) - clean0|``: the clean metric (its batch mean) stays where it was when the
  objective started (``clean0``). The language-model loss alone did not hold it: pilot run 2 met the
  pair term by failing the task everywhere (IOI accuracy 0.97 -> 0.12 in 200 steps); with a floor
  only, run 5 met it by scaling the circuit up (agreement's clean logit difference 8.3 -> 23 in 200
  steps, the P-and-Q-ablated run as far below), so the term holds both ways.

The four runs (clean, P, Q, P and Q ablated) of a task's prompts go through the model as one
stacked batch; the counterfactual run that supplies the replacements has no gradient, as the
board's replacement is a fixed recorded activation. The recorded pairs are the trained model's
truth: the training log keeps them (``backup_pairs``), and the zoo v3 report checks them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from circuit_gym.tasks import get_task

ROLES = ("clean", "p", "q", "pq")  # the four stacked runs, in this order
FAIL_CAP = 0.5  # the pair term's target: at most this share of the clean metric
MIN_ACCURACY = 0.5  # a task the model does not perform gets no pair (its top head means nothing)
SELECTION_PROMPTS = 32


@dataclass(frozen=True)
class BackupPair:
    """One task's recorded pair: flat head ids (``layer * n_heads + head``) and the pair term's
    target (``fail``) measured when the objective started."""

    task: str
    primary: int
    backup: int
    fail: float
    clean: float  # the clean metric when the objective started: the clean run must not fall below it

    def as_json(self) -> dict:
        return asdict(self)


ROUTES = ("all", "backup")


@dataclass(frozen=True)
class ObjectiveWeights:
    """The objective's weight in the loss, its terms' relative weights, and where the carry and
    dormancy terms' gradients go: ``"all"`` the whole model; ``"backup"`` only the backup head's own
    parameters (its query, key and value rows and output columns). Pilot run 1 (docs/zoo.md) showed
    why: with ``"all"`` the optimiser lowers the carry term by making the whole circuit robust to
    ``P``'s ablation, which raises the pair term (the task survives ``P`` and ``Q`` ablated too);
    routed, only ``Q`` can learn to carry, and only ``Q`` to be silent, while the pair term still
    reaches every weight."""

    weight: float = 1.0
    carry: float = 1.0
    dormancy: float = 1.0
    pair: float = 1.0
    route: str = "all"
    clean: float = 1.0

    def __post_init__(self) -> None:
        if self.route not in ROUTES:
            raise ValueError(f"unknown route {self.route!r}; known: {ROUTES}")


BACKUP_CHOICES = ("drawn", "conditional")


def choose_pairs(model, hf, tasks: list[str], seed: int, damage: Callable, *, backup_choice: str = "drawn",
                 prompts: int = SELECTION_PROMPTS) -> list[BackupPair]:  # fmt: skip
    """Per task the model performs (train-split accuracy at least :data:`MIN_ACCURACY`): ``P`` the
    head of largest attribution damage outside the last layer (a backup must sit above it), and one
    ``Q`` per distinct ``P`` in a later layer (tasks sharing a primary share its backup), never
    another task's primary or backup. ``backup_choice``: ``"drawn"``, uniformly with ``seed``;
    ``"conditional"``, the later head of largest attribution damage **with P ablated**, summed over
    P's tasks (the head that already carries most of the task when P is gone, as GPT-2's backup name
    movers do). Train split only. ``damage(model, task, batch)``: per-head ``[layers, heads]`` damage
    estimates (the targeted knob's attribution patching, ``training.attribution_damage``)."""
    if backup_choice not in BACKUP_CHOICES:
        raise ValueError(f"unknown backup choice {backup_choice!r}; known: {BACKUP_CHOICES}")
    n_layers, n_heads = len(model.layers), model.layers[0].attn.n_heads
    rng = np.random.default_rng([seed, 55])
    primaries: dict[str, int] = {}
    fails: dict[str, float] = {}
    cleans: dict[str, float] = {}
    batches = {}
    for name in tasks:
        task = get_task(name)
        batch = task.make_batch(hf, "train", prompts, np.random.default_rng([seed, 55, len(primaries)]))
        with torch.no_grad():
            logits = model(batch.tokens)
            accuracy = float(task.correct(logits, batch).mean())
        if accuracy < MIN_ACCURACY:
            continue
        below_top = damage(model, task, batch)[: n_layers - 1]
        primary = int(below_top.flatten().argmax())
        primaries[name], batches[name] = primary, batch
        with torch.no_grad():
            runs = stacked_metrics(model, task, batch, primary, primary)  # Q := P: the "q" run is P's too
        clean, p_ablated = (float(runs[i].mean()) for i in (0, 1))
        fails[name] = min(p_ablated, FAIL_CAP * clean)
        cleans[name] = clean
    taken = set(primaries.values())
    backups: dict[int, int] = {}
    for primary in sorted(set(primaries.values())):
        layer = primary // n_heads
        free = [h for h in range((layer + 1) * n_heads, n_layers * n_heads) if h not in taken]
        if backup_choice == "drawn":
            backups[primary] = int(free[int(rng.integers(len(free)))])
        else:
            conditional = torch.zeros(n_layers * n_heads)
            for name, p in primaries.items():
                if p == primary:
                    conditional += _damage_with_ablated(model, get_task(name), batches[name], primary, damage)
            backups[primary] = max(free, key=lambda h: (float(conditional[h]), -h))
        taken.add(backups[primary])
    return [BackupPair(t, p, backups[p], fails[t], cleans[t]) for t, p in primaries.items()]


def _damage_with_ablated(model, task, batch, head: int, damage: Callable) -> torch.Tensor:
    """``damage`` (flat, per head) on ``batch`` while ``head`` is resample-ablated from the
    counterfactual prompts."""
    n_heads = model.layers[0].attn.n_heads
    attn = model.layers[head // n_heads].attn
    mask = torch.zeros(batch.tokens.shape[0], n_heads, dtype=torch.bool)
    mask[:, head % n_heads] = True
    attn.dropped_heads, attn.replacement_z = mask, capture_z(model, batch.counterfactual)[head // n_heads]
    try:
        return damage(model, task, batch).flatten()
    finally:
        attn.__dict__.pop("dropped_heads", None)
        attn.__dict__.pop("replacement_z", None)


def capture_z(model, tokens: torch.Tensor) -> list[torch.Tensor]:
    """Every layer's head outputs ``z`` (``[batch, heads, seq, d_head]``) on ``tokens``, no gradient."""
    zs: list[torch.Tensor] = []
    for block in model.layers:
        block.attn.captured_z = zs
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        for block in model.layers:
            block.attn.__dict__.pop("captured_z", None)
    return zs


def stacked_metrics(model, task, batch, primary: int, backup: int) -> torch.Tensor:
    """The task metric per prompt in the four runs of :data:`ROLES` (``[4, batch]``): the prompts
    stacked four times, ``P``, ``Q`` or both resample-ablated from the counterfactual prompts."""
    if batch.counterfactual is None:
        raise ValueError(f"task {task.name!r} has no counterfactual prompts to resample from")
    n_heads = model.layers[0].attn.n_heads
    b = batch.tokens.shape[0]
    replacements = capture_z(model, batch.counterfactual)
    ablated = {"p": (primary,), "q": (backup,), "pq": (primary, backup)}
    for layer, block in enumerate(model.layers):
        mask = torch.zeros(len(ROLES), b, n_heads, dtype=torch.bool)
        for role, heads in ablated.items():
            for head in heads:
                if head // n_heads == layer:
                    mask[ROLES.index(role), :, head % n_heads] = True
        block.attn.dropped_heads = mask.flatten(0, 1)
        block.attn.replacement_z = replacements[layer].repeat(len(ROLES), 1, 1, 1)
    try:
        stacked = batch.select(torch.arange(b).repeat(len(ROLES)))
        scores = task.score(model(stacked.tokens), stacked)
    finally:
        for block in model.layers:
            block.attn.__dict__.pop("dropped_heads", None)
            block.attn.__dict__.pop("replacement_z", None)
    return scores.view(len(ROLES), b)


def objective_terms(runs: torch.Tensor, fail: float, clean_floor: float) -> dict[str, torch.Tensor]:
    """The terms (module docstring) from :func:`stacked_metrics`'s runs, means over prompts. The
    carry term aims at the fixed ``clean_floor``, not at the current clean run: chasing the current
    run, every gain of the ablated run also lifted its own target through the shared weights, and the
    metric's scale ran away (pilot run 4: agreement's clean logit difference 8.3 -> 33.5 and
    pronoun's 6.6 -> 50.3 in 500 steps)."""
    clean, p, q, pq = runs
    target = clean.detach()
    return {
        "carry": F.relu(clean_floor - p).mean(),
        "dormancy": (q - target).abs().mean(),
        "pair": F.relu(pq - fail).mean(),
        "clean": (clean.mean() - clean_floor).abs(),
    }


def chosen_pairs(pairs: list[BackupPair], step: int, tasks_per_step: int) -> list[BackupPair]:
    """The pairs one step trains: ``tasks_per_step`` of them, taken in turn by ``step``."""
    return [pairs[(step * tasks_per_step + j) % len(pairs)] for j in range(min(tasks_per_step, len(pairs)))]


def backup_loss(model, hf, pairs: list[BackupPair], weights: ObjectiveWeights, step: int, seed: int,
                tasks_per_step: int, prompts: int) -> tuple[torch.Tensor, torch.Tensor, dict[str, float]]:  # fmt: skip
    """The objective on the step's :func:`chosen_pairs` (fresh train-split prompts seeded by ``seed``
    and ``step``, so a resumed run draws the same batches): the weighted part whose gradient reaches
    every weight, the part routed to the backup heads alone (zero unless ``weights.route`` is
    ``"backup"``; :func:`add_routed_gradient`), and, for the log, each term's mean."""
    chosen = chosen_pairs(pairs, step, tasks_per_step)
    total, routed = torch.zeros(()), torch.zeros(())
    logged: dict[str, float] = {}
    for j, pair in enumerate(chosen):
        task = get_task(pair.task)
        batch = task.make_batch(hf, "train", prompts, np.random.default_rng([seed, step, j, 55]))
        runs = stacked_metrics(model, task, batch, pair.primary, pair.backup)
        terms = objective_terms(runs, pair.fail, pair.clean)
        backup_part = weights.carry * terms["carry"] + weights.dormancy * terms["dormancy"]
        if weights.route == "backup":
            routed = routed + backup_part
        else:
            total = total + backup_part
        total = total + weights.pair * terms["pair"] + weights.clean * terms["clean"]
        for key, value in terms.items():
            logged[key] = logged.get(key, 0.0) + float(value.detach()) / len(chosen)
    scale = weights.weight / len(chosen)
    return scale * total, scale * routed, logged


def backup_head_parameters(model, heads: list[int]) -> list[tuple[torch.nn.Parameter, torch.Tensor]]:
    """Each attention weight of the layers holding ``heads`` (flat ids) with a mask of the entries
    that belong to those heads: rows of the query, key and value projections, columns of the output."""
    n_heads = model.layers[0].attn.n_heads
    out = []
    for layer in sorted({h // n_heads for h in heads}):
        attn = model.layers[layer].attn
        d_head = attn.d_head
        rows = torch.zeros(n_heads * d_head, dtype=torch.bool)
        for h in heads:
            if h // n_heads == layer:
                rows[(h % n_heads) * d_head : (h % n_heads + 1) * d_head] = True
        for proj in (attn.q, attn.k, attn.v):
            out.append((proj.weight, rows[:, None].expand_as(proj.weight)))
            out.append((proj.bias, rows))
        out.append((attn.o.weight, rows[None, :].expand_as(attn.o.weight)))
    return out


def add_routed_gradient(model, routed: torch.Tensor, heads: list[int]) -> None:
    """Add ``routed``'s gradient to the backup heads' own parameter entries (and nowhere else); call
    after the rest of the loss's ``backward(retain_graph=...)`` or before it with the graph retained."""
    if not routed.requires_grad:
        return
    params = backup_head_parameters(model, heads)
    grads = torch.autograd.grad(routed, [p for p, _ in params], retain_graph=True, allow_unused=True)
    for (param, mask), grad in zip(params, grads, strict=True):
        if grad is None:
            continue
        masked = torch.where(mask, grad, torch.zeros_like(grad))
        param.grad = masked if param.grad is None else param.grad + masked
