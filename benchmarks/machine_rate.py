"""The machine's own matrix-product rate at the 144-head model's shapes, for the benchmarks' shares.

``torch.addmm`` on the products a stacked pass runs (144 copies of an 8-prompt, 16-token batch:
Q/K/V, output; the unembedding of one position per row), on 1 and 2 threads, best of
``repeats`` per shape; ``gflops`` is the FLOP-weighted rate over the three (total FLOPs over
total best times). Imported by ``bench_speed.py`` and ``profile_main_job.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from timing import best_of


def matmul_rates(cfg, repeats: int = 5, threads: tuple[int, ...] = (1, 2),
                 clock: Callable[[], float] = time.perf_counter) -> dict:  # fmt: skip
    """GFLOP/s of ``torch.addmm`` at the shapes of the model configuration ``cfg``; ``clock``:
    wall time by default, ``time.process_time`` for this process's CPU time (a loaded machine)."""
    d, h, e, v = int(cfg.d_model), int(cfg.n_heads), int(cfg.d_head), int(cfg.d_vocab)
    rows = 144 * 8 * 16
    shapes = {"qkv": (rows, d, 3 * h * e), "output": (rows, h * e, d), "unembed": (144 * 8, d, v)}
    out: dict = {"shapes_m_k_n": {k: list(s) for k, s in shapes.items()}}
    previous = torch.get_num_threads()
    try:
        for n_threads in threads:
            torch.set_num_threads(n_threads)
            flops, seconds, per = 0.0, 0.0, {}
            for name, (m, k, n) in shapes.items():
                a, b, c = torch.randn(m, k), torch.randn(k, n), torch.randn(n)
                torch.addmm(c, a, b)  # warm-up
                best, _ = best_of(lambda a=a, b=b, c=c: torch.addmm(c, a, b), repeats, clock)
                per[name] = 2.0 * m * k * n / best / 1e9
                flops, seconds = flops + 2.0 * m * k * n, seconds + best
            out[f"{n_threads}_thread"] = {"per_shape_gflops": per, "gflops": flops / seconds / 1e9}
    finally:
        torch.set_num_threads(previous)
    return out


def load_average() -> list[float]:
    """The 1, 5 and 15-minute load averages (the machine is shared)."""
    with open("/proc/loadavg") as fh:
        return [float(x) for x in fh.read().split()[:3]]
