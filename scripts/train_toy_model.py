"""Train circuit_gym's embedded model: a small attention-only transformer.

Reproduces ``circuit_gym/models/toy`` from a fixed seed, fully offline, on:
- Python standard-library source (files that are not UTF-8 are skipped; ~10% of files,
  chosen by a hash of their path, are held out for the general-damage reference);
- generated IOI sentences, documented functions and repeated random-token sequences,
  from the *train* split of templates and filler combinations only
  (``circuit_gym.tasks.fillers``), so evaluation runs on unseen ones;
- ordinary sentences and code that use the same names and parameter words, so
  copying, not memorising, solves the tasks.

Curriculum (found in trials, see the model card): phase 1 is mostly repeated random
sequences over a small token subset until an induction circuit forms (repeated-half loss
below half the first-half loss); phase 2 is the full mixture.

    python scripts/train_toy_model.py --out circuit_gym/models/toy --steps 11000
    python scripts/train_toy_model.py --out /tmp/smoke --steps 3 --smoke   # CI smoke test

The model is a TransformerLens-native attention-only transformer (``NativeModel``), the
same class ``circuit_gym.load_model("toy")`` boots into a ``TransformerBridge``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from circuit_gym.tasks import corpus  # noqa: E402
from circuit_gym.tasks import fillers as FL  # noqa: E402

BOS = "<|endoftext|>"


# ----------------------------------------------------------------------------- data
def generated_text(rng: random.Random, n: int) -> list[str]:
    makers = (
        corpus.ioi_sentence,
        corpus.documented_function,
        corpus.ordinary_name_text,
        corpus.ordinary_code,
    )
    return [rng.choice(makers)(rng) for _ in range(n)]


def train_tokenizer(stdlib: list[str], rng: random.Random, vocab_size: int):
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
    texts = stdlib[::3] + generated_text(rng, 200_000)
    tok.train_from_iterator(texts, trainer=trainer)
    fillers = [" " + w for w in FL.NAMES + FL.PARAM_WORDS + FL.FUNCTION_NAMES]
    missing = [w for w in fillers if len(tok.encode(w).ids) != 1]
    if missing:  # add the few that BPE split, rather than silently breaking the tasks
        tok.add_tokens(missing)
    return tok, missing


class Stream:
    """Sampler of 128-token training rows, each starting with BOS."""

    def __init__(self, tok, stdlib_train: list[str], n_ctx: int, seed: int) -> None:
        self.tok, self.n_ctx = tok, n_ctx
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.bos = tok.token_to_id(BOS)
        ids = [i for doc in tok.encode_batch(stdlib_train) for i in doc.ids + [self.bos]]
        self.stdlib = np.array(ids, dtype=np.int64)
        self.vocab = tok.get_vocab_size()
        normal = np.arange(1, self.vocab)
        self.small_subset = self.np_rng.choice(normal, size=96, replace=False)
        self.normal = normal
        self.sep = tok.encode("\n\n").ids

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
        if kind in ("ioi1", "docstring1"):  # one example right after BOS, as in evaluation
            maker = corpus.ioi_sentence if kind == "ioi1" else corpus.documented_function
            row = [self.bos] + self.tok.encode(maker(self.rng)).ids + self.sep
            return (row + self.stdlib_row()[1:])[: self.n_ctx]
        maker = {
            "ioi": corpus.ioi_sentence,
            "docstring": corpus.documented_function,
            "ordinary": lambda r: (
                corpus.ordinary_name_text(r) if r.random() < 0.5 else corpus.ordinary_code(r)
            ),
        }[kind]
        return self._pack(maker)

    def batch(self, mix: dict[str, float], batch_size: int) -> torch.Tensor:
        kinds, weights = list(mix), list(mix.values())
        rows = [self.row(k) for k in self.rng.choices(kinds, weights, k=batch_size)]
        return torch.tensor(rows, dtype=torch.long)


PHASE1 = {"repeat_small": 0.6, "stdlib": 0.2, "ioi": 0.1, "ordinary": 0.1}
PHASE2 = {"stdlib": 0.35, "ioi": 0.25, "docstring": 0.15, "repeat": 0.15, "ordinary": 0.10}


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
    cfg = TransformerBridgeConfig.from_dict(dict(cfg_dict))
    model = NativeModel(cfg)
    initialize_native_model(model, cfg, seed=args.seed)
    with torch.no_grad():  # sinusoidal init of the learned positions helps induction form
        pos = torch.arange(args.n_ctx)[:, None]
        freq = torch.exp(-math.log(10000.0) * torch.arange(0, args.d_model, 2) / args.d_model)
        model.pos.weight[:, 0::2] = torch.sin(pos * freq) * 0.5
        model.pos.weight[:, 1::2] = torch.cos(pos * freq) * 0.5
    return model, cfg_dict


def attention_patterns(model, tokens: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits and per-layer attention patterns [batch, head, q, k] of the native model."""
    patterns: list[torch.Tensor] = []
    handles = [
        blk.attn.register_forward_hook(lambda _m, _i, out: patterns.append(out[1].detach()))
        for blk in model.layers
    ]
    try:
        logits = model(tokens)
    finally:
        for h in handles:
            h.remove()
    return logits, patterns


# ---------------------------------------------------------------------- evaluation
@torch.no_grad()
def evaluate(model, stream: Stream, held_ids: np.ndarray, args) -> dict:
    """Behaviour metrics on held-out templates and filler combinations (eval split)."""
    model.eval()
    tok, rng, out = stream.tok, random.Random(1234), {}
    # induction: repeated random tokens, over the phase-1 subset and the full vocabulary
    L = 30
    g = torch.Generator().manual_seed(0)
    small = torch.as_tensor(stream.small_subset)[
        torch.randint(0, len(stream.small_subset), (32, L), generator=g)
    ]
    toks = torch.cat([torch.full((32, 1), stream.bos), small, small], dim=1)
    lp = F.log_softmax(model(toks)[:, :-1], -1).gather(-1, toks[:, 1:, None])[..., 0]
    out["subset_loss_first_half"] = float(-lp[:, 1:L].mean())
    out["subset_loss_repeated_half"] = float(-lp[:, L + 1 :].mean())
    seq = torch.randint(1, stream.vocab, (32, L), generator=g)
    toks = torch.cat([torch.full((32, 1), stream.bos), seq, seq], dim=1)
    logits, pats = attention_patterns(model, toks)
    lp = F.log_softmax(logits[:, :-1], -1).gather(-1, toks[:, 1:, None])[..., 0]
    out["loss_first_half"] = float(-lp[:, 1:L].mean())
    out["loss_repeated_half"] = float(-lp[:, L + 1 :].mean())
    q = torch.arange(L + 1, 2 * L + 1)
    out["induction_scores"] = [
        [round(float(p[:, h, q, q - L + 1].mean()), 3) for h in range(p.shape[1])] for p in pats
    ]
    out["prev_token_scores"] = [
        [round(float(p[:, h, q, q - 1].mean()), 3) for h in range(p.shape[1])] for p in pats
    ]
    # IOI on eval templates and eval name pairs
    correct, diffs = 0, []
    for template in rng.sample(FL.ioi_templates("eval"), 16):
        for _ in range(8):
            io, s = rng.choice(FL.ioi_name_pairs("eval"))
            a, b = (io, s) if rng.random() < 0.5 else (s, io)
            ids = [stream.bos] + tok.encode(template.format(A=a, B=b, S=s)).ids
            lg = model(torch.tensor([ids]))[0, -1]
            d = float(lg[tok.encode(" " + io).ids[0]] - lg[tok.encode(" " + s).ids[0]])
            diffs.append(d)
            correct += d > 0
    out["ioi_accuracy"] = correct / len(diffs)
    out["ioi_logit_diff"] = float(np.mean(diffs))
    # docstring on eval templates and eval parameter triples
    top1, three_way, n = 0, 0, 0
    for template in rng.sample(FL.docstring_templates("eval"), 16):
        for _ in range(4):
            a, b, c = rng.choice(FL.docstring_param_triples("eval"))
            text = template.format(F=rng.choice(FL.FUNCTION_NAMES), A=a, B=b, C=c)
            lg = model(torch.tensor([[stream.bos] + tok.encode(text).ids]))[0, -1]
            cand = [tok.encode(" " + w).ids[0] for w in (a, b, c)]
            top1 += int(lg.argmax()) == cand[2]
            three_way += int(lg[cand].argmax()) == 2
            n += 1
    out["docstring_top1"] = top1 / n
    out["docstring_3way"] = three_way / n
    # held-out stdlib loss
    ids = torch.tensor(held_ids[: 16 * (args.n_ctx - 1)].reshape(16, -1))
    toks = torch.cat([torch.full((16, 1), stream.bos), ids], 1)
    logits = model(toks)
    out["stdlib_heldout_loss"] = float(F.cross_entropy(logits[:, :-1].flatten(0, 1), toks[:, 1:].flatten()))
    model.train()
    return out


# --------------------------------------------------------------------------- export
def export(model, cfg_dict: dict, tok, out_dir: Path, card: dict) -> None:
    from safetensors.torch import save_file
    from transformers import PreTrainedTokenizerFast

    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out_dir / "model.safetensors"))
    (out_dir / "config.json").write_text(
        json.dumps({k: v for k, v in cfg_dict.items() if k != "seed"}, indent=2)
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=BOS, unk_token=BOS)
    fast.save_pretrained(str(out_dir))
    (out_dir / "training_log.json").write_text(json.dumps(card, indent=1))


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=11000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--n-layers", type=int, default=4)
    p.add_argument("--n-heads", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--n-ctx", type=int, default=128)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--max-phase1-steps", type=int, default=4000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--save-every", type=int, default=1000)
    p.add_argument("--smoke", action="store_true", help="tiny stdlib subset, for CI")
    p.add_argument("--init-from", type=Path, default=None, help="continue from this checkpoint (phase 2)")
    p.add_argument(
        "--phase2-mix", default=None, help="e.g. stdlib=0.3,ioi=0.3,docstring=0.2,repeat=0.1,ordinary=0.1"
    )
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    t0 = time.time()
    stdlib_train, stdlib_held = corpus.stdlib_files()
    if args.smoke:
        stdlib_train, stdlib_held = stdlib_train[:40], stdlib_held[:10]
    if args.init_from is not None:  # continue a previous run: its tokenizer and weights
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(args.init_from / "tokenizer.json"))
        added = json.loads((args.init_from / "training_log.json").read_text())["fillers_added_by_hand"]
    else:
        tok, added = train_tokenizer(stdlib_train, rng, args.vocab)
    print(
        f"tokenizer: {tok.get_vocab_size()} tokens ({len(added)} fillers added by hand) in {time.time() - t0:.0f}s",
        flush=True,
    )
    stream = Stream(tok, stdlib_train, args.n_ctx, args.seed)
    held_ids = np.array([i for d in tok.encode_batch(stdlib_held) for i in d.ids], dtype=np.int64)
    model, cfg_dict = build_model(tok.get_vocab_size(), args)
    history: list[dict] = []  # the runs this one continues, oldest first
    if args.init_from is not None:
        previous = json.loads((args.init_from / "training_log.json").read_text())
        history = previous.pop("history", []) + [previous]
    phase2 = dict(PHASE2)
    if args.phase2_mix:
        phase2 = {k: float(v) for k, v in (item.split("=") for item in args.phase2_mix.split(","))}
    if args.init_from is not None:
        from safetensors.torch import load_file

        state = load_file(str(args.init_from / "model.safetensors"))
        model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
    print(
        f"model: {sum(p.numel() for p in model.parameters()):,} parameters; stdlib {len(stream.stdlib):,} tokens",
        flush=True,
    )

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            min(1.0, (s + 1) / args.warmup)
            * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / args.steps))))
        ),
    )
    phase, switched_at, log = (2, 0, []) if args.init_from is not None else (1, None, [])
    for step in range(1, args.steps + 1):
        x = stream.batch(PHASE1 if phase == 1 else phase2, args.batch_size)
        loss = F.cross_entropy(model(x)[:, :-1].flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % args.eval_every == 0 or step == args.steps:
            m = evaluate(model, stream, held_ids, args)
            # Phase 2 once induction works on the phase-1 tokens (or, as a fallback, late).
            formed = m["subset_loss_repeated_half"] < 0.5 * m["subset_loss_first_half"]
            if phase == 1 and (formed or step >= args.max_phase1_steps):
                phase, switched_at = 2, step
            m.update(
                step=step, phase=phase, train_loss=float(loss), minutes=round((time.time() - t0) / 60, 1)
            )
            log.append(m)
            best_ind = max(max(r) for r in m["induction_scores"])
            print(
                f"step {step} phase {phase} loss {float(loss):.3f} rep {m['loss_repeated_half']:.2f}/{m['loss_first_half']:.2f} "
                f"ind {best_ind:.2f} ioi {m['ioi_accuracy']:.2f} ({m['ioi_logit_diff']:.2f}) "
                f"doc {m['docstring_top1']:.2f}/{m['docstring_3way']:.2f} stdlib {m['stdlib_heldout_loss']:.2f} "
                f"[{m['minutes']} min]",
                flush=True,
            )
        if step % args.save_every == 0 or step == args.steps:
            card = dict(args={k: str(v) for k, v in vars(args).items()}, phase_switch_step=switched_at,
                        fillers_added_by_hand=added, log=log, torch=torch.__version__, history=history)  # fmt: skip
            export(model, cfg_dict, tok, args.out, card)
    print(f"done in {(time.time() - t0) / 60:.1f} min -> {args.out}", flush=True)


if __name__ == "__main__":
    main()
