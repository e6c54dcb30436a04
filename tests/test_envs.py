import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import circuit_gym
from circuit_gym.envs import HideOracleInfo, best_of_k, env_ids, top_k_heads
from circuit_gym.envs.features import FEATURE_NAMES, N_FEATURES

TOY_IDS = [i for i in env_ids() if "-Toy-" in i]


def test_all_ids_registered_and_listed():
    ids = {e["id"] for e in circuit_gym.list_envs()}
    for model in ("Toy", "GPT2"):
        for task in ("Induction", "IOI", "Docstring", "Multi"):
            env_id = f"CircuitDiscovery-{model}-{task}-v0"
            assert env_id in gym.registry and env_id in ids


@pytest.mark.parametrize("env_id", TOY_IDS)
def test_check_env_passes(env_id):
    env = gym.make(env_id, pool_size=4, batch_size=4)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.shape == (16, N_FEATURES) == (16, len(FEATURE_NAMES))
    assert env.action_space.n == 16


def test_make_with_module_prefix_in_a_fresh_process():
    import subprocess
    import sys

    code = (
        "import gymnasium as gym\n"
        "env = gym.make('circuit_gym:CircuitDiscovery-Toy-IOI-v0', pool_size=2, batch_size=2)\n"
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
        gym.make("CircuitDiscovery-GPT2-IOI-v0")


def test_gpt2_id_on_a_local_random_checkpoint(random_gpt2_dir):
    env = gym.make("CircuitDiscovery-GPT2-IOI-v0", model_path=str(random_gpt2_dir), pool_size=2, batch_size=2)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space.n == 144 and env.observation_space.shape == (144, N_FEATURES)
    assert env.unwrapped.ablation == "zero"  # GPT-2 keeps the reference paper's zero ablation


def test_default_ablation_is_per_model_and_can_be_overridden():
    default = gym.make("CircuitDiscovery-Toy-IOI-v0", pool_size=2, batch_size=4)
    zero = gym.make("CircuitDiscovery-Toy-IOI-v0", pool_size=2, batch_size=4, ablation="zero")
    assert default.unwrapped.ablation == "resample" and zero.unwrapped.ablation == "zero"
    tables = []
    for env in (default, zero):
        env.reset(options={"batch_index": 0})
        tables.append(env.unwrapped.episode.table.reward)
    assert not np.allclose(*tables), "the two ablations give different reward tables"


def _rollout(env, seed, actions):
    out = []
    obs, info = env.reset(seed=seed)
    out.append(obs)
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append(
            (obs, r, info["oracle_head"], info["oracle_reward"], info["task"], info["per_head_reward"])
        )
        if term:
            obs, info = env.reset()
            out.append(obs)
    return out


def test_same_seed_same_everything():
    a = _rollout(gym.make("CircuitDiscovery-Toy-Multi-v0", pool_size=4, batch_size=4), 7, [1, 5, 9, 2])
    b = _rollout(gym.make("CircuitDiscovery-Toy-Multi-v0", pool_size=4, batch_size=4), 7, [1, 5, 9, 2])
    for x, y in zip(a, b, strict=True):
        if isinstance(x, tuple):
            for u, v in zip(x, y, strict=True):
                np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_array_equal(x, y)


def test_reward_metadata_and_dynamics():
    env = gym.make("CircuitDiscovery-Toy-IOI-v0", pool_size=3, batch_size=4, episode_length=3)
    obs, info = env.reset(seed=1)
    assert info["action_mask"].sum() == 16 and obs[:, -1].max() == 0
    obs, r1, term, _, info = env.step(4)
    table = info["per_head_reward"]
    assert r1 == pytest.approx(table[4])
    assert info["oracle_head"] == int(np.argmax(table)) and info["oracle_reward"] == pytest.approx(
        table.max()
    )
    assert info["oracle_recovery"] == pytest.approx(r1 / table.max())
    assert info["top1_hit"] == (info["oracle_head"] == 4)
    assert not term and info["action_mask"][4] == 0 and obs[4, -2] == 1.0
    _, r_again, term, _, info = env.step(4)  # already ablated: a no-op
    assert r_again == 0.0 and not term
    _, r3, term, _, info = env.step(7)
    assert term and obs.shape == (16, N_FEATURES)
    # the marginal rewards add up to the joint reward of the set
    joint = info["task_damage"] - 1.0 * info["general_damage"]
    assert r1 + r_again + r3 == pytest.approx(joint, abs=1e-5)


def test_live_ablation_equals_cached_numbers():
    kwargs = dict(pool_size=2, batch_size=4, episode_length=2)
    cached = gym.make("CircuitDiscovery-Toy-Docstring-v0", cache=True, **kwargs)
    live = gym.make("CircuitDiscovery-Toy-Docstring-v0", cache=False, **kwargs)
    for env in (cached, live):
        env.reset(seed=3)
    for a in (5, 11):
        _, rc, _, _, ic = cached.step(a)
        _, rl, _, _, il = live.step(a)
        assert rc == pytest.approx(rl, abs=1e-5)
        assert ic["task_damage"] == pytest.approx(il["task_damage"], abs=1e-5)
        assert ic["general_damage"] == pytest.approx(il["general_damage"], abs=1e-5)


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
        (dict(reference="news"), "reference"),
    ],
)
def test_invalid_kwargs_name_the_argument(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        gym.make("CircuitDiscovery-Toy-Multi-v0", **kwargs)


def test_multi_samples_training_tasks_and_docstring_only_when_asked():
    env = gym.make("CircuitDiscovery-Toy-Multi-v0", pool_size=2, batch_size=2)
    seen = {env.reset(seed=s)[1]["task"] for s in range(12)}
    assert seen == {"induction", "ioi"}
    _, info = env.reset(options={"task": "docstring"})
    assert info["task"] == "docstring"
    with pytest.raises(ValueError, match="task"):
        env.reset(options={"task": "summarisation"})


def test_hide_oracle_wrapper_and_best_of_k():
    env = HideOracleInfo(gym.make("CircuitDiscovery-Toy-Docstring-v0", pool_size=2, batch_size=4))
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


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(mode):
    envs = gym.make_vec("CircuitDiscovery-Toy-Multi-v0", num_envs=4, vectorization_mode=mode,
                        pool_size=2, batch_size=2)  # fmt: skip
    obs, infos = envs.reset(seed=0)
    assert obs.shape == (4, 16, N_FEATURES)
    obs, rewards, term, trunc, infos = envs.step(np.array([0, 1, 2, 3]))
    assert rewards.shape == (4,) and term.all()
    envs.close()
