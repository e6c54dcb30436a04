"""What decides the last bits of a float result on this machine: the CPU, the kernels torch
picks for it, the thread count and the numeric libraries' versions.

float32 kernels round differently from one CPU to another (vector width, BLAS path, threads),
so numbers reproduce bit for bit only where these match; a result file records them beside its
scores (``circuit_gym/leaderboard/provenance.py``) and ``circuit-gym doctor`` prints them.
"""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name (Linux: ``/proc/cpuinfo``; elsewhere what ``platform`` knows)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def numeric_platform() -> dict:
    """``{cpu, machine, torch_cpu_capability, torch_threads, torch, numpy}`` for this process."""
    import torch

    return {
        "cpu": cpu_model(),
        "machine": platform.machine(),
        # the kernel set torch chose (AVX512, AVX2, DEFAULT...; ATEN_CPU_CAPABILITY overrides it)
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "numpy": metadata.version("numpy"),
    }
