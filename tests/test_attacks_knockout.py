"""Attacks on the knock-out track's scorer (circuit_gym/leaderboard/knockout_scorer.py), each scored
by the real scorer with the policy in its sandbox (tests/knockout_attack_policies.py):

- a policy hunting the planted truth (an ``info`` argument, the generator's truth files, the
  generator itself, the committed greedy cache) finds nothing and scores exactly what its honest
  twin scores; outside the sandbox, or with a scorer that hands it ``info``, it finds the truth;
- an action that is not a legal integer fails the run, naming the check, never a silently wrong score;
- a lookup table of the public models' orders scores on the secret models exactly what its honest
  twin scores there, while it beats it on the public ones.

The track's row is shrunk (public seed 0, one secret model, the self-repair kind, K = 3, 8 prompts)."""

from __future__ import annotations

import dataclasses
import json
import os

import knockout_attack_policies as P
import numpy as np
import pytest

from circuit_gym.leaderboard import knockout_scorer as KS
from circuit_gym.leaderboard.isolation import probe
from circuit_gym.leaderboard.provenance import canonical_json
from circuit_gym.leaderboard.sandbox import SandboxedPolicy
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.tasks.planted import task_name

if not probe().complete:
    if os.environ.get("CI"):
        raise RuntimeError(f"the sandbox's isolation is not available in CI: {probe().missing}")
    pytest.skip(f"isolation not available here: {probe().missing}", allow_module_level=True)

TINY = "tiny-knockout-attacks"
KIND = P.KIND


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The shrunk row, its greedy cache, a disk cache of its own (the public model's truth file
    lands there, where a policy outside the sandbox finds it) and a secret seed file."""
    root = tmp_path_factory.mktemp("knockout_attacks")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CIRCUIT_GYM_CACHE", str(root / "cache"))
        row = dataclasses.replace(KS.KNOCKOUT_V8, track=TINY, public_seeds=(0,), private_models=1,
                                  kinds=(KIND,), steps=3, batch_size=8, versus=(), trained_models=())  # fmt: skip
        mp.setitem(KS.KNOCKOUT_BENCHMARKS, TINY, row)
        seeds = root / "secret.txt"
        seeds.write_text("# maintainers only\n734512987\n")
        cache = root / "greedy.json"
        KS.build_greedy_cache(row, cache)
        yield {"row": row, "seeds": seeds, "cache": cache, "root": root}


def _score(bench, policy: str, checkpoint=None, private: bool = True) -> dict:
    return KS.score_knockout(policy, TINY, policy_spec=f"knockout_attack_policies:{policy}", checkpoint=checkpoint,
                             private_seeds=bench["seeds"] if private else None, greedy_cache=bench["cache"])  # fmt: skip


@pytest.fixture(scope="module")
def honest(bench):
    result = _score(bench, "first_free")
    assert result["status"] == "scored", result.get("failure")
    return result


def _truth(bench) -> set[int]:
    return set(truth_of(0, bench["row"].generator).circuit(KIND))


def test_a_policy_hunting_the_truth_gets_nothing(bench, honest):
    """Outside the sandbox the truth hunter finds the public model's truth file (the scorer wrote
    it) and the generator; in the sandbox it finds neither, nor the greedy cache, and its scores,
    public and secret, are its honest twin's byte for byte."""
    assert set(P.found_truth()) == _truth(bench)  # potent: outside, it reads the truth
    result = _score(bench, "truth_reader")
    assert result["status"] == "scored", result.get("failure")
    assert canonical_json(result["scores"]) == canonical_json(honest["scores"])
    assert canonical_json(result["private"]) == canonical_json(honest["private"])
    assert honest["scores"]["summary"]["all"]["recall"] < 1.0


def test_a_policy_reading_info_gets_no_info(bench, honest):
    """A scorer that handed the policy the environment's ``info`` of an oracle environment would give
    it the truth at the first step (recall 1). The scorer's environments have no oracle, and the
    sandbox passes the observation and the mask only: the reader plays as its honest twin."""
    row = bench["row"]
    naive = KS.make_env(row, KIND, (0,))
    try:
        naive.unwrapped.oracle = True  # what a naive scorer's environment would hold
        inner = KS._inner(naive, 0)
        obs, info = naive.reset(options={"model_seed": 0, "batch_index": row.batch_index})
        reader, done = P.TruthReader(), False
        while not done:
            obs, _, done, _, info = naive.step(reader.act(obs, info["action_mask"], info))
        assert set(inner.order) == _truth(bench)  # potent: with info, it ablates the truth
    finally:
        naive.close()
    scorer_env = KS.make_env(row, KIND, (0,))
    try:
        assert scorer_env.unwrapped.oracle is False and KS._inner(scorer_env, 0).oracle_info is False
    finally:
        scorer_env.close()
    result = _score(bench, "truth_reader", private=False)
    assert canonical_json(result["scores"]) == canonical_json(honest["scores"])


@pytest.mark.parametrize(
    ("policy", "says"),
    [("float_action", "must be an integer"), ("masked_action", "is masked"), ("out_of_range", "outside")],
)
def test_an_illegal_action_fails_the_run_naming_the_check(bench, policy, says):
    """A float, a head already ablated, a head id past STOP: the run fails with the action check's
    message; no score is recorded (a naive scorer would round the float, or let the environment
    take the masked head as a no-op, and score what followed)."""
    result = _score(bench, policy, private=False)
    assert result["status"] == "failed" and "scores" not in result
    assert result["failure"]["type"] == "InvalidActionError" and says in result["failure"]["reason"]


def test_a_lookup_table_of_the_public_models_is_honest_on_the_secret_ones(bench, honest, tmp_path):
    """The memoriser knows public model 0's first observation and plays its truth there (recall 1,
    above its twin's); on the secret model it recognises nothing, and its private record is its
    honest twin's byte for byte."""
    row = bench["row"]
    env = KS.make_env(row, KIND, (0,))
    try:
        obs, _ = KS._inner(env, 0).reset(options={"task": task_name(KIND), "batch_index": row.batch_index})
    finally:
        env.close()
    table = tmp_path / "table.json"
    table.write_text(json.dumps({P.fingerprint(obs): sorted(_truth(bench))}))
    result = _score(bench, "memoriser", checkpoint=str(table))
    assert result["status"] == "scored", result.get("failure")
    public, twin = result["scores"]["summary"]["all"], honest["scores"]["summary"]["all"]
    assert public["recall"] == 1.0 > twin["recall"]  # potent on the models it memorised
    assert canonical_json(result["private"]) == canonical_json(honest["private"])
    assert np.isfinite(result["private"]["scores"]["summary"]["all"]["relative_area"])


def test_the_learned_agent_loads_in_the_sandbox(tmp_path):
    """The knock-out PPO's factory (an untrained network's checkpoint, written here) loads in the
    sandbox, which hides the planted generator, and answers a legal action (it failed while the
    factory lived in the training module, which imports the generator)."""
    from dataclasses import asdict

    import torch

    from circuit_gym.baselines.knockout_policy import KnockOutPPOConfig, make_net
    from circuit_gym.envs.knockout import N_COLUMNS

    config = KnockOutPPOConfig()
    (tmp_path / "config.json").write_text(json.dumps(asdict(config)))
    torch.save(make_net(config, N_COLUMNS).state_dict(), tmp_path / "policy.pt")
    obs, mask = np.zeros((144, N_COLUMNS), dtype=np.float32), np.ones(145, dtype=np.int8)
    with SandboxedPolicy("circuit_gym.baselines.knockout_policy:load_policy", str(tmp_path), timeout_s=120,
                         methods=KS.METHODS) as policy:  # fmt: skip
        assert 0 <= policy.act(obs, mask) <= 144
