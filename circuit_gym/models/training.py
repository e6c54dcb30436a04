"""Train circuit_gym's embedded model: an attention-only transformer of GPT-2's head grid.

Reproduces the embedded model from a fixed seed, fully offline, on:
- Python standard-library source (files that are not UTF-8 are skipped; ~10% of files,
  chosen by a hash of their path, are held out for the general-damage reference);
- generated examples of every built-in task (IOI sentences, documented functions,
  repeated random-token sequences, year ranges, ordered lists, pronouns, agreement,
  bracketed calls), from the *train* split of templates and filler combinations only
  (``circuit_gym.tasks.fillers``), so evaluation runs on unseen ones;
- ordinary sentences and code that use the same names and parameter words, so
  copying, not memorising, solves the tasks.

Curriculum (found in trials, see the model card): phase 1 is mostly repeated random
sequences over a small token subset until an induction circuit forms (repeated-half loss
below half the first-half loss on random sequences over the whole train third of the token
ids); phase 2 is the full mixture.

Growing (``--seed-layers K``, default 2): phase 1 trains only the first K layers; the
other layers start with a zero output projection, so they are exact identities and
skipping them changes nothing. A 2-layer model forms induction in a few hundred fast
steps, where the full 12-layer stack took 8,000 (run B, see the model card); at the switch
to phase 2 the whole stack trains, starting from the shallow model's function.

Induction data repeat random sequences over *every* ordinary token id
(``ordinary_token_pool``), so the copying circuit copies any token, as GPT-2's induction
heads do. The ``induction`` task's prompts are fresh random sequences whose splits draw
from disjoint thirds of the ids, so its splits stay disjoint in what they test. (Run D,
the model shipped as ``toy_d`` for the v2/v3 IDs, repeated only the train third
(``copy_pool``) and copied nothing else; see docs/training.)

    python scripts/train_toy_model.py --out circuit_gym/models/toy --work runs/toy
    python scripts/train_toy_model.py --out /tmp/smoke --work /tmp/smoke-work --steps 3 --smoke  # CI

(the script parses the options and calls :func:`train`; the zoo's members are trained by it too,
``scripts/train_zoo.py``).

Training is resumable: every ``--save-every`` steps the weights, optimiser, schedule and
every random generator go to ``--work``/checkpoint.pt; the same command started again
continues from there and ends with the same weights as an uninterrupted run (tested).

The model is a TransformerLens-native attention-only transformer (``NativeModel``), the
same class ``circuit_gym.load_model`` boots into a ``TransformerBridge``. Training runs
its attention through ``torch.nn.functional.scaled_dot_product_attention`` (the same
function, without materialising the pattern: ~1.8x faster here); exported weights are
plain ``NativeModel`` weights.

The 4 x 4 model (``tiny``) was trained by this script at commit 9827f71 with
``--n-layers 4 --n-heads 4 --d-model 128 --n-ctx 128 --vocab 1024 --steps 11000``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import re
import time
import types
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from circuit_gym.models.backup_objective import (
    BackupPair,
    ObjectiveWeights,
    add_routed_gradient,
    backup_loss,
    choose_pairs,
    chosen_pairs,
)
from circuit_gym.tasks import corpus, get_task, list_tasks
from circuit_gym.tasks import fillers as FL
from circuit_gym.tasks.builtin import copy_pool, ordinary_token_pool

BOS = "<|endoftext|>"

# Generators of complete task examples and ordinary text (train split only).
MAKERS_TOY = {
    "ioi": corpus.ioi_sentence,
    "docstring": corpus.documented_function,
    "years": corpus.year_sentence,
    "successor": corpus.successor_text,
    "pronoun": corpus.pronoun_sentence,
    "agreement": corpus.agreement_sentence,
    "brackets": corpus.bracket_code,
    "ordinary": lambda r: corpus.ordinary_name_text(r) if r.random() < 0.5 else corpus.ordinary_code(r),
    "ordinary_suite": corpus.ordinary_suite_text,
}
# The zoo's recipe adds the recall and comparison tasks (suite v3) to the data and the tokenizer.
MAKERS_ZOO = {
    **MAKERS_TOY,
    "capital": corpus.capital_sentence,
    "minimum": corpus.minimum_sentence,
    "ordinary_recall": corpus.ordinary_recall_text,
}
# Half the phase-1 repeats over the whole train third of the token ids: on the small subset
# alone, "copy any token seen earlier" is nearly as good as induction (runs B and C).
PHASE1 = {"repeat_small": 0.3, "repeat_phase1": 0.3, "stdlib": 0.2, "ioi": 0.1, "ordinary": 0.1}
# Fine-tuning an exported model (--init-from): the full mixture with twice the share of random
# repeats over every id, so the copying circuit the model has learns to copy any token.
FINETUNE_REPEAT_SHARE = 0.3
PHASE2 = {
    "stdlib": 0.23, "repeat": 0.15, "ioi": 0.10, "docstring": 0.08, "years": 0.08, "successor": 0.06,
    "pronoun": 0.07, "agreement": 0.08, "brackets": 0.06, "ordinary": 0.06, "ordinary_suite": 0.03,
}  # fmt: skip
# Relative weights. Random repeats over every id at 0.25 (toy: 0.15 in phase 2, 0.3 in run F's
# fine-tuning): phase 1 copies only the train third, and run F generalised copying in ~500 steps at 0.3.
PHASE2_ZOO = {
    **PHASE2,
    "stdlib": 0.10,
    "repeat": 0.25,
    "capital": 0.04,
    "minimum": 0.05,
    "ordinary_recall": 0.01,
}
# A recipe: the text generators (data and tokenizer), the phase-2 mixture, the tasks whose
# fillers must be single tokens, and the ids phase 1 repeats ("every": all ordinary ids, as
# in run E; "train_third": the train third, as in run D, where induction forms ~2x sooner).
RECIPES = {
    "toy": dict(makers=MAKERS_TOY, phase2=PHASE2, extra_tasks=False, phase1_repeats="every"),
    "zoo": dict(makers=MAKERS_ZOO, phase2=PHASE2_ZOO, extra_tasks=True, phase1_repeats="train_third"),
}
RECALL_TASKS = ("capital", "minimum")  # in the zoo's recipe only (the toy tokenizer predates them)
LONG_NUMBER = re.compile(r"^\u0120?\d{3,}$")  # byte-level BPE writes a leading space as U+0120


# ----------------------------------------------------------------------------- data
def recipe_tasks(recipe: str) -> list[str]:
    """The tasks a recipe trains on and checks (its tokenizer must express all of them)."""
    return [t for t in list_tasks() if RECIPES[recipe]["extra_tasks"] or t not in RECALL_TASKS]


def generated_text(rng: random.Random, n: int, recipe: str = "toy") -> list[str]:
    makers = list(RECIPES[recipe]["makers"].values())
    return [rng.choice(makers)(rng) for _ in range(n)]


def _without_long_numbers(tok):
    """Drop merges that make numbers of 3+ digits, so ' 1732' stays ' 17' + '32' (as in GPT-2)."""
    from tokenizers import Tokenizer

    spec = json.loads(tok.to_str())
    model = spec["model"]
    merges = [m if isinstance(m, list) else m.split(" ") for m in model["merges"]]
    keep = [m for m in merges if not LONG_NUMBER.match(m[0] + m[1])]
    dropped = {m[0] + m[1] for m in merges} - {m[0] + m[1] for m in keep}
    ordered = sorted((i, t) for t, i in model["vocab"].items() if t not in dropped)
    model["vocab"] = {t: new for new, (_, t) in enumerate(ordered)}
    model["merges"] = keep
    for added in spec.get("added_tokens", []):
        added["id"] = model["vocab"][added["content"]]
    return Tokenizer.from_str(json.dumps(spec)), sorted(dropped)


def train_tokenizer(stdlib: list[str], rng: random.Random, vocab_size: int, recipe: str = "toy"):
    """Byte-level BPE; every task filler must come out as one token (checked)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[BOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # A third of the stdlib plus plenty of generated text: enough weight that the
    # names and parameter words merge into single BPE tokens on their own.
    texts = stdlib[::3] + generated_text(rng, 200_000, recipe)
    # Every two-digit number as a pre-token of its own ("(17:32)"), so that "00".."99"
    # become tokens as in GPT-2 and a year is " 17" + "32" once long merges are dropped.
    texts += [f"({a:02d}:{b:02d})" for a in range(100) for b in range(100)]
    tok.train_from_iterator(texts, trainer=trainer)
    tok, _ = _without_long_numbers(tok)
    check = _hf_tokenizer(tok)
    missing = []
    for name in recipe_tasks(recipe):  # every task of the recipe must build batches in every split
        for split in FL.SPLITS:
            try:
                get_task(name).make_batch(check, split, 4, np.random.default_rng(0))
            except ValueError as err:
                missing.append(f"{name}/{split}: {err}")
    if missing:
        raise SystemExit("the trained tokenizer cannot express the tasks:\n" + "\n".join(missing))
    return tok


def _hf_tokenizer(tok):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=BOS, unk_token=BOS)


class Stream:
    """Sampler of ``n_ctx``-token training rows, each starting with BOS."""

    def __init__(self, tok, stdlib_train: list[str], n_ctx: int, seed: int, recipe: str = "toy") -> None:
        self.tok, self.n_ctx = tok, n_ctx
        self.makers = RECIPES[recipe]["makers"]
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.bos = tok.token_to_id(BOS)
        ids = [i for doc in tok.encode_batch(stdlib_train) for i in doc.ids + [self.bos]]
        self.stdlib = np.array(ids, dtype=np.int64)
        self.vocab = tok.get_vocab_size()
        # Repeats over every ordinary id (run E): copying must generalise to any token, as an
        # induction head's does. Run D repeated only the train third and copied nothing else.
        every_token = ordinary_token_pool(_hf_tokenizer(tok))
        self.small_subset = self.np_rng.choice(every_token, size=96, replace=False)
        self.normal = every_token
        # Phase 1's repeats: the train third (run D) forms induction sooner than every id (run E).
        if RECIPES[recipe]["phase1_repeats"] == "train_third":
            self.phase1_pool = copy_pool(_hf_tokenizer(tok))
        else:
            self.phase1_pool = every_token
        self.sep = tok.encode("\n\n").ids

    def state(self) -> dict:
        return {"rng": self.rng.getstate(), "np_rng": self.np_rng.bit_generator.state}

    def set_state(self, state: dict) -> None:
        self.rng.setstate(state["rng"])
        self.np_rng.bit_generator.state = state["np_rng"]

    def _pack(self, maker) -> list[int]:
        row = [self.bos]
        while len(row) < self.n_ctx:
            row += self.tok.encode(maker(self.rng)).ids + self.sep
        return row[: self.n_ctx]

    def stdlib_row(self) -> list[int]:
        start = int(self.np_rng.integers(0, len(self.stdlib) - self.n_ctx))
        return [self.bos] + self.stdlib[start : start + self.n_ctx - 1].tolist()

    def repeat_row(self, pool: np.ndarray) -> list[int]:
        length = int(self.np_rng.integers(8, (self.n_ctx - 1) // 2 + 1))
        seq = self.np_rng.choice(pool, size=length).tolist()
        row = [self.bos] + seq + seq
        while len(row) < self.n_ctx:  # fill with another repeat
            more = self.np_rng.choice(pool, size=8).tolist()
            row += more + more
        return row[: self.n_ctx]

    def row(self, kind: str) -> list[int]:
        if kind == "stdlib":
            return self.stdlib_row()
        if kind == "repeat_small":
            return self.repeat_row(self.small_subset)
        if kind == "repeat":
            return self.repeat_row(self.normal)
        if kind == "repeat_phase1":
            return self.repeat_row(self.phase1_pool)
        return self._pack(self.makers[kind])

    def batch(self, mix: dict[str, float], batch_size: int) -> torch.Tensor:
        kinds, weights = list(mix), list(mix.values())
        rows = [self.row(k) for k in self.rng.choices(kinds, weights, k=batch_size)]
        return torch.tensor(rows, dtype=torch.long)


# ---------------------------------------------------------------------------- model
def build_model(vocab: int, args):
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.model_bridge.sources.native.init import initialize_native_model
    from transformer_lens.model_bridge.sources.native.model import NativeModel

    cfg_dict = dict(
        n_layers=args.n_layers, n_heads=args.n_heads, d_model=args.d_model,
        d_head=args.d_model // args.n_heads, n_ctx=args.n_ctx, d_vocab=vocab,
        attn_only=True, normalization_type="LN", positional_embedding_type="standard",
        act_fn="gelu", architecture="TransformerLensNative", seed=args.seed,
    )  # fmt: skip
    d_mlp = getattr(args, "d_mlp", 0)
    if d_mlp:  # MLP layers (pilot round 4): real models' self-repair runs partly through MLP neurons
        cfg_dict.update(attn_only=False, d_mlp=d_mlp)
    cfg = TransformerBridgeConfig.from_dict(dict(cfg_dict))
    model = NativeModel(cfg)
    initialize_native_model(model, cfg, seed=args.seed)
    with torch.no_grad():  # sinusoidal init of the learned positions helps induction form
        pos = torch.arange(args.n_ctx)[:, None]
        freq = torch.exp(-math.log(10000.0) * torch.arange(0, args.d_model, 2) / args.d_model)
        model.pos.weight[:, 0::2] = torch.sin(pos * freq) * 0.5
        model.pos.weight[:, 1::2] = torch.cos(pos * freq) * 0.5
    with torch.no_grad():  # layers outside the seed stack start as exact identities
        lo, hi = seed_stack(args)
        for i, block in enumerate(model.layers):
            if not lo <= i < hi:
                outputs = [block.attn.o] + ([block.mlp.fc_out] if d_mlp else [])
                for out in outputs:
                    out.weight.zero_()
                    if out.bias is not None:
                        out.bias.zero_()
    return model, cfg_dict


def seed_stack(args) -> tuple[int, int]:
    """The layers phase 1 trains: ``--seed-layers`` of them from ``--identity-layers`` on."""
    lo = args.identity_layers
    return lo, (lo + args.seed_layers if args.seed_layers else args.n_layers)


def identity_frozen(args, step: int) -> bool:
    """Whether the first ``--identity-layers`` layers are still held as exact identities."""
    return args.identity_layers > 0 and step < args.release_step


RELEASE_RAMP = 300  # steps over which released identity layers reach the schedule's learning rate


def release_ramp(args, s: int) -> float:
    """Learning-rate factor of the identity layers at scheduler step ``s``: 0 while held, then a
    linear ramp. Without it (attempt 1, docs/zoo.md) Adam's first steps on the fresh parameters
    are full-size sign steps in every coordinate, and the model collapsed at the release."""
    return min(1.0, max(0.0, (s + 1 - args.release_step) / RELEASE_RAMP))


def hold_identities(model, args, frozen: bool) -> None:
    """Freeze (or release) the first ``--identity-layers`` layers: frozen, their output
    projection stays zero, so they are exact identities and the circuits form above them."""
    for block in list(model.layers)[: args.identity_layers]:
        for param in block.parameters():
            param.requires_grad_(not frozen)


@contextlib.contextmanager
def only_layers(model, lo: int, hi: int):
    """Run the model through layers ``lo..hi-1`` only (the others are exact identities now)."""
    full = model.layers
    model._modules["layers"] = torch.nn.ModuleList(list(full)[lo:hi])  # same modules, no copies
    try:
        yield
    finally:
        model._modules["layers"] = full


def _sdpa_forward(self, hidden_states, attention_mask=None, position_ids=None, pattern_fn=None, **kwargs):
    """NativeAttention.forward through scaled_dot_product_attention (no pattern returned)."""
    if attention_mask is not None or pattern_fn is not None or self.rotary is not None:
        raise ValueError("the fast training path supports plain causal attention only")
    b, t, _ = hidden_states.shape
    q, k, v = (m(hidden_states).view(b, t, self.n_heads, self.d_head).transpose(1, 2)
               for m in (self.q, self.k, self.v))  # fmt: skip
    z = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / self.scale)
    captured = getattr(self, "captured_z", None)
    if captured is not None:  # rank_task_heads reads each head's output and its gradient
        captured.append(z)
    dropped = getattr(self, "dropped_heads", None)
    if dropped is not None:  # ablated heads carry another prompt's output (resample)
        # a [heads] mask ablates in every row (head dropout); a [rows, heads] mask row by row,
        # from ``replacement_z`` (the backup objective's counterfactual run) where it is set
        source = getattr(self, "replacement_z", None)
        source = z.roll(1, dims=0).detach() if source is None else source
        mask = dropped[None, :, None, None] if dropped.dim() == 1 else dropped[:, :, None, None]
        z = torch.where(mask, source, z)
    return self.o(z.transpose(1, 2).reshape(b, t, -1)), None


def use_fast_attention(model) -> None:
    """Route every attention layer of a NativeModel through :func:`_sdpa_forward`."""
    for block in model.layers:
        block.attn.forward = types.MethodType(_sdpa_forward, block.attn)


def use_reference_attention(model) -> None:
    for block in model.layers:
        for attribute in ("forward", "dropped_heads", "replacement_z"):
            block.attn.__dict__.pop(attribute, None)


def draw_head_dropout(model, p: float, targets: torch.Tensor | None = None, p_targets: float = 0.0) -> None:
    """The self-repair knobs, drawn for one batch. ``--head-dropout P``: each head of each layer is
    resample-ablated (its output replaced by another row's) with probability ``p``, as the board
    ablates heads. ``--top-head-dropout P`` (``targets``, a ``[layers, heads]`` mask from
    :func:`rank_task_heads`, and ``p_targets``): each targeted head is ablated with probability
    ``p_targets``. A model trained so cannot rely on one head and keeps backups that take over when
    it is ablated (the self-repair of GPT-2's backup name movers). A knob at 0 draws nothing, so the
    random streams, and the weights, are those of a recipe without it."""
    for i, block in enumerate(model.layers):
        n = block.attn.n_heads
        dropped = torch.rand(n) < p if p > 0 else torch.zeros(n, dtype=torch.bool)
        if targets is not None and p_targets > 0:
            dropped |= targets[i] & (torch.rand(n) < p_targets)
        block.attn.dropped_heads = dropped if bool(dropped.any()) or p > 0 else None


# The self-repair knobs a run may set (each 0 when off, and then absent from its setup):
# random head dropout, each task's top head dropped, per-token flooding.
KNOBS = ("head_dropout", "top_head_dropout", "flood", "backup_weight")
# The backup objective's settings beside its weight (recorded only in runs that set the weight).
BACKUP_SETTINGS = ("backup_carry", "backup_dormancy", "backup_pair", "backup_tasks_per_step", "backup_prompts",
                   "backup_from", "backup_route", "backup_clean", "backup_choice")  # fmt: skip


def flooded(token_loss: torch.Tensor, level: float) -> torch.Tensor:
    """Per-token flooding (``--flood B``; Ishida et al. 2020's flooding, token by token): a token
    whose loss is below ``B`` is pushed back up to it, ``|loss - B| + B``, so the model aims at a
    confidence of ``exp(-B)`` on what it knows and no higher. With a head dropped, the rest must
    reach that confidence alone, and with it present they must not overshoot it: the pressure that
    makes a backup act only when its primary is gone. ``B == 0``: the plain loss."""
    return (token_loss - level).abs() + level if level > 0 else token_loss


TOP_HEAD_REFRESH = 50  # steps between two rankings of the tasks' heads (targeted dropout)
TOP_HEAD_PROMPTS = 16  # train-split prompts per task and ranking


def attribution_damage(model, task, batch) -> torch.Tensor:
    """Each head's damage to ``task``'s mean metric on ``batch`` if resample-ablated (its output
    replaced by the next row's, as :func:`draw_head_dropout` does), by attribution patching: the
    metric's gradient at the head's output times the change, summed; ``[layers, heads]``.
    Parameters get no gradient."""
    zs: list[torch.Tensor] = []
    for block in model.layers:
        block.attn.captured_z = zs
    try:
        metric = task.score(model(batch.tokens), batch).mean()
    finally:
        for block in model.layers:
            block.attn.__dict__.pop("captured_z", None)
    grads = torch.autograd.grad(metric, zs, allow_unused=True)
    n_heads = model.layers[0].attn.n_heads
    return torch.stack([
        torch.zeros(n_heads) if g is None else -(g * (z.roll(1, dims=0) - z)).detach().sum((0, 2, 3))
        for z, g in zip(zs, grads, strict=True)
    ])  # fmt: skip


def rank_task_heads(model, hf, tasks: list[str], seed: int, prompts: int = TOP_HEAD_PROMPTS) -> torch.Tensor:
    """The targets of ``--top-head-dropout``: per task, the head of largest
    :func:`attribution_damage` on a fresh train-split batch of ``prompts``; the ``[layers, heads]``
    mask of those heads (one per task, fewer where tasks share one)."""
    targets = torch.zeros(len(model.layers), model.layers[0].attn.n_heads, dtype=torch.bool)
    rng = np.random.default_rng([seed, 41])
    for name in tasks:
        task = get_task(name)
        damage = attribution_damage(model, task, task.make_batch(hf, "train", prompts, rng))
        layer, head = divmod(int(damage.argmax()), damage.shape[1])
        targets[layer, head] = True
    return targets


# ---------------------------------------------------------------------- evaluation
@torch.no_grad()
def evaluate(model, stream: Stream, held_ids: np.ndarray, args) -> dict:
    """Behaviour on held-out templates and filler combinations (eval split), via the Task API."""
    model.eval()
    out: dict = {}
    # In-context copying, on the phase-1 subset and on the whole train third of the token
    # ids. On the 96-token subset a model that only learns "tokens seen earlier are likely"
    # already gets the repeated half to ~ln(30); on ~680 tokens it needs real induction, so
    # the pool measure decides the switch to phase 2.
    L = min(30, (args.n_ctx - 1) // 2)
    g = torch.Generator().manual_seed(0)
    # "pool": the ids phase 1 repeats (every id in the toy recipe; the train third in the zoo's),
    # so the switch waits for induction on what phase 1 teaches; "every": every ordinary id.
    pools = (("subset", stream.small_subset), ("pool", stream.phase1_pool), ("every", stream.normal))
    for label, tokens in pools:
        seq = torch.as_tensor(tokens)[torch.randint(0, len(tokens), (32, L), generator=g)]
        toks = torch.cat([torch.full((32, 1), stream.bos), seq, seq], dim=1)
        lp = F.log_softmax(model(toks)[:, :-1], -1).gather(-1, toks[:, 1:, None])[..., 0]
        out[f"{label}_loss_first_half"] = float(-lp[:, 1:L].mean())
        out[f"{label}_loss_repeated_half"] = float(-lp[:, L + 1 :].mean())
    hf = _hf_tokenizer(stream.tok)
    for name in recipe_tasks(args.recipe):
        task, acc, score = get_task(name), [], []
        for seed in range(4):
            batch = task.make_batch(hf, "eval", 16, np.random.default_rng([seed, 99]))
            logits = model(batch.tokens)
            acc.append(float(task.correct(logits, batch).mean()))
            score.append(float(task.score(logits, batch).mean()))
        out[f"{name}_accuracy"] = round(float(np.mean(acc)), 3)
        out[f"{name}_metric"] = round(float(np.mean(score)), 3)
    ids = torch.tensor(held_ids[: 16 * (args.n_ctx - 1)].reshape(16, -1))
    toks = torch.cat([torch.full((16, 1), stream.bos), ids], 1)
    logits = model(toks)
    out["stdlib_heldout_loss"] = float(F.cross_entropy(logits[:, :-1].flatten(0, 1), toks[:, 1:].flatten()))
    model.train()
    return out


def _file_sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def init_weights(model, directory: Path) -> None:
    """Load an exported model's weights (float16 on disk) into ``model``; shapes must match."""
    from safetensors.torch import load_file

    state = {k: v.to(torch.float32) for k, v in load_file(str(directory / "model.safetensors")).items()}
    model.load_state_dict(state)  # strict: a model of another shape is a clear error


# --------------------------------------------------------------------------- export
def export(model, cfg_dict: dict, tok, out_dir: Path, card: dict) -> None:
    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out_dir / "model.safetensors"))
    (out_dir / "config.json").write_text(
        json.dumps({k: v for k, v in cfg_dict.items() if k != "seed"}, indent=2)
    )
    _hf_tokenizer(tok).save_pretrained(str(out_dir))
    (out_dir / "training_log.json").write_text(json.dumps(card, indent=1))


# ----------------------------------------------------------------------------- training
RESULT_ARGS = ("steps", "batch_size", "n_layers", "n_heads", "d_model", "n_ctx", "vocab", "lr", "warmup",
               "max_phase1_steps", "seed_layers", "seed", "smoke", "eval_every", "init_from", "recipe", "identity_layers",
               "release_step", "tokenizer", "head_dropout", "top_head_dropout", "flood", "d_mlp", "backup_weight",
               *BACKUP_SETTINGS)  # fmt: skip


def train(args: argparse.Namespace) -> None:
    """Train (or resume) the run ``args`` describes (``scripts/train_toy_model.py``'s options):
    checkpoints and the training log in ``args.work``, the finished model exported to ``args.out``."""
    if not 0 <= args.seed_layers <= args.n_layers:
        raise SystemExit(f"--seed-layers must be between 0 and --n-layers ({args.n_layers})")
    if (
        not 0 <= args.identity_layers < args.n_layers
        or args.identity_layers + args.seed_layers > args.n_layers
    ):
        raise SystemExit(
            "--identity-layers + --seed-layers must fit in --n-layers, with a layer left to train"
        )
    if args.identity_layers and args.init_from:
        raise SystemExit(
            "--identity-layers shapes training from scratch; it cannot be combined with --init-from"
        )
    if args.flood < 0:
        raise SystemExit(f"--flood must be at least 0, not {args.flood}")
    for knob in ("head_dropout", "top_head_dropout"):
        if not 0.0 <= getattr(args, knob) < 1.0:
            raise SystemExit(f"--{knob.replace('_', '-')} must be in [0, 1), not {getattr(args, knob)}")
    if args.release_step is None:
        args.release_step = int(0.75 * args.steps)
    if args.backup_weight < 0 or args.backup_tasks_per_step < 1 or args.backup_prompts < 2:
        raise SystemExit("--backup-weight must be >= 0, --backup-tasks-per-step >= 1, --backup-prompts >= 2")
    if args.backup_from is None:  # a fine-tune from its start; from scratch, once the circuits exist
        args.backup_from = 0 if args.init_from else args.release_step  # (and identity layers train)
    torch.set_num_threads(args.threads)
    t0 = time.time()
    args.work.mkdir(parents=True, exist_ok=True)
    ckpt_path = args.work / "checkpoint.pt"
    setup = {k: getattr(args, k) for k in RESULT_ARGS}
    for knob in (*KNOBS, "d_mlp"):  # runs that predate a knob (or MLPs) keep their setup
        if not getattr(args, knob):  # (and resume check) as it was
            del setup[knob]
    if not args.backup_weight:
        for name in BACKUP_SETTINGS:
            del setup[name]
    weights = ObjectiveWeights(
        args.backup_weight,
        args.backup_carry,
        args.backup_dormancy,
        args.backup_pair,
        args.backup_route,
        args.backup_clean,
    )
    if args.init_from:
        setup["init_from_sha256"] = _file_sha256(Path(args.init_from) / "model.safetensors")
    if args.tokenizer:
        setup["tokenizer_sha256"] = _file_sha256(Path(args.tokenizer))
    stdlib_train, stdlib_held = corpus.stdlib_files()
    if args.smoke:
        stdlib_train, stdlib_held = stdlib_train[:40], stdlib_held[:10]

    resume = torch.load(ckpt_path, weights_only=False) if ckpt_path.exists() else None
    if resume is not None and resume["setup"] != setup:
        raise SystemExit(f"{ckpt_path} was written with other settings {resume['setup']}; use another --work")
    from tokenizers import Tokenizer

    tok_path = args.work / "tokenizer.json"
    if args.tokenizer and not tok_path.exists():  # a given tokenizer (a zoo shares one)
        tok_path.write_bytes(Path(args.tokenizer).read_bytes())
    if tok_path.exists():  # the tokenizer is trained once per run and kept
        tok = Tokenizer.from_file(str(tok_path))
    else:
        tok = train_tokenizer(stdlib_train, random.Random(args.seed), args.vocab, args.recipe)
        tok.save(str(tok_path))
    print(f"tokenizer: {tok.get_vocab_size()} tokens in {time.time() - t0:.0f}s", flush=True)
    torch.manual_seed(args.seed)
    stream = Stream(tok, stdlib_train, args.n_ctx, args.seed, args.recipe)
    held_ids = np.array([i for d in tok.encode_batch(stdlib_held) for i in d.ids], dtype=np.int64)
    model, cfg_dict = build_model(tok.get_vocab_size(), args)

    def schedule(s: int) -> float:
        return min(1.0, (s + 1) / args.warmup) * (
            0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / args.steps)))
        )

    held = [p for block in list(model.layers)[: args.identity_layers] for p in block.parameters()]
    if held:  # the released identity layers warm up on their own (see release_ramp)
        held_set = {id(p) for p in held}
        groups = [{"params": [p for p in model.parameters() if id(p) not in held_set]}, {"params": held}]
        lambdas = [schedule, lambda s: schedule(s) * release_ramp(args, s)]
    else:
        groups, lambdas = list(model.parameters()), schedule
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambdas)
    start, phase, switched_at, log, targets, pairs = 1, 1, None, [], None, None
    mix2 = RECIPES[args.recipe]["phase2"]
    if args.init_from:  # a trained model: no phase 1, its weights as the start
        init_weights(model, Path(args.init_from))
        phase, switched_at = 2, 0
        mix2 = {**mix2, "repeat": FINETUNE_REPEAT_SHARE}
    if resume is not None:
        model.load_state_dict(resume["model"])
        opt.load_state_dict(resume["optimizer"])
        sched.load_state_dict(resume["scheduler"])
        stream.set_state(resume["stream"])
        torch.set_rng_state(resume["torch_rng"])
        start, phase, switched_at, log = (
            resume["step"] + 1,
            resume["phase"],
            resume["switched_at"],
            resume["log"],
        )
        targets = resume.get("targets")
        pairs = [BackupPair(**p) for p in resume["backup_pairs"]] if resume.get("backup_pairs") else None
        print(f"resumed from {ckpt_path} at step {resume['step']}", flush=True)
    print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters; stdlib {len(stream.stdlib):,} tokens",
          flush=True)  # fmt: skip

    def card() -> dict:
        out = dict(args={k: str(v) for k, v in vars(args).items()}, setup=setup, phase_switch_step=switched_at,
                   log=log, torch=torch.__version__)  # fmt: skip
        if pairs is not None:  # the backup objective's recorded truth (flat head ids)
            out["backup_pairs"] = [p.as_json() for p in pairs]
        return out

    hf = _hf_tokenizer(tok)
    use_fast_attention(model)
    term_sums: dict[str, float] = {}
    term_count = 0
    for step in range(start, args.steps + 1):
        x = stream.batch(PHASE1 if phase == 1 else mix2, args.batch_size)
        frozen = identity_frozen(args, step)
        hold_identities(model, args, frozen)
        if phase == 1 and args.seed_layers:
            layers = only_layers(model, *seed_stack(args))
        elif frozen:  # the held identity layers change nothing: skip them
            layers = only_layers(model, args.identity_layers, args.n_layers)
        else:
            layers = contextlib.nullcontext()
        if phase == 2 and args.top_head_dropout and (targets is None or step % TOP_HEAD_REFRESH == 0):
            targets = rank_task_heads(model, hf, recipe_tasks(args.recipe), seed=args.seed * 100_003 + step)
        draw_head_dropout(
            model,
            args.head_dropout if phase == 2 else 0.0,
            targets if phase == 2 else None,
            args.top_head_dropout,
        )
        with layers:
            token_loss = F.cross_entropy(model(x)[:, :-1].flatten(0, 1), x[:, 1:].flatten(), reduction="none")
            loss = flooded(token_loss, args.flood if phase == 2 else 0.0).mean()
        draw_head_dropout(model, 0.0)  # evaluation and export see the whole model
        routed = None
        if args.backup_weight and phase == 2 and step >= args.backup_from:
            if pairs is None:  # chosen once, on the model as the objective finds it, then fixed
                pairs = choose_pairs(
                    model,
                    hf,
                    recipe_tasks(args.recipe),
                    args.seed * 100_003 + step,
                    attribution_damage,
                    backup_choice=args.backup_choice,
                )
                print(
                    "backup pairs: " + ", ".join(f"{p.task} P {p.primary} Q {p.backup}" for p in pairs),
                    flush=True,
                )
            extra, routed, terms = backup_loss(model, hf, pairs, weights, step, args.seed,
                                               args.backup_tasks_per_step, args.backup_prompts)  # fmt: skip
            loss = loss + extra
            for key, value in terms.items():
                term_sums[key] = term_sums.get(key, 0.0) + value
            term_count += 1
        opt.zero_grad(set_to_none=True)
        if routed is not None:  # the backup heads' own gradient first, while the graph is alive
            add_routed_gradient(
                model, routed, [p.backup for p in chosen_pairs(pairs, step, args.backup_tasks_per_step)]
            )
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % args.eval_every == 0 or step == args.steps:
            m = evaluate(model, stream, held_ids, args)
            # Phase 2 once induction works on the phase-1 tokens (or, as a fallback, late).
            formed = m["pool_loss_repeated_half"] < 0.5 * m["pool_loss_first_half"]
            if phase == 1 and (formed or step >= args.max_phase1_steps):
                phase, switched_at = 2, step
            if targets is not None:  # which heads the targeted knob ablates now
                m["targeted_heads"] = [f"{i}.{j}" for i, j in targets.nonzero().tolist()]
            if term_count:  # the backup objective's terms, mean since the last evaluation
                m["backup_terms"] = {k: round(v / term_count, 4) for k, v in term_sums.items()}
                term_sums, term_count = {}, 0
            m.update(
                step=step,
                phase=phase,
                train_loss=float(loss.detach()),
                minutes=round((time.time() - t0) / 60, 1),
            )
            log.append(m)
            accs = " ".join(f"{n[:4]} {m[n + '_accuracy']:.2f}" for n in recipe_tasks(args.recipe))
            print(f"step {step} phase {phase} loss {float(loss):.3f} rep {m['subset_loss_repeated_half']:.2f}/"
                  f"{m['subset_loss_first_half']:.2f} pool {m['pool_loss_repeated_half']:.2f}/"
                  f"{m['pool_loss_first_half']:.2f} every {m['every_loss_repeated_half']:.2f}/"
                  f"{m['every_loss_first_half']:.2f} {accs} stdlib {m['stdlib_heldout_loss']:.2f} "
                  f"[{m['minutes']} min]", flush=True)  # fmt: skip
        if step % args.save_every == 0 or step == args.steps:
            state = dict(setup=setup, step=step, phase=phase, switched_at=switched_at, log=log,
                         model=model.state_dict(), optimizer=opt.state_dict(), scheduler=sched.state_dict(),
                         stream=stream.state(), torch_rng=torch.get_rng_state(), targets=targets,
                         backup_pairs=None if pairs is None else [p.as_json() for p in pairs])  # fmt: skip
            torch.save(state, args.work / "checkpoint.tmp")
            (args.work / "checkpoint.tmp").replace(ckpt_path)  # atomic: a kill never leaves half a file
            (args.work / "training_log.json").write_text(json.dumps(card(), indent=1))
        if args.stop_after is not None and step >= args.stop_after:
            print(f"stopped after step {step}; run the same command to continue", flush=True)
            return
    use_reference_attention(model)
    export(model, cfg_dict, tok, args.out, card())
    print(f"done in {(time.time() - t0) / 60:.1f} min -> {args.out}", flush=True)
