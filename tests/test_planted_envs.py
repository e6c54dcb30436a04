"""The Planted environments: a generated model per reset, the ground truth only at the end."""

from __future__ import annotations

import numpy as np
import pytest

from circuit_gym.ablation import tables
from circuit_gym.ablation.contrastive import ContrastiveScorer
from circuit_gym.circuits import Circuit, CircuitRunner, faithfulness
from circuit_gym.envs import planted as P
from circuit_gym.envs import pool
from circuit_gym.models.planted.generator import model_name, truth_of

CHEAP = {"pool_size": 2, "batch_size": 4, "cache": False, "oracle_info": False}


def _env(**kwargs) -> P.PlantedEnv:
    return P.PlantedEnv(**{"tasks": ("planted_multihop",), **CHEAP, **kwargs})


def test_the_seed_of_reset_decides_the_model_and_the_episode():
    a, b = _env(seeds=(11, 12, 13)), _env(seeds=(11, 12, 13))
    obs_a, info_a = a.reset(seed=4)
    obs_b, info_b = b.reset(seed=4)
    assert info_a["model"] == info_b["model"] and np.array_equal(obs_a, obs_b)
    assert info_a["model"] in {model_name(s) for s in (11, 12, 13)}
    drawn = {a.reset(seed=s)[1]["model"] for s in range(12)}
    assert len(drawn) > 1  # several seeds of the list are drawn


def test_the_truth_comes_with_the_last_step_only():
    env = _env(seeds=(21,), episode_length=2)
    _, info = env.reset(seed=0)
    assert P.TRUTH_KEY not in info
    _, _, terminated, _, info = env.step(0)
    assert not terminated and P.TRUTH_KEY not in info
    _, _, terminated, _, info = env.step(1)
    assert terminated and info[P.TRUTH_KEY] == truth_of(21).to_json("multihop")
    heads = {h["head"] for h in info[P.TRUTH_KEY]["circuits"]["multihop"]}
    assert heads == truth_of(21).circuit("multihop")


def test_oracle_gives_the_truth_at_reset_and_options_pick_the_seed():
    env = _env(oracle=True)
    _, info = env.reset(seed=0, options={"model_seed": 5})
    assert info["model"] == model_name(5) and info[P.TRUTH_KEY] == truth_of(5).to_json("multihop")


def test_circuit_building_inner_environment():
    env = P.PlantedEnv(tasks=("planted_redundant",), inner="circuit", seeds=(3,), pool_size=2, batch_size=4,
                       oracle_info=False)  # fmt: skip
    obs, info = env.reset(seed=1)
    assert obs.shape[0] == 144 and P.TRUTH_KEY not in info
    assert (env.stop_action, env.alpha) == (144, 0.01)  # what reward wrappers read (circuit_ppo.AreaReward)
    _, reward, terminated, _, info = env.step(env.action_space.n - 1)  # STOP
    assert terminated and reward == 0.0
    assert {h["role"] for h in info[P.TRUTH_KEY]["circuits"]["redundant"]} == {
        "retriever_1",
        "retriever_2",
        "reader",
    }


def test_dropped_models_are_released():
    env = _env(inner_cache=1)
    env.reset(seed=0, options={"model_seed": 31})
    env.reset(seed=0, options={"model_seed": 32})
    assert list(env._inner) == [model_name(32)]
    assert not any(key[0] == model_name(31) for key in pool._MODELS)


def test_the_circuit_environment_builds_no_general_damage_engine():
    """Its reward has no general-damage half, so a reset and steps build no engine on the
    reference text; its faithfulness equals the one from the contrastive scorer's task engine
    (the path it used before, which built both engines)."""
    env = P.PlantedEnv(tasks=("planted_induction",), inner="circuit", seeds=(4,), pool_size=1, batch_size=4,
                       oracle_info=False)  # fmt: skip
    _, info = env.reset(seed=0)
    heads = [*sorted(truth_of(4).circuit("induction")), 0 if 0 not in truth_of(4).circuit("induction") else 1]
    seen = [env.step(int(h))[4]["faithfulness"] for h in heads]
    base = env.inner_for(4).unwrapped
    assert not any(key[0] == id(base.model) for key in tables._GENERAL)
    episode = base.pool("planted_induction").episode(0)
    p = episode.pool
    runner = CircuitRunner(
        ContrastiveScorer(base.model, p.task, episode.batch, p.reference, p.ablation).task_engine
    )
    m = [
        float(runner.metric([Circuit.of(heads[:k], 12, 12)])[0]) for k in range(4)
    ]  # one pass each, as the env
    assert seen == pytest.approx([faithfulness(x, m[0], runner.full_metric) for x in m[1:]], abs=1e-9)
    assert seen[1] > 0.8  # the whole circuit: the comparison is not between zeros


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"tasks": ("ioi",)}, "tasks"), ({"tasks": ("planted_multihop", "planted_induction")}, "tasks"),
     ({"model": "toy"}, "model"), ({"inner": "other"}, "inner"), ({"seeds": ()}, "seeds"),
     ({"seeds": (-1,)}, "seed"), ({"oracle": 1}, "oracle"), ({"model_path": "/tmp"}, "model_path"),
     ({"inner_cache": 0}, "inner_cache"), ({"inner_cache": True}, "inner_cache")],
)  # fmt: skip
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _env(**kwargs)
