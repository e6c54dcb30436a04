"""benchmarks/speed_targets.py reads each sub-benchmark's result file into figures beside their
targets: fed synthetic result files, a value just past a target is missed, the estimate error is
the hand-computed share, and a missing or failed source is a named failure, never a figure met."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import speed_targets as st  # noqa: E402

COMMANDS = st.commands_of(Path("sources"), quick=False)


def _write(folder: Path, name: str, data: dict) -> None:
    (folder / name).write_text(json.dumps(data))


def _by_name(figures: list[dict], start: str) -> dict:
    (found,) = [f for f in figures if f["figure"].startswith(start)]
    return found


def _score_run(wall: float, line: str, returncode: int = 0, ansi: int = 0) -> dict:
    return {"wall_s": wall, "returncode": returncode, "log": f"loading\n{line}\ndone\n", "ansi": ansi}


def _score_record(cold: dict, warm: dict, ansi: int = 0) -> dict:
    return {"python": "python", "cold": cold, "warm": warm, "ansi_codes": ansi,
            "doctor": {"returncode": 0, "missing": [], "model_lines": 12}}  # fmt: skip


def test_a_value_just_past_its_target_is_missed_and_one_on_it_is_met(tmp_path):
    _write(
        tmp_path, "main_job.json", {"job": "v8", "scale": "full", "wall_seconds": 597.0, "startup_cpu": 3.01}
    )
    _write(tmp_path, "planted_reset.json", {"timings": {
        st.PLANTED_RESETS["single head"]: {"wall_median": 0.5, "cpu_median": 0.4, "seeds": 10},
        st.PLANTED_RESETS["circuit"]: {"wall_median": 0.5001, "cpu_median": 0.4, "seeds": 10}}})  # fmt: skip
    _write(tmp_path, "attention.json", {"sweeps": [
        {"task": "ioi", "matmul_share_of_1_thread_matmul": 0.6, "sdpa_share_of_1_thread_matmul": 0.45},
        {"task": "docstring", "matmul_share_of_1_thread_matmul": 0.4999, "sdpa_share_of_1_thread_matmul": 0.7}]})  # fmt: skip
    figures, failures = st.build_figures(["main_job", "planted", "attention"], tmp_path, COMMANDS)
    assert failures == []
    main_job = _by_name(figures, "main job")
    assert (main_job["value"], main_job["met"]) == (pytest.approx(600.01), False)  # the imports count too
    assert _by_name(figures, "planted reset of a fresh seed, single head")["met"] is True
    assert _by_name(figures, "planted reset of a fresh seed, circuit")["met"] is False
    matmul = _by_name(figures, "exact sweep, share of the 1-thread matmul rate (matmul")
    assert (matmul["value"], matmul["met"]) == (0.4999, False)  # the smallest task decides
    assert _by_name(figures, "exact sweep, share of the 1-thread matmul rate (SDPA")["value"] == 0.45


def test_ppo_target_is_three_times_the_rate_before_issue_46(tmp_path):
    row = {"policy_share": 0.5, "env_share": 0.4}
    _write(tmp_path, "ppo.json", {"rows": [{"stage": "single_head", "steps_per_s": 29.9, **row},
                                           {"stage": "circuit", "steps_per_s": 12.0, **row}]})  # fmt: skip
    _write(tmp_path, "ppo_before_46.json", {"rows": [{"stage": "single_head", "steps_per_s": 10.0, **row},
                                                     {"stage": "circuit", "steps_per_s": 4.0, **row}]})  # fmt: skip
    figures, failures = st.build_figures(["ppo"], tmp_path, COMMANDS)
    assert failures == []
    single, circuit = _by_name(figures, "PPO single_head"), _by_name(figures, "PPO circuit")
    assert (single["target"], single["met"]) == (30.0, False)
    assert (circuit["target"], circuit["met"]) == (12.0, True)


def test_estimate_error_is_the_share_of_the_measured_time(tmp_path):
    # 288 episodes, "about 3 min" printed = 180 s, the model's 288 x 0.6 = 172.8 s; wall 240 s
    line = "scoring 288 episodes: about 3 min on a cold cache (0.6 s per episode, measured: x; 0.6 s cold, 0.2 s warm)"
    parsed = st.parse_estimate(f"noise\n{line}\nmore")
    assert (parsed["episodes"], parsed["printed_s"]) == (288, 180.0)
    assert parsed["model_s"] == pytest.approx(172.8)
    assert st.estimate_error(180.0, 240.0) == pytest.approx(0.25)
    warm = "scoring 288 episodes: about 58 s on a warm cache (0.2 s per episode, measured)"
    _write(tmp_path, "score.json", _score_record(_score_run(240.0, line), _score_run(40.0, warm), ansi=3))
    figures, failures = st.build_figures(["score"], tmp_path, COMMANDS)
    assert failures == []
    cold = _by_name(figures, "the score's printed estimate, cold")
    assert (cold["value"], cold["met"]) == (pytest.approx(0.25), True)
    assert cold["model_error"] == pytest.approx(abs(172.8 - 240) / 240)
    warm_fig = _by_name(figures, "the score's printed estimate, warm")
    assert (warm_fig["value"], warm_fig["met"]) == (pytest.approx(18 / 40), False)
    assert _by_name(figures, "a submission scored")["met"] is False  # 240 s > 180 s
    assert _by_name(figures, "cursor/ANSI")["met"] is False


def test_a_missing_or_failed_source_is_a_named_failure_not_a_figure(tmp_path):
    _write(tmp_path, "ppo.json", {"rows": [{"stage": "single_head", "steps_per_s": 99.0}]})
    line = "scoring 4 episodes: about 20 s on a cold cache (5.0 s per episode"
    _write(tmp_path, "score.json", _score_record(_score_run(1.0, line, returncode=2), _score_run(1.0, line)))
    figures, failures = st.build_figures(["edges", "ppo", "score"], tmp_path, COMMANDS)
    assert figures == []
    errors = {f["part"]: f["error"] for f in failures}
    assert "edges.json is missing" in errors["edges"]
    assert "ppo_before_46.json is missing" in errors["ppo"]
    assert "cold score exited 2" in errors["score"]
    with pytest.raises(st.MissingSourceError, match="no 'scoring N episodes"):
        st.parse_estimate("scoring 288 episodes; no committed reference measured it, so no estimate")
    assert st.met(None, 1.0, "<=") is None


def test_a_part_whose_run_failed_is_not_read_from_an_older_file(tmp_path):
    # an older run's file sits in the sources folder with a figure that would be met
    _write(
        tmp_path, "main_job.json", {"job": "v8", "scale": "full", "wall_seconds": 100.0, "startup_cpu": 1.0}
    )
    figures, failures = st.build_figures(
        ["main_job"], tmp_path, COMMANDS, failed={"main_job": "CalledProcessError"}
    )
    assert figures == [] and failures == [{"part": "main_job", "error": "CalledProcessError"}]
    figures, failures = st.build_figures(
        ["main_job"], tmp_path, COMMANDS
    )  # the same file, the run did not fail
    assert failures == [] and figures[0]["met"] is True and figures[0]["key"] == "main_job-0"


def test_render_is_met_at_30_seconds_and_a_failed_render_is_a_named_failure(tmp_path):
    _write(tmp_path, "render.json", {"wall_s": 30.0001, "returncode": 0, "log": ""})
    figures, failures = st.build_figures(["render"], tmp_path, COMMANDS)
    assert failures == [] and _by_name(figures, "leaderboard render")["met"] is False
    _write(tmp_path, "render.json", {"wall_s": 29.9, "returncode": 0, "log": ""})
    assert _by_name(st.build_figures(["render"], tmp_path, COMMANDS)[0], "leaderboard render")["met"] is True
    _write(tmp_path, "render.json", {"wall_s": 3.0, "returncode": 1, "log": "Traceback"})
    figures, failures = st.build_figures(["render"], tmp_path, COMMANDS)
    assert figures == [] and failures[0]["part"] == "render" and "exited 1" in failures[0]["error"]
