"""The circuit-building environments (issue 22): API checks, rewards and oracle against an
independent CircuitRunner, masking, termination, seeding, rendering, an outside RL library."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym.benchmark import TRAIN_TASKS
from circuit_gym.circuits import Circuit, CircuitRunner
from circuit_gym.envs import list_envs
from circuit_gym.envs.circuit_building import (
    FAITHFULNESS_COLUMN,
    MEMBER_COLUMN,
    N_CIRCUIT_FEATURES,
    SETUP_PASSES,
    CircuitBuildingEnv,
)
from circuit_gym.envs.registration import circuit_env_id
from circuit_gym.envs.render import CELL, MARGIN, cell_centre, frame_shape
from circuit_gym.models import load_model
from circuit_gym.tasks import get_task

IOI = circuit_env_id("Toy", "IOI")
TINY = dict(model="tiny", pool_size=4, batch_size=4)  # the 4 x 4 model: 16 heads, STOP = 16


def tiny_env(**kwargs) -> gym.Env:
    return gym.make(IOI, **{**TINY, **kwargs})


class IndependentFaithfulness:
    """f(C) from scratch: a separately loaded model, the batch regenerated from its seed, a new
    runner, and each circuit run on its own (no stacking, no memo)."""

    def __init__(self, env: gym.Env, model) -> None:
        base = env.unwrapped
        task = get_task(base.task)
        batch = task.batch(model, base.split, base.batch_size, seed=base.state.episode.index)
        assert np.array_equal(batch.tokens.numpy(), base.state.episode.batch.tokens.numpy())
        self.runner = CircuitRunner.for_task(model, task, batch, base.ablation)
        self.n_layers, self.n_heads = base.n_layers, base.n_heads
        self.empty = self.metric(frozenset())
        self.full = self.metric(frozenset(range(self.n_layers * self.n_heads)))

    def metric(self, heads) -> float:
        # the batch mean of the per-prompt metric, computed here rather than by runner.metric
        return float(self.runner.metric_rows([Circuit.of(heads, self.n_layers, self.n_heads)])[0].mean())

    def __call__(self, heads) -> float:
        return (self.metric(heads) - self.empty) / (self.full - self.empty)


@pytest.fixture(scope="module")
def fresh_tiny():
    return load_model("tiny")


# ------------------------------------------------------------------ registration
def test_every_single_head_task_part_has_circuit_ids_on_both_models():
    task_parts = {row["id"].split("-")[2] for row in list_envs(family="single-head")}
    rows = {row["id"]: row for row in list_envs(family="circuit")}
    expected = {circuit_env_id(m, t) for m in ("Toy", "GPT2") for t in task_parts}
    assert set(rows) == expected and expected <= set(gym.registry)
    # pinned in the ID, and equal to the current benchmark's training tasks (a benchmark that
    # changes them must add a Circuit version)
    assert rows[circuit_env_id("Toy", "Multi")]["tasks"] == list(TRAIN_TASKS)
    assert gym.spec(circuit_env_id("GPT2", "Multi")).kwargs["tasks"] == tuple(TRAIN_TASKS)
    assert rows[circuit_env_id("Toy", "IOI")]["tasks"] == ["ioi"]
    assert {r["model"] for r in rows.values() if "-Toy-" in r["id"]} == {"toy"}
    assert {r["model"] for r in rows.values() if "-GPT2-" in r["id"]} == {"gpt2"}
    spec = gym.spec(circuit_env_id("GPT2", "Brackets"))
    assert spec.kwargs == {"model": "gpt2", "tasks": ("brackets",)}


# ------------------------------------------------------------------ API checks
@pytest.mark.parametrize("start", ["empty", "full"])
def test_check_env_passes_on_tiny(start):
    env = tiny_env(start=start, budget=3)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.shape == (16, N_CIRCUIT_FEATURES)
    assert env.action_space.n == 17


@pytest.mark.slow
def test_check_env_passes_on_a_toy_id():
    env = gym.make(circuit_env_id("Toy", "Multi"), pool_size=2, batch_size=4, budget=2)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space.n == 145 and env.observation_space.shape == (144, N_CIRCUIT_FEATURES)


def test_gpt2_id_on_a_local_random_checkpoint(random_gpt2_dir):
    env = gym.make(circuit_env_id("GPT2", "IOI"), model_path=str(random_gpt2_dir), pool_size=2, batch_size=2,
                   budget=2)  # fmt: skip
    check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space.n == 145 and env.unwrapped.ablation == "zero"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(mode):
    envs = gym.make_vec(IOI, num_envs=3, vectorization_mode=mode, budget=2, **TINY)
    obs, infos = envs.reset(seed=0)
    assert obs.shape == (3, 16, N_CIRCUIT_FEATURES) and infos["action_mask"].shape == (3, 17)
    obs, rewards, term, trunc, infos = envs.step(np.array([0, 1, 16]))
    assert rewards.shape == (3,) and term.tolist() == [False, False, True]
    assert infos["per_head_gain"].shape == (3, 16) and infos["faithfulness"].shape == (3,)
    envs.close()


@pytest.mark.parametrize(
    ("kwargs", "arg"),
    [({"start": "middle"}, "start"), ({"alpha": -0.1}, "alpha"), ({"alpha": float("nan")}, "alpha"),
     ({"budget": 0}, "budget"), ({"budget": 2.5}, "budget"), ({"tasks": ["nope"]}, "tasks"),
     ({"render_mode": "video"}, "render_mode"), ({"oracle_info": 1}, "oracle_info")],
)  # fmt: skip
def test_invalid_kwargs_name_the_argument(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        tiny_env(**kwargs)


# ------------------------------------------------------------------ seeding
def _rollout(seed: int) -> list:
    env = tiny_env(budget=3)
    out = []
    obs, info = env.reset(seed=seed)
    for action in [2, 5, 16, 7, 1, 3, 0, 16]:
        obs, reward, terminated, _, info = env.step(action)
        out.append((info["task"], info["batch_index"], reward, obs.tobytes(), info["oracle_head"]))
        if terminated:
            obs, info = env.reset()
            out.append((info["task"], info["batch_index"], obs.tobytes()))
    return out


def test_same_seed_same_episodes_recomputed_from_scratch():
    from circuit_gym.envs.pool import clear_caches

    first = _rollout(3)
    clear_caches()  # the second rollout recomputes every model, pool and circuit state
    assert _rollout(3) == first
    batches = {r[1] for r in first}
    assert len(batches) > 1  # the seed drives several episodes
    assert [r[1] for r in _rollout(4)] != [r[1] for r in first]


# ------------------------------------------------------------------ masking and termination
def test_action_mask_noop_and_budget_from_empty():
    env = tiny_env(budget=3)
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [1] * 17 and info["faithfulness"] == 0.0
    _, r1, t1, _, info = env.step(4)
    assert info["action_mask"][4] == 0 and info["action_mask"].sum() == 16 and not t1
    assert info["circuit_size"] == 1
    _, r2, t2, _, info2 = env.step(4)  # masked: a no-op with reward 0 that uses a step
    assert (
        r2 == 0.0 and not t2 and info2["circuit_size"] == 1 and info2["faithfulness"] == info["faithfulness"]
    )
    _, _, t3, _, info3 = env.step(9)
    assert t3 and info3["circuit_size"] == 2  # budget 3 steps reached
    assert info3["action_mask"][:16].sum() == 0 and info3["action_mask"][16] == 1  # only STOP left


def test_stop_terminates_at_once_with_reward_zero():
    env = tiny_env(budget=5)
    env.reset(seed=1)
    env.step(3)
    obs, reward, terminated, truncated, info = env.step(16)
    assert terminated and not truncated and reward == 0.0 and info["circuit_size"] == 1
    assert obs[3, MEMBER_COLUMN] == 1.0 and obs[:, MEMBER_COLUMN].sum() == 1


def test_from_full_the_mask_lists_heads_in_the_circuit_and_empties_out():
    env = tiny_env(start="full", budget=16)
    obs, info = env.reset(seed=0)
    assert info["faithfulness"] == 1.0 and info["circuit_size"] == 16 and obs[:, MEMBER_COLUMN].all()
    terminated, steps = False, 0
    while not terminated:
        free = np.flatnonzero(info["action_mask"][:16])
        _, _, terminated, _, info = env.step(int(free[0]))
        steps += 1
        assert info["action_mask"][:16].sum() == 16 - steps
    assert steps == 16 and info["circuit_size"] == 0
    assert info["faithfulness"] == pytest.approx(0.0, abs=1e-9)  # the empty circuit: f = 0


def test_budget_larger_than_the_model_is_capped():
    assert tiny_env(budget=1000).unwrapped.budget == 16


# ------------------------------------------------------------------ rewards and oracle
@pytest.mark.parametrize("start", ["empty", "full"])
def test_reward_is_the_change_of_faithfulness_minus_alpha_per_head(start, fresh_tiny):
    alpha = 0.07  # not the default, so a dropped or doubled alpha shows
    env = tiny_env(start=start, alpha=alpha, budget=4, oracle_info=False)
    sign = 1.0 if start == "empty" else -1.0
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        f = IndependentFaithfulness(env, fresh_tiny)
        heads = set() if start == "empty" else set(range(16))
        for action in (5, 0, 11):
            before = f(heads)
            heads = heads | {action} if start == "empty" else heads - {action}
            obs, reward, _, _, info = env.step(action)
            assert reward == pytest.approx(f(heads) - before - sign * alpha, abs=1e-5)
            assert info["faithfulness"] == pytest.approx(f(heads), abs=1e-5)
            assert obs[0, FAITHFULNESS_COLUMN] == pytest.approx(f(heads), abs=1e-5)


def test_oracle_equals_a_brute_force_loop_over_candidates(fresh_tiny):
    env = tiny_env(budget=4, alpha=0.02)
    env.reset(seed=2)
    f = IndependentFaithfulness(env, fresh_tiny)
    circuit: set[int] = set()
    for action in (6, 1, 13):
        now = f(circuit)
        brute = np.full(16, np.nan)
        for h in range(16):
            if h not in circuit:
                brute[h] = f(circuit | {h}) - now
        _, _, _, _, info = env.step(action)
        np.testing.assert_allclose(info["per_head_gain"], brute, atol=1e-5)
        assert info["oracle_head"] == int(np.nanargmax(brute))
        assert info["oracle_reward"] == pytest.approx(np.nanmax(brute) - 0.02, abs=1e-5)
        assert info["top1_hit"] == (action == info["oracle_head"])
        circuit.add(action)


def test_forward_pass_counters():
    env = tiny_env(budget=4)
    _, info = env.reset(seed=0)
    assert (info["forward_passes"], info["oracle_forward_passes"]) == (SETUP_PASSES, 0)
    _, _, _, _, info = env.step(3)  # the oracle of the empty circuit: 16 candidates
    assert (info["forward_passes"], info["oracle_forward_passes"]) == (SETUP_PASSES + 1, 16)
    env.unwrapped.candidate_gains()  # the next step's table, asked for twice: counted once
    _, _, _, _, info = env.step(3)  # masked no-op: no new circuit
    assert (info["forward_passes"], info["oracle_forward_passes"]) == (SETUP_PASSES + 1, 31)
    _, _, _, _, info = env.step(16)
    assert (info["forward_passes"], info["oracle_forward_passes"]) == (SETUP_PASSES + 1, 31)
    off = tiny_env(budget=4, oracle_info=False)
    off.reset(seed=0)
    _, _, _, _, info = off.step(3)
    assert info["oracle_forward_passes"] == 0 and "oracle_head" not in info


def test_memoised_and_uncached_environments_agree():
    rewards = []
    for cache in (True, False):
        env = tiny_env(budget=4, cache=cache)
        env.reset(seed=5)
        rewards.append([env.step(a)[1:] for a in (2, 8, 2, 16)])
    # The memo serves values computed in stacked batches of candidates, the uncached env computes
    # each circuit alone: matmuls of other batch sizes may round differently in the last bits on
    # some CPUs (3e-8 measured on this machine's), so agreement is to 1e-6, far below any reward.
    for a, b in zip(*rewards, strict=True):
        assert a[0] == pytest.approx(b[0], abs=1e-6) and a[1] == b[1]
        np.testing.assert_allclose(a[3]["per_head_gain"], b[3]["per_head_gain"], atol=1e-6)


# ------------------------------------------------------------------ rendering
def test_render_modes():
    env = tiny_env(budget=4, render_mode="rgb_array")
    env.reset(seed=0)
    env.step(5)  # head 1.1
    frame = env.render()
    assert frame.shape == frame_shape(4, 4) and frame.dtype == np.uint8
    inside, outside = cell_centre(1, 1), cell_centre(0, 0)
    assert frame[inside].tolist() != [0, 0, 0]  # no cross through the circuit's head
    assert frame[outside].tolist() == [0, 0, 0]  # a cross through every ablated head
    assert frame[MARGIN + CELL + 1, MARGIN + CELL + 1].tolist() == [0, 0, 0]  # the last action's outline
    text = tiny_env(budget=4, render_mode="ansi")
    text.reset(seed=0)
    text.step(5)
    text.step(14)
    line = text.render()
    assert "added 1.1, 3.2" in line and "circuit of 2 heads" in line and "f=" in line


# ------------------------------------------------------------------ an outside RL library
@pytest.mark.slow  # a few seconds on an idle machine; mostly importing Tianshou
def test_tianshou_runs_on_it_unchanged():
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.torch_utils import policy_within_training_step

    from circuit_gym.baselines.circuit_ppo import CircuitPPOConfig, CircuitScorer, build_algorithm
    from circuit_gym.baselines.ppo import MaskInObservation

    def make():
        return MaskInObservation(tiny_env(budget=3, oracle_info=False))

    envs = DummyVectorEnv([make, make])
    envs.seed(0)
    probe = make()
    net = CircuitScorer(n_features=N_CIRCUIT_FEATURES, hidden=16)
    algorithm = build_algorithm(CircuitPPOConfig(), probe.action_space, net)
    collector = Collector(algorithm, envs, VectorReplayBuffer(64, 2))
    collector.reset()
    stats = collector.collect(n_step=24)
    assert stats.n_collected_steps == 24 and stats.n_collected_episodes >= 1
    batch, _ = collector.buffer.sample(0)
    # every action the policy took was legal in the state it was taken from
    assert all(m[a] == 1 for m, a in zip(batch.obs.mask, batch.act, strict=True))
    before = [p.detach().clone() for p in net.parameters()]
    with policy_within_training_step(algorithm.policy):  # what a Tianshou trainer does around updates
        algorithm.update(buffer=collector.buffer, batch_size=8, repeat=1)
    assert any(not torch_equal(a, b) for a, b in zip(before, net.parameters(), strict=True))


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b.detach()))


def test_env_class_is_the_entry_point():
    assert isinstance(tiny_env().unwrapped, CircuitBuildingEnv)
