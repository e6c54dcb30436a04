"""The speed benchmarks' own accounting (issue 32): FLOPs counted from the replay's calls, and
the main job's profile split into stages from py-spy's stacks."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_speed import FlopCount  # noqa: E402
from profile_main_job import OTHER, STAGES, WORKERS, parse_samples  # noqa: E402

from circuit_gym.circuits import Circuit, CircuitRunner  # noqa: E402
from circuit_gym.tasks import get_task  # noqa: E402


def test_flop_count_of_a_plain_pass_matches_the_formula(tiny_model):
    task = get_task("ioi")
    runner = CircuitRunner.for_task(
        tiny_model, task, task.batch(tiny_model, "test", 3, seed=0), replay="plain"
    )
    cfg = tiny_model.cfg
    batch, seq = runner.engine.ev.tokens.shape
    d, h, e, n_layers = int(cfg.d_model), int(cfg.n_heads), int(cfg.d_head), int(cfg.n_layers)
    circuits = [Circuit.of([0, 5], 4, 4), Circuit.of([3], 4, 4)]  # both ablate a layer-0 head: start 0
    with FlopCount() as count:
        runner.metric(circuits)
    rows = len(circuits) * batch
    per_layer = (
        2 * rows * seq * d * 3 * h * e + 2 * rows * seq * h * e * d + 4 * rows * h * e * seq * (seq + 1) / 2
    )
    assert count.flops == pytest.approx(n_layers * per_layer)
    assert count.attention_flops == pytest.approx(n_layers * 4 * rows * h * e * seq * (seq + 1) / 2)
    with FlopCount() as masked:
        CircuitRunner(runner.engine, "masked").metric(circuits)
    assert 0 < masked.flops < count.flops  # the masked replay computes only the kept heads
    assert FlopCount().flops == 0 and np.isfinite(masked.flops)


def test_samples_are_split_by_the_stage_run_all_was_in(tmp_path):
    job = 'process 1:"python job"'
    raw = tmp_path / "samples.txt"
    raw.write_text(
        "\n".join([
            f"{job};main (cli.py:10);run (circuit_gym/baselines/run_all.py:85);train (ppo.py:3);step (env.py:9) 30",
            f"{job};main (cli.py:10);run (circuit_gym/baselines/run_all.py:99);wrapper (benchmarks/profile_main_job.py:7);score_runs (track.py:5);attend (fast_blocks.py:80) 10",
            f'{job};process 2:"spawn";_process_worker (concurrent/futures/process.py:261);sweep (engine.py:1) 20',
            f"{job};main (cli.py:10);load_model (loading.py:4) 5",
            "not a sample line",
        ])
    )  # fmt: skip
    stages, functions = parse_samples(raw)
    assert stages == {STAGES["train"]: 30, STAGES["score_runs"]: 10, WORKERS: 20, OTHER: 5}
    assert functions[STAGES["score_runs"]] == {"attend (fast_blocks.py)": 10}
    assert functions[WORKERS] == {"sweep (engine.py)": 20}


def test_every_profiled_stage_is_a_function_the_main_job_calls():
    """The profile wraps ``run_all``'s functions by name: a rename there must fail here, not
    half an hour into ``profile_main_job.py --full``."""
    import inspect

    from profile_main_job import CIRCUIT_TRACK_STAGES, RUN_ALL_STAGES

    from circuit_gym.baselines import circuit_building_track, run_all
    from circuit_gym.baselines.fixed_policy import FixedPolicy

    source = inspect.getsource(run_all.run)
    for name in RUN_ALL_STAGES:
        assert callable(getattr(run_all, name, None)), f"run_all has no function {name!r}"
        assert f"{name}(" in source or f"partial({name}" in source, f"run_all.run never calls {name}"
    for name in CIRCUIT_TRACK_STAGES:
        assert callable(getattr(circuit_building_track, name, None)), name
        assert f"circuit_building_track.{name}(" in source, f"run_all.run never calls {name}"
    assert "FixedPolicy.fit(" in source and callable(FixedPolicy.fit)
    assert set(STAGES) == {*RUN_ALL_STAGES, *CIRCUIT_TRACK_STAGES, "fit"}
