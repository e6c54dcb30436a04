"""``circuit-gym doctor``: what a bug report needs, in one printout.

Versions (Python, circuit_gym and its main dependencies), the compute device torch sees (the
CPU model and the kernel set torch picked for it, which decide the last bits of float results),
the embedded model files where the loaders read them (``embedded_dir``; sizes and the SHA-256
of their weights), where GPT-2's weights would come from, the disk cache's location and size,
and the settings read from the environment. Reads only: it loads no model and opens no network
connection.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
from importlib import metadata
from pathlib import Path

from circuit_gym.machine import cpu_model

DEPENDENCIES = ("torch", "transformer-lens", "transformers", "gymnasium", "pettingzoo", "tianshou", "numpy",
                "tokenizers", "safetensors", "tqdm", "matplotlib", "scipy")  # fmt: skip
ENV_VARS = ("CIRCUIT_GYM_CACHE", "CIRCUIT_GYM_THREADS", "CIRCUIT_GYM_GPT2_PATH", "CIRCUIT_GYM_PROGRESS",
            "CIRCUIT_GYM_PROGRESS_DELAY", "HF_HUB_OFFLINE", "HF_HOME")  # fmt: skip


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _device() -> dict:
    import torch

    cuda = torch.cuda.is_available()
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    return {
        # what load_model will set (see circuit_gym.models.set_threads), not torch's own default
        "torch_threads": os.environ.get("CIRCUIT_GYM_THREADS") or "1", "cuda_available": cuda,
        "cuda_devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "cuda_version": torch.version.cuda, "mps_available": mps, "cpu_count": os.cpu_count(),
        "cpu": cpu_model(), "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }  # fmt: skip


def _models() -> dict:
    from circuit_gym.embedded import EMBEDDED
    from circuit_gym.models.loading import embedded_dir

    out = {}
    for name in EMBEDDED:
        directory = embedded_dir(name)  # where load_model reads it (zoo members: models/zoo/NAME)
        files = sorted(p for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []
        weights = directory / "model.safetensors"
        out[name] = {
            "directory": str(directory), "files": {p.name: p.stat().st_size for p in files},
            "weights_sha256": _sha256(weights) if weights.is_file() else None,
        }  # fmt: skip
    return out


def _cache() -> dict:
    from circuit_gym.ablation.cache import cache_dir

    directory = cache_dir()
    files = list(directory.glob("*.json")) if directory.is_dir() else []
    return {"directory": str(directory), "exists": directory.is_dir(), "files": len(files),
            "bytes": sum(p.stat().st_size for p in files)}  # fmt: skip


def _environment_ids() -> dict:
    """How many IDs are registered, current and in all, per family (``circuit-gym list``)."""
    from circuit_gym.envs.registration import FAMILIES, entries

    every = entries()
    by_family = {name: {"current": sum(e.current for e in every if e.family.name == name),
                        "all": sum(e.family.name == name for e in every)} for name in FAMILIES}  # fmt: skip
    return {
        "current": sum(f["current"] for f in by_family.values()),
        "all": len(every),
        "by_family": by_family,
    }


def report() -> dict:
    """Everything the printout shows, as a dictionary."""
    import circuit_gym
    from circuit_gym.progress import progress_mode

    return {
        "circuit_gym": {"version": circuit_gym.__version__, "location": str(Path(circuit_gym.__file__).parent)},
        "python": {"version": sys.version.split()[0], "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "platform": platform.platform(),
        "dependencies": {d: _version(d) for d in DEPENDENCIES},
        "device": _device(),
        "embedded_models": _models(),
        "gpt2": os.environ.get("CIRCUIT_GYM_GPT2_PATH") or "not set: load_model('gpt2') tries the Hugging Face "
                "cache, then the hub (or pass --model-path)",
        "cache": _cache(),
        "environment": {v: os.environ.get(v) for v in ENV_VARS},
        "progress": progress_mode(),
        "environment_ids": _environment_ids(),
    }  # fmt: skip


def _format_ids(ids: dict) -> str:
    from circuit_gym.envs.registration import FAMILIES

    families = ", ".join(
        f"{n['current']} {FAMILIES[name].title}" for name, n in ids["by_family"].items() if n["current"]
    )
    return (f"registered environment IDs: {ids['current']} current ({families}), {ids['all']} with the older "
            f"versions (circuit-gym list [--all])")  # fmt: skip


def format_report(r: dict) -> str:
    """The printout of :func:`report`."""
    d, c = r["device"], r["cache"]
    lines = [
        f"circuit_gym {r['circuit_gym']['version']} ({r['circuit_gym']['location']})",
        f"python {r['python']['version']} ({r['python']['implementation']}, {r['python']['executable']})",
        f"platform {r['platform']}",
        "dependencies: " + ", ".join(f"{k} {v}" for k, v in r["dependencies"].items()),
        f"device: {d['cpu_count']} CPUs ({d['cpu']}, torch kernels {d['torch_cpu_capability']}), torch threads for models {d['torch_threads']}; CUDA "
        + (f"{d['cuda_version']}: {', '.join(d['cuda_devices'])}" if d["cuda_available"] else "not available")
        + f"; MPS {'available' if d['mps_available'] else 'not available'}",
        "embedded models:",
    ]
    for name, m in r["embedded_models"].items():
        size = sum(m["files"].values())
        sha = (m["weights_sha256"] or "missing")[:16]
        lines.append(f"  {name}: {m['directory']} ({len(m['files'])} files, {size / 1e6:.1f} MB; "
                     f"model.safetensors sha256 {sha}...)")  # fmt: skip
    lines += [
        f"gpt2 weights: {r['gpt2']}",
        f"cache: {c['directory']} ({c['files']} files, {c['bytes'] / 1e6:.1f} MB)" if c["exists"]
        else f"cache: {c['directory']} (not created yet)",
        "environment: " + (", ".join(f"{k}={v}" for k, v in r["environment"].items() if v is not None) or "none of "
                           + ", ".join(r["environment"]) + " is set"),
        f"progress: {r['progress']} (bars in a terminal, plain lines in a log; CIRCUIT_GYM_PROGRESS=0 turns both off)",
        _format_ids(r["environment_ids"]),
    ]  # fmt: skip
    return "\n".join(lines)
