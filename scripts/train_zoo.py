"""Train the model zoo (``circuit_gym.models.zoo_recipe``): resumable, one process per member.

    python scripts/train_zoo.py --jobs 2                      # every public member, 2 at a time
    python scripts/train_zoo.py --members zoo1 zoo3           # some of them
    python scripts/train_zoo.py --generation v2 --jobs 2      # zoo v2 (the self-repair knob drawn per member)
    python scripts/train_zoo.py --pilot                       # issue 41's self-repair pilot (runs/zoo_pilot)
    python scripts/train_zoo.py --private-seed-file SECRET.json --out-root /somewhere/private
                                                              # the maintainer's private model

The shared tokenizer is trained once (seed 0, the zoo recipe's text) into
``WORK/tokenizer.json``. Each member trains with ``scripts/train_toy_model.py`` (one torch
thread, log in ``WORK/<name>/train.log``) and is exported to ``OUT_ROOT/<name>``; running the
same command again resumes every unfinished member from its last checkpoint and skips the
finished ones. The private model's weights and seed must stay outside the repository.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from circuit_gym.models.zoo_recipe import (  # noqa: E402
    GENERATIONS,
    VOCAB,
    ZooMember,
    pilot_members,
    private_member,
    public_members,
)

TRAIN_SCRIPT = ROOT / "scripts" / "train_toy_model.py"


def shared_tokenizer(work: Path, vocab: int = VOCAB) -> Path:
    """The zoo's one tokenizer, trained once (seed 0) and kept in ``work``."""
    path = work / "tokenizer.json"
    if not path.exists():
        from circuit_gym.models.training import train_tokenizer
        from circuit_gym.tasks import corpus

        stdlib_train, _ = corpus.stdlib_files()
        t0 = time.time()
        tok = train_tokenizer(stdlib_train, random.Random(0), vocab, "zoo")
        work.mkdir(parents=True, exist_ok=True)
        tok.save(str(path))
        print(
            f"shared tokenizer: {tok.get_vocab_size()} tokens in {time.time() - t0:.0f} s -> {path}",
            flush=True,
        )
    return path


def in_repo(path: Path) -> str:
    """A path as the training log records it: relative to the repository where it lies inside it
    (the members train with the repository as working directory), so committed logs name no
    machine's absolute path; the private model's paths, outside it, stay as given."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if ROOT in resolved.parents else str(path)


def finished(out: Path) -> bool:
    return (out / "model.safetensors").exists() and (out / "training_log.json").exists()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--members", nargs="*", default=None, help="names of public members (default: all)")
    p.add_argument("--jobs", type=int, default=2, help="members trained at once (one thread each)")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "zoo", help="checkpoints, logs, tokenizer")
    p.add_argument("--out-root", type=Path, default=ROOT / "circuit_gym" / "models" / "zoo")
    p.add_argument(
        "--generation",
        choices=sorted(GENERATIONS),
        default="v1",
        help="which zoo generation's members (and private draw) to train",
    )
    p.add_argument(
        "--pilot",
        action="store_true",
        help="train the self-repair pilot's members (default out-root: runs/zoo_pilot/models)",
    )
    p.add_argument("--private-seed-file", type=Path, default=None,
                   help='JSON {"seed": N} kept outside the repository: trains the private model only')  # fmt: skip
    args = p.parse_args(argv)

    if args.pilot:
        members = pilot_members()
        if args.out_root == ROOT / "circuit_gym" / "models" / "zoo":
            args.out_root = ROOT / "runs" / "zoo_pilot" / "models"
    elif args.private_seed_file is not None:
        secret = json.loads(args.private_seed_file.read_text())["seed"]
        members: tuple[ZooMember, ...] = (private_member(int(secret), GENERATIONS[args.generation]),)
        if ROOT in args.out_root.resolve().parents or args.out_root.resolve() == ROOT:
            raise SystemExit("the private model must be written outside the repository (--out-root)")
    else:
        known = {m.name: m for m in public_members(generation=GENERATIONS[args.generation])}
        unknown = sorted(set(args.members or ()) - set(known))
        if unknown:
            raise SystemExit(f"unknown zoo members {unknown}; the zoo is {sorted(known)}")
        members = tuple(known[n] for n in args.members) if args.members else tuple(known.values())
    tokenizer = shared_tokenizer(args.work)
    queue = [m for m in members if not finished(args.out_root / m.name)]
    for m in members:
        if m not in queue:
            print(f"{m.name}: finished ({args.out_root / m.name})", flush=True)
    running: dict[str, subprocess.Popen] = {}
    t0 = time.time()
    while queue or running:
        while queue and len(running) < args.jobs:
            m = queue.pop(0)
            work = args.work / m.name
            work.mkdir(parents=True, exist_ok=True)
            cmd = [
                sys.executable,
                str(TRAIN_SCRIPT),
                *m.train_args(in_repo(args.out_root / m.name), in_repo(work), in_repo(tokenizer)),
            ]
            log = open(work / "train.log", "a")  # noqa: SIM115  (closed when the process ends)
            log.write(f"# {' '.join(cmd)}\n")
            log.flush()
            running[m.name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
            # The private model's draw is as secret as its seed: a terminal or CI log must not show it.
            draw = (
                "draw kept private"
                if args.private_seed_file
                else f"seed {m.seed}, identity layers {m.identity_layers}, head dropout {m.head_dropout}"
                f", top-head dropout {m.top_head_dropout}"
                + (f", MLP width {m.d_mlp}" if m.d_mlp else "")
                + (f", backup objective {m.backup}" if m.backup else "")
            )
            print(f"{m.name}: training ({draw}); log {work / 'train.log'}", flush=True)
        time.sleep(5)
        for name, proc in list(running.items()):
            if proc.poll() is not None:
                del running[name]
                status = "done" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
                print(f"{name}: {status} after {(time.time() - t0) / 60:.1f} min", flush=True)
    print(f"zoo finished in {(time.time() - t0) / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
