"""circuit_gym.baselines.transfer_training: the process pool and the copy of finished runs (no training)."""

import json
import sys

from circuit_gym.baselines.transfer_training import COPIED, check_train_set, copy_and_record, run_jobs


def test_every_job_runs_in_its_own_process_with_its_log(tmp_path):
    def command(track, seed):
        return [sys.executable, "-c", f"print('{track}', {seed})"]

    run_jobs([("ppo", 0), ("ppo", 1), ("circuit_ppo", 0)], command, tmp_path, workers=2)
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert logs == ["circuit_ppo_seed0.log", "ppo_seed0.log", "ppo_seed1.log"]
    assert (tmp_path / "logs" / "ppo_seed1.log").read_text().strip() == "ppo 1"


def test_only_finished_runs_are_copied_and_recorded(tmp_path):
    check_train_set()
    out, docs = tmp_path / "runs", tmp_path / "docs"
    run = out / "ppo" / "seed0"
    run.mkdir(parents=True)
    for name in COPIED:
        (run / name).write_text("{}")
    summary = {
        "best_selection_recovery": 0.5,
        "warm_up_seconds": 1.04,
        "train_seconds": 2.0,
        "resumed_after_epochs": 0,
    }
    (run / "train_summary.json").write_text(json.dumps(summary))
    lines = copy_and_record([("ppo", 0), ("ppo", 1)], out, docs, "here")
    assert lines[0].startswith("copied ppo seed 0") and lines[1] == f"ppo seed 1: not finished in {out}"
    assert sorted(p.name for p in (docs / "ppo" / "seed0").iterdir()) == sorted(COPIED)
    recorded = json.loads((docs / "training.json").read_text())["runs"]
    assert recorded == {"ppo/seed0": {"selection_score": 0.5, "warm_up_seconds": 1.0, "train_seconds": 2.0,
                                      "resumed_after_epochs": 0, "machine": "here"}}  # fmt: skip


def test_every_version_trains_on_exactly_its_training_models():
    """Each benchmark row's model set is its training models, and a run's config trains on it (a
    version trained on another's models, or on a held-out member, would fail here)."""
    from circuit_gym.baselines.transfer_training import config_of
    from circuit_gym.benchmark import TRANSFER_BENCHMARKS
    from circuit_gym.embedded import model_set

    for version, bench in TRANSFER_BENCHMARKS.items():
        check_train_set(version)
        models = model_set(config_of("ppo", 0, "cpu", "causal", version).model)
        assert models == bench.train_models and not set(models) & set(bench.held_out_models)
