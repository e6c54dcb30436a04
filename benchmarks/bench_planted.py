"""How long a planted model takes to make: generating the weights, and generate + write + load.

Per seed (5 seeds, medians), CPU seconds (``time.process_time``: what this process computed,
less sensitive to other jobs on the machine than wall time) and wall seconds, beside loading
the embedded ``toy`` model through the same loader as a reference measured in the same run.

    python benchmarks/bench_planted.py --out benchmarks/results/planted_generation.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from circuit_gym.models.loading import load_model
from circuit_gym.models.planted import generator as G


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    os.environ["CIRCUIT_GYM_CACHE"] = tempfile.mkdtemp()  # nothing cached: every model is new
    G.generate(0)  # warm up: imports, the tokenizer's ids
    load_model("toy")
    steps = {
        "generate (weights and truth)": G.generate,
        "make_planted_model (generate, write, load_model)": G.make_planted_model,
        "load_model('toy') (reference)": lambda seed: load_model("toy"),
    }
    rows = {}
    for name, run in steps.items():
        cpu, wall = [], []
        for seed in range(1, 6):
            c, w = time.process_time(), time.perf_counter()
            run(seed)
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - w)
        rows[name] = {"cpu_s_median": sorted(cpu)[2], "wall_s_median": sorted(wall)[2]}
        print(name, rows[name], flush=True)
    args.out.write_text(json.dumps({"rows": rows, "loadavg": os.getloadavg()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
