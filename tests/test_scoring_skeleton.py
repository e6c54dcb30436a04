"""The one scorer skeleton (circuit_gym/leaderboard/scoring.py) on a made-up track: no model, no
environment, seconds. What every track relies on: the public parts in order, a sample as a
prefix of them, the private parts after the public ones and inside their scope, each part's own
environment closed, a policy failure a failure record, and the content hash over the result."""

from __future__ import annotations

import json

import pytest

from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.scoring import Part, TrackRun, sample_parts, score_track
from circuit_gym.policy import InvalidScoresError


class _Env:
    def __init__(self, log: list, label: str) -> None:
        self.log, self.label = log, label

    def close(self) -> None:
        self.log.append(("closed", self.label))


class _Model:
    class circuit_gym_info:  # noqa: N801  (the attribute the provenance reads)
        name, weights_hash = "made-up", "0" * 64


class _Run(TrackRun):
    """Two public parts (2 and 3 episodes) and an other-seeds part; one private part."""

    name = "made-up"

    def __init__(self, fail_at: tuple[str, int] | None = None) -> None:
        self.log: list = []
        self.fail_at = fail_at

    def builtins(self):
        return ("echo",)

    def builtin_player(self, name):
        return name

    def _part(self, label, jobs, **kwargs) -> Part:
        def play(env, who):
            def one(task, seed, detailed=True):
                if (task, seed) == self.fail_at:
                    raise InvalidScoresError("no scores")
                self.log.append(("played", env.label, task, seed))
                return {"who": who, "task": task, "seed": seed, "detailed": detailed}

            return one

        return Part(label, jobs, lambda jobs: _Env(self.log, label), play, **kwargs)

    def parts(self, sample):
        return [self._part("a", (("t1", 0), ("t1", 1))), self._part("b", (("t2", 0), ("t2", 1), ("t2", 2))),
                self._part("other", (("t1", 9),), detailed=False)]  # fmt: skip

    def private_parts(self, seeds):
        def scope():
            from contextlib import contextmanager

            @contextmanager
            def entered():
                self.log.append(("scope", "in"))
                yield
                self.log.append(("scope", "out"))

            return entered()

        return [self._part("private", tuple(("t1", s) for s in seeds), scope=scope)]

    def scores(self, main, other):
        return {
            "main": [(r["task"], r["seed"]) for r in main],
            "other": [(r["task"], r["seed"]) for r in other],
        }

    def private_record(self, hidden):
        return {"n_seeds": len(hidden), "scores": {"cpr": sum(r["seed"] for r in hidden) / len(hidden)}}

    def definition(self):
        return {"benchmark_version": "made-up-v0", "track": self.name}

    def model(self):
        return _Model


def test_sample_parts_is_a_prefix_of_the_public_episodes_in_scoring_order():
    parts = _Run().parts(sample=True)
    assert [p.jobs for p in sample_parts(parts, 3)] == [(("t1", 0), ("t1", 1)), (("t2", 0),)]
    assert [p.jobs for p in sample_parts(parts, 2)] == [(("t1", 0), ("t1", 1))]
    for wrong in (0, 6):  # the other seeds' part is never sampled: 5 episodes at most
        with pytest.raises(ValueError, match="between 1 and 5"):
            sample_parts(parts, wrong)


def test_a_full_run_plays_public_then_private_parts_each_on_its_closed_environment(tmp_path):
    seeds = tmp_path / "secret" / "seeds.json"
    seeds.parent.mkdir()
    seeds.write_text(json.dumps([7, 3]))
    run = _Run()
    result = score_track(run, "entry", builtin_name="echo", private_seeds=seeds)
    assert result["status"] == "scored" and result["track"] == "made-up"
    assert result["scores"]["main"] == [["t1", 0], ["t1", 1], ["t2", 0], ["t2", 1], ["t2", 2]]
    assert result["scores"]["other"] == [["t1", 9]]
    assert result["private"]["n_seeds"] == 2 and result["private"]["scores"]["cpr"] == 5.0
    assert len(result["private"]["seed_file_sha256"]) == 64
    assert set(result["private"]) == {"seed_file_sha256", "n_seeds", "scores"}  # summaries, never a seed
    assert result["provenance"]["policy"] == "builtin:echo" and result["provenance"]["white_box"] is True
    assert result["content_hash"] == content_hash(result)
    # every part's environment closed after its episodes; the private part inside its scope
    order = [e for e in run.log if e[0] in ("closed", "scope")]
    assert order == [("closed", "a"), ("closed", "b"), ("closed", "other"), ("scope", "in"),
                     ("closed", "private"), ("scope", "out")]  # fmt: skip


def test_a_sample_keeps_the_prefix_rows_and_a_policy_failure_is_a_record():
    sample = score_track(_Run(), "entry", builtin_name="echo", sample=3)
    assert sample["status"] == "sample"
    assert [(r["task"], r["seed"]) for r in sample["scores"]["episodes"]] == [("t1", 0), ("t1", 1), ("t2", 0)]
    run = _Run(fail_at=("t2", 1))
    failed = score_track(run, "entry", builtin_name="echo")
    assert failed["status"] == "failed" and "scores" not in failed
    assert failed["failure"] == {"type": "InvalidScoresError", "reason": "no scores"}
    assert ("closed", "b") in run.log  # closed whatever happened
    with pytest.raises(ValueError, match="builtin must be one of \\['echo'\\] on the made-up track"):
        score_track(_Run(), "entry", builtin_name="greedy")
