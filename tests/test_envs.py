import json
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import circuit_gym
from circuit_gym.ablation import ContrastiveScorer
from circuit_gym.benchmark import TRAIN_TASKS
from circuit_gym.envs import (
    ORACLE_INFO_KEYS,
    VERSIONS,
    HideOracleInfo,
    RefusedEnvError,
    best_of_k,
    env_ids,
    top_k_heads,
    version_notes,
)
from circuit_gym.envs.features import FEATURE_NAMES, N_FEATURES
from circuit_gym.tasks import get_task, list_tasks
from circuit_gym.tasks.reference import reference_batch

TOY_IDS = [i for i in env_ids(family="single-head") if "-Toy-" in i]
SETS = ("Induction", "IOI", "Docstring", "Multi")
BUILTIN = (
    "induction",
    "induction_seen",
    "ioi",
    "docstring",
    "greater_than",
    "successor",
    "pronoun",
    "agreement",
    "brackets",
)


def independent_scorer(model, env, lam):
    """A scorer built from scratch (its own engines, the batch regenerated from its seed) on
    ``model``, a separately loaded copy of the weights: no cache of the environment is used."""
    base = env.unwrapped
    task = get_task(base.episode.pool.task.name)
    batch = task.batch(model, base.split, base.batch_size, seed=base.episode.index)
    assert np.array_equal(batch.tokens.numpy(), base.episode.batch.tokens.numpy())
    return ContrastiveScorer(model, task, batch, reference_batch(model, None), base.ablation, lam)


# ------------------------------------------------------------------ registration
def test_current_ids_are_registered_and_listed():
    sets_v4 = ("Induction", "IOI", "Docstring", "GreaterThan", "Successor", "Pronoun", "Agreement", "Brackets",
               "Multi")  # fmt: skip
    # InductionSeen has no v4 (redundant on the retrained model): its v3 IDs stay current on toy_d
    expected = [f"CircuitDiscovery-{m}-InductionSeen-v3" for m in ("Toy", "GPT2")] + [
        f"CircuitDiscovery-{m}-{t}-v4" for m in ("Toy", "GPT2") for t in sets_v4
    ]
    assert sorted(env_ids(family="single-head")) == sorted(expected)
    rows = circuit_gym.list_envs(family="single-head")
    assert [r["id"] for r in rows] == env_ids(family="single-head")
    for row in rows:
        assert row["id"] in gym.registry and row["current"] and row["version"] in (3, 4)
        assert version_notes(row["family"], row["version"])
    # every built-in task has its own ID; Multi samples the benchmark's training tasks
    single = {tuple(r["tasks"]) for r in rows if "-Multi-" not in r["id"]}
    assert single == {(t,) for t in list_tasks() if t in BUILTIN}
    assert {r["id"]: r["tasks"] for r in rows}["CircuitDiscovery-Toy-Multi-v4"] == list(TRAIN_TASKS)
    assert gym.spec("CircuitDiscovery-Toy-IOI-v4").kwargs["model"] == "toy"
    # the older Toy IDs keep run D's model, so their behaviour is unchanged
    for version in (2, 3):
        assert gym.spec(f"CircuitDiscovery-Toy-Multi-v{version}").kwargs["model"] == "toy_d"
    assert gym.spec("CircuitDiscovery-Toy-InductionSeen-v3").kwargs["model"] == "toy_d"


def test_older_multi_ids_keep_their_tasks_and_point_to_the_current_one():
    older = {r["id"]: r for r in circuit_gym.list_envs(True, "single-head") if "-Toy-Multi-" in r["id"]}
    assert older["CircuitDiscovery-Toy-Multi-v2"]["tasks"] == [
        "agreement",
        "docstring",
        "greater_than",
        "pronoun",
    ]
    assert older["CircuitDiscovery-Toy-Multi-v3"]["tasks"] == [
        "agreement", "docstring", "greater_than", "pronoun", "successor",
    ]  # fmt: skip
    assert gym.spec("CircuitDiscovery-Toy-Multi-v2").kwargs["tasks"] == (
        "agreement", "docstring", "greater_than", "pronoun",
    )  # fmt: skip
    for version in (1, 2, 3):
        row = older[f"CircuitDiscovery-Toy-Multi-v{version}"]
        assert not row["current"] and row["use"] == "CircuitDiscovery-Toy-Multi-v4"


def test_v1_ids_keep_the_4x4_model_and_point_to_the_current_ids():
    v1 = [r for r in circuit_gym.list_envs(True, "single-head") if r["version"] == 1]
    assert sorted(r["id"] for r in v1) == sorted(
        f"CircuitDiscovery-{m}-{t}-v1" for m in ("Toy", "GPT2") for t in SETS
    )
    current = set(env_ids(family="single-head"))
    for row in v1:
        assert row["id"] in gym.registry and not row["current"] and row["use"] in current
        assert row["use"].rpartition("-v")[0] == row["id"].rpartition("-v")[0]
    assert gym.spec("CircuitDiscovery-Toy-IOI-v1").kwargs["model"] == "tiny"
    assert {r["id"]: r["tasks"] for r in v1}["CircuitDiscovery-Toy-Multi-v1"] == ["induction", "ioi"]


def test_v0_ids_stay_registered_listed_as_superseded():
    old = [r for r in circuit_gym.list_envs(True, "single-head") if r["version"] == 0]
    assert sorted(r["id"] for r in old) == sorted(
        f"CircuitDiscovery-{m}-{t}-v0" for m in ("Toy", "GPT2") for t in SETS
    )
    for row in old:  # a superseded ID names the newest version (make refuses it: tests/test_old_ids.py)
        assert (
            row["id"] in gym.registry and not row["current"] and row["use"] == row["id"].replace("-v0", "-v4")
        )
    assert VERSIONS[0].superseded_by == 1 and VERSIONS[1].superseded_by is None


def test_v0_id_is_refused_at_make():
    with pytest.raises(RefusedEnvError, match=r"IOI-v0 is refused.*Use CircuitDiscovery-Toy-IOI-v4"):
        gym.make("CircuitDiscovery-Toy-IOI-v0", pool_size=2, batch_size=4)


@pytest.mark.parametrize("env_id", TOY_IDS + ["CircuitDiscovery-Toy-IOI-v1"])
def test_check_env_passes(env_id):
    env = gym.make(env_id, pool_size=2, batch_size=4)
    check_env(env.unwrapped, skip_render_check=True)
    heads = 16 if env_id.endswith("-v1") else 144  # v1: the 4 x 4 model; v2: GPT-2's 12 x 12 grid
    assert env.observation_space.shape == (heads, N_FEATURES) == (heads, len(FEATURE_NAMES))
    assert env.action_space.n == heads


def test_make_with_module_prefix_in_a_fresh_process():
    code = (
        "import gymnasium as gym\n"
        "env = gym.make('circuit_gym:CircuitDiscovery-Toy-IOI-v1', pool_size=2, batch_size=2)\n"
        "obs, info = env.reset(seed=0)\n"
        "print(obs.shape)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "(16, 12)" in out.stdout


def test_gpt2_id_without_weights_fails_at_make_with_the_loader_message(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("CIRCUIT_GYM_GPT2_PATH", raising=False)
    with pytest.raises(circuit_gym.ModelNotAvailableError, match="CIRCUIT_GYM_GPT2_PATH"):
        gym.make("CircuitDiscovery-GPT2-IOI-v1")


def test_gpt2_id_on_a_local_random_checkpoint(random_gpt2_dir):
    env = gym.make("CircuitDiscovery-GPT2-IOI-v1", model_path=str(random_gpt2_dir), pool_size=2, batch_size=2)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space.n == 144 and env.observation_space.shape == (144, N_FEATURES)
    assert env.unwrapped.ablation == "zero"  # GPT-2 keeps the reference paper's zero ablation


def test_default_ablation_is_per_model_and_can_be_overridden():
    default = gym.make("CircuitDiscovery-Toy-IOI-v1", pool_size=2, batch_size=4)
    zero = gym.make("CircuitDiscovery-Toy-IOI-v1", pool_size=2, batch_size=4, ablation="zero")
    assert default.unwrapped.ablation == "resample" and zero.unwrapped.ablation == "zero"
    tables = []
    for env in (default, zero):
        env.reset(options={"batch_index": 0})
        tables.append(env.unwrapped.episode.table.reward)
    assert not np.allclose(*tables), "the two ablations give different reward tables"


# ------------------------------------------------------------------ determinism
ROLLOUT = """
import json, sys, warnings
import gymnasium as gym
import numpy as np
import circuit_gym
env = gym.make("CircuitDiscovery-Toy-Multi-v1", pool_size=4, batch_size=4, episode_length=2)
out = []
obs, info = env.reset(seed=7)
for a in [1, 5, 9, 2, 14, 3]:
    obs, r, term, trunc, info = env.step(a)
    out.append({"obs": obs.tolist(), "reward": r, "task": info["task"], "batch": info["batch_index"],
                "oracle": [info["oracle_head"], info["oracle_reward"]],
                "table": [None if np.isnan(x) else x for x in info["per_head_reward"].tolist()]})
    if term:
        obs, info = env.reset()
        out.append({"obs": obs.tolist(), "task": info["task"], "batch": info["batch_index"]})
print(json.dumps(out))
"""


def _rollout_in_fresh_process(cache_dir) -> list:
    env = {**os.environ, "CIRCUIT_GYM_CACHE": str(cache_dir), "CIRCUIT_GYM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", ROLLOUT], capture_output=True, text=True, timeout=600, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_same_seed_same_everything_across_processes(tmp_path):
    # Two processes with empty, separate disk caches: every number is recomputed from scratch.
    a = _rollout_in_fresh_process(tmp_path / "a")
    b = _rollout_in_fresh_process(tmp_path / "b")
    assert a == b
    assert len({(r["task"], r["batch"]) for r in a}) > 1  # the seed drives several episodes
    assert any(r.get("table") and None in r["table"] for r in a)  # second steps were compared too


# ------------------------------------------------------------------ rewards and oracle info
@pytest.mark.parametrize("env_id", ["CircuitDiscovery-Toy-IOI-v1", "CircuitDiscovery-Toy-Induction-v1"])
def test_step_reward_equals_an_independent_scorer(env_id, tiny_model):
    lam = 0.5  # not the default, so a dropped or doubled lam shows
    env = gym.make(env_id, pool_size=8, batch_size=4, lam=lam)
    for seed in (0, 1, 2):
        env.reset(seed=seed)
        head = 5 + seed
        scorer = independent_scorer(tiny_model, env, lam)
        _, reward, term, _, info = env.step(head)
        assert term
        assert reward == pytest.approx(scorer.reward([head]), abs=1e-4)
        td, gd = scorer.damages([head])
        assert info["task_damage"] == pytest.approx(td, abs=1e-4)
        assert info["general_damage"] == pytest.approx(gd, abs=1e-4)


def test_three_step_episode_reports_this_steps_marginal_table(tiny_model):
    """Per step, ``per_head_reward`` / ``oracle_*`` / ``top1_hit`` / ``oracle_recovery`` are
    checked against R(S + h) - R(S) computed by an independent scorer for every free head."""
    env = gym.make("CircuitDiscovery-Toy-IOI-v1", pool_size=3, batch_size=4, episode_length=3)
    _, info = env.reset(seed=1)
    scorer = independent_scorer(tiny_model, env, 1.0)
    clean = np.array([scorer.reward([h]) for h in range(16)])
    ablated: list[int] = []
    for step, pick in enumerate(("best", "worst", "best")):
        base = scorer.reward(ablated) if ablated else 0.0
        expected = np.full(16, np.nan)
        for h in range(16):
            if h not in ablated:
                expected[h] = scorer.reward([*ablated, h]) - base
        best = int(np.nanargmax(expected))
        action = best if pick == "best" else int(np.nanargmin(expected))
        _, reward, term, _, info = env.step(action)
        assert term == (step == 2)
        np.testing.assert_allclose(info["per_head_reward"], expected, atol=1e-4, equal_nan=True)
        assert reward == pytest.approx(expected[action], abs=1e-4)
        assert info["oracle_head"] == best and info["oracle_reward"] == pytest.approx(
            expected[best], abs=1e-4
        )
        assert info["top1_hit"] is (pick == "best") and info["top1_hit"] == (action == best)
        # a ratio: its tolerance is the 1e-4 reward tolerance propagated through a / b
        a, b = expected[action], expected[best]
        ratio_tol = 1e-4 * (1 / abs(b) + abs(a) / b**2)
        assert info["oracle_recovery"] == pytest.approx(a / b, abs=ratio_tol)
        assert info["clean_oracle_head"] == int(np.argmax(clean))
        assert info["clean_oracle_reward"] == pytest.approx(clean.max(), abs=1e-4)
        ablated.append(action)
        assert info["action_mask"].tolist() == [0 if h in ablated else 1 for h in range(16)]
    # after the first step the step's oracle is not the clean single-head one
    assert info["oracle_head"] != info["clean_oracle_head"]


def test_noop_step_and_action_mask_on_every_reset_and_step():
    env = gym.make("CircuitDiscovery-Toy-IOI-v1", pool_size=3, batch_size=4, episode_length=3)
    obs, info = env.reset(seed=1)
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].sum() == 16 and obs[:, -1].max() == 0
    obs, r1, term, _, info = env.step(4)
    assert (
        not term and info["action_mask"][4] == 0 and obs[4, -2] == 1.0 and obs[0, -1] == pytest.approx(1 / 3)
    )
    damages = info["task_damage"], info["general_damage"]
    _, r_again, term, _, info = env.step(4)  # already ablated: a no-op
    assert r_again == 0.0 and not term and (info["task_damage"], info["general_damage"]) == damages
    assert np.isnan(info["per_head_reward"][4]) and info["action_mask"].sum() == 15
    _, _, term, _, info = env.step(7)
    assert term and info["action_mask"].sum() == 14
    _, info = env.reset()
    assert info["action_mask"].sum() == 16


def _lockstep(env_id: str, seed: int, actions, first: dict, second: dict):
    """Two environments of ``env_id`` (2 batches of 4 prompts, 2 steps) that differ by the
    arguments ``first`` and ``second``, reset with one seed and given the same actions: each
    step's ``(reward, info)`` of both."""
    kwargs = dict(pool_size=2, batch_size=4, episode_length=2)
    envs = gym.make(env_id, **first, **kwargs), gym.make(env_id, **second, **kwargs)
    for env in envs:
        env.reset(seed=seed)
    for a in actions:
        yield tuple((reward, info) for _, reward, _, _, info in (env.step(a) for env in envs))


def test_live_ablation_equals_cached_numbers():
    steps = _lockstep("CircuitDiscovery-Toy-Docstring-v1", 3, (5, 11), dict(cache=True), dict(cache=False))
    for (rc, ic), (rl, il) in steps:
        assert rc == pytest.approx(rl, abs=1e-5)
        assert ic["task_damage"] == pytest.approx(il["task_damage"], abs=1e-5)
        assert ic["general_damage"] == pytest.approx(il["general_damage"], abs=1e-5)
        np.testing.assert_allclose(ic["per_head_reward"], il["per_head_reward"], atol=1e-5, equal_nan=True)


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        (dict(episode_length=0), "episode_length"),
        (dict(lam=-1.0), "lam"),
        (dict(ablation="noise"), "ablation"),
        (dict(split="dev"), "split"),
        (dict(batch_size=0), "batch_size"),
        (dict(pool_size=0), "pool_size"),
        (dict(tasks=["ioi", "sentiment"]), "tasks"),
        (dict(cache="yes"), "cache"),
        (dict(oracle_info=1), "oracle_info"),
        (dict(reference="news"), "reference"),
        (dict(render_mode="svg"), "render_mode"),
    ],
)
def test_invalid_kwargs_name_the_argument(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        gym.make("CircuitDiscovery-Toy-Multi-v1", **kwargs)


def test_bad_input_to_a_built_environment_is_a_clear_error_and_changes_nothing():
    """Out-of-range or non-integer actions, a step before reset, unknown reset options, a batch
    index outside the pool and an episode longer than the number of heads each raise an error
    that says what is wrong; a refused action is not a step."""
    from circuit_gym.envs import CircuitDiscoveryEnv

    for oracle_info in (True, False):
        env = CircuitDiscoveryEnv(
            model="tiny", pool_size=2, batch_size=2, episode_length=2, oracle_info=oracle_info
        )
        with pytest.raises(RuntimeError, match=r"reset\(\)"):
            env.step(0)
    n = env.n_total
    with pytest.raises(ValueError, match="episode_length"):
        CircuitDiscoveryEnv(model="tiny", pool_size=2, batch_size=2, episode_length=n + 1)
    env.reset(seed=0)
    for action in (n, -1):
        with pytest.raises(ValueError, match=rf"action must be a head id in \[0, {n}\)"):
            env.step(action)
    for action in (1.5, "3", None, np.array([1, 2]), np.float32(2.0)):  # issue 33: a type message
        with pytest.raises(TypeError, match=rf"action must be one integer .*a head id in \[0, {n}\)"):
            env.step(action)
    _, _, terminated, _, info = env.step(np.int64(3))  # numpy integers are valid actions
    assert not terminated and info["action_mask"].sum() == n - 1  # the refused actions were not steps
    for options, message in (
        ({"batch": 0}, r"unknown reset options \['batch'\]"),
        ({"batch_index": 2}, r"batch index must be in \[0, 2\), got 2"),
        ({"batch_index": -1}, r"batch index must be in \[0, 2\), got -1"),
        ({"task": "sentiment"}, "task"),
    ):
        with pytest.raises(ValueError, match=message):
            env.reset(options=options)


def test_multi_samples_training_tasks_and_docstring_only_when_asked():
    env = gym.make("CircuitDiscovery-Toy-Multi-v1", pool_size=2, batch_size=2)
    seen = {env.reset(seed=s)[1]["task"] for s in range(12)}
    assert seen == {"induction", "ioi"}
    _, info = env.reset(options={"task": "docstring"})
    assert info["task"] == "docstring"
    with pytest.raises(ValueError, match="task"):
        env.reset(options={"task": "summarisation"})


# ------------------------------------------------------------------ hiding the oracle
def test_hide_oracle_wrapper_and_best_of_k():
    env = HideOracleInfo(gym.make("CircuitDiscovery-Toy-Docstring-v1", pool_size=2, batch_size=4))
    assert env.unwrapped.oracle_info is False  # and so the oracle fields are not computed
    obs, info = env.reset(seed=0)
    assert set(info) == {"action_mask"}
    scores = -np.arange(16, dtype=float)  # prefers heads 0, 1, 2, ...
    plan = best_of_k(env, scores, k=5)
    assert plan.tried == (0, 1, 2, 3, 4)
    _, r, _, _, info = env.step(plan.head)
    assert set(info) == {"action_mask", "task_damage", "general_damage"}
    assert r == pytest.approx(plan.reward)
    with pytest.raises(ValueError, match="finite"):
        top_k_heads(np.array([np.nan, 1.0]), 1)


def test_oracle_info_off_gives_the_same_rewards():
    for (r_on, _), (r_off, i_off) in _lockstep(
        "CircuitDiscovery-Toy-IOI-v1", 4, (2, 9), {}, dict(oracle_info=False)
    ):
        assert r_on == r_off and not set(ORACLE_INFO_KEYS[1:]) & set(i_off)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(mode):
    envs = gym.make_vec("CircuitDiscovery-Toy-Multi-v1", num_envs=4, vectorization_mode=mode,
                        pool_size=2, batch_size=2)  # fmt: skip
    obs, infos = envs.reset(seed=0)
    assert obs.shape == (4, 16, N_FEATURES) and infos["action_mask"].shape == (4, 16)
    obs, rewards, term, trunc, infos = envs.step(np.array([0, 1, 2, 3]))
    assert rewards.shape == (4,) and term.all()
    assert infos["per_head_reward"].shape == (4, 16) and infos["action_mask"].shape == (4, 16)
    envs.close()


def test_hide_oracle_info_under_make_vec():
    envs = gym.make_vec("CircuitDiscovery-Toy-Multi-v1", num_envs=2, vectorization_mode="sync",
                        wrappers=[HideOracleInfo], pool_size=2, batch_size=2, episode_length=2)  # fmt: skip
    hidden = {*ORACLE_INFO_KEYS, "batch_index"}
    _, infos = envs.reset(seed=0)
    assert not {k.lstrip("_") for k in infos} & hidden and infos["action_mask"].shape == (2, 16)
    # two steps of an episode, then the vector env's autoreset step (it returns reset's info)
    for actions, stepped in (([0, 1], True), ([2, 3], True), ([4, 5], False)):
        _, _, _, _, infos = envs.step(np.array(actions))
        assert not {k.lstrip("_") for k in infos} & hidden
        assert infos["action_mask"].shape == (2, 16)
        assert ({"task_damage", "general_damage"} <= set(infos)) == stepped
    envs.close()
