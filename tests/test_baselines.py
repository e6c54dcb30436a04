import json
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
import torch

from circuit_gym.baselines.fixed_policy import FixedPolicy
from circuit_gym.baselines.greedy import _gradient_estimate, attribution_scores
from circuit_gym.baselines.ppo import PPOConfig, PPOPolicy, train
from circuit_gym.baselines.random_policy import RandomPolicy


def test_attribution_patching_is_the_first_order_effect():
    """Scaling the ablation by eps: the exact change / eps tends to the gradient estimate."""
    env = gym.make("CircuitDiscovery-Toy-IOI-v1", pool_size=2, batch_size=4)
    env.reset(seed=0)
    engine = env.unwrapped.episode.scorer.task_engine
    estimate = _gradient_estimate(engine)
    eps = 1e-2
    full = engine.replacement
    try:
        engine.replacement = [z + eps * (r - z) for z, r in zip(engine.clean_z, full, strict=True)]
        finite_difference = (engine.sweep() - engine.clean_score) / eps
    finally:
        engine.replacement = full
    np.testing.assert_allclose(estimate, finite_difference, rtol=0.1, atol=0.05 * np.abs(estimate).max())
    scores = attribution_scores(env)
    assert scores.shape == (16,) and np.isfinite(scores).all()


def test_greedy_scores_are_the_first_order_contrastive_reward():
    """``attribution_scores`` (greedy's ranking) equals the slope of the actual contrastive
    reward, task damage - lam * general damage, as each head is moved towards its ablated
    value: central finite differences with plain hooks on the task prompts and the reference
    batch, at two values of lam (the signs of both terms and lam itself are checked)."""
    import torch.nn.functional as F

    from circuit_gym.envs import CircuitDiscoveryEnv
    from circuit_gym.tasks import get_task
    from circuit_gym.tasks.reference import reference_batch

    envs = {lam: CircuitDiscoveryEnv(model="tiny", tasks="ioi", ablation="zero", lam=lam, pool_size=1, batch_size=4)
            for lam in (0.5, 4.0)}  # fmt: skip
    scores = {}
    for lam, env in envs.items():
        env.reset(options={"batch_index": 0})
        scores[lam] = attribution_scores(env)
    model, batch = env.model, env.episode.batch
    task, ref = get_task("ioi"), reference_batch(model)
    n_heads = model.cfg.n_heads

    def moved(tokens, head: int, eps: float):
        """Logits with head ``head``'s output scaled by (1 - eps): eps = 1 is zero ablation."""
        layer, h = divmod(head, n_heads)

        def hook(z, hook):
            z = z.clone()
            z[:, :, h] *= 1 - eps
            return z

        with torch.no_grad():
            return model.run_with_hooks(tokens, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)])

    def damages(head: int, eps: float) -> np.ndarray:
        """(task damage, general damage), each up to a constant."""
        metric = float(task.score(moved(batch.tokens, head, eps), batch).mean())
        logits = moved(ref.tokens, head, eps)
        loss = float(F.cross_entropy(logits[:, :-1].flatten(0, 1), ref.tokens[:, 1:].flatten()))
        return np.array([-metric, loss])

    # one head per layer and greedy's top and bottom choices (each costs 2 passes over the reference)
    heads = sorted({0, 1, 5, 10, 15, int(np.argmax(scores[0.5])), int(np.argmin(scores[0.5]))})
    eps = 1e-2
    task_slope, general_slope = np.array([(damages(h, eps) - damages(h, -eps)) / (2 * eps) for h in heads]).T
    assert np.abs(task_slope).max() > 1.0 and np.abs(general_slope).max() > 0.1
    for lam, estimate in scores.items():
        slope = task_slope - lam * general_slope
        np.testing.assert_allclose(
            estimate[heads], slope, rtol=0.02, atol=0.01 * np.abs(slope).max(), err_msg=f"lam={lam}"
        )


def test_random_and_fixed_policies():
    obs = np.zeros((16, 12), dtype=np.float32)
    a, b = RandomPolicy(3).rank_heads(obs), RandomPolicy(3).rank_heads(obs)
    np.testing.assert_array_equal(a, b)
    env = gym.make("CircuitDiscovery-Toy-Multi-v1", pool_size=4, batch_size=4)
    fixed = FixedPolicy.fit(env, episodes=4)
    counts = np.zeros(16)
    for task in ("induction", "ioi"):
        for i in range(4):
            counts[env.unwrapped.pool(task).episode(i).table.oracle_head] += 1
    assert int(np.argmax(fixed.rank_heads(obs))) == int(np.argmax(counts + 1e-9 * fixed.scores))
    assert counts[int(np.argmax(fixed.rank_heads(obs)))] == counts.max()
    with pytest.raises(ValueError):
        fixed.rank_heads(np.zeros((144, 12), dtype=np.float32))


def test_ppo_trains_saves_and_loads(tmp_path):
    config = PPOConfig(epochs=1, steps_per_epoch=128, steps_per_collect=64, pool_size=4, n_envs=2,
                       batch_size_prompts=4)  # fmt: skip
    summary = train(config, tmp_path, progress=False)
    assert (tmp_path / "policy.pt").exists() and json.loads((tmp_path / "config.json").read_text())[
        "epochs"
    ] == 1
    assert len(list((tmp_path / "tensorboard").iterdir())) == 1, "TensorBoard logs written"
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert (
        len(curve) == config.epochs + 1 and curve[-1]["env_steps"] > curve[0]["env_steps"]
    )  # test before + per epoch
    assert np.isfinite(summary["best_selection_recovery"]) and summary["best_selection_recovery"] <= 1.0
    policy = PPOPolicy.load(tmp_path)
    obs = np.random.default_rng(0).random((16, 12)).astype(np.float32)
    obs[:, 10] = 0
    obs[3, 10] = 1  # an ablated head is never preferred
    scores = policy.rank_heads(obs)
    assert scores.shape == (16,) and np.isfinite(scores).all() and int(np.argmin(scores)) == 3
    # the network is shared over heads: it ranks 144 heads as well
    assert PPOPolicy.load(tmp_path).rank_heads(np.zeros((144, 12), dtype=np.float32)).shape == (144,)
    torch.testing.assert_close(
        torch.as_tensor(scores), torch.as_tensor(PPOPolicy.load(tmp_path).rank_heads(obs))
    )
    # the seed decides everything: the same seed again gives the same weights, another does not
    first = torch.load(tmp_path / "policy_last.pt", weights_only=True)
    for seed, out in ((config.seed, tmp_path), (config.seed + 1, tmp_path / "other_seed")):
        train(replace(config, seed=seed), out, progress=False)
        again = torch.load(out / "policy_last.pt", weights_only=True)
        assert all(torch.equal(first[k], again[k]) for k in first) == (seed == config.seed)
    assert len(list((tmp_path / "tensorboard").iterdir())) == 1  # a rerun replaces the run's logs


@pytest.mark.slow
def test_ppo_learns_the_best_head_of_a_fixed_batch(tmp_path, monkeypatch):
    """One IOI batch on the 4 x 4 model is a 16-armed bandit with known payoffs (the batch's
    sweep table): 512 steps of PPO move the weights away from the same-seed initialisation and
    take the greedy policy from a head the untrained network prefers to the oracle head."""
    from circuit_gym.baselines.ppo import HeadScorer
    from circuit_gym.envs import CircuitDiscoveryEnv

    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    config = PPOConfig(env_id="CircuitDiscovery-Toy-IOI-v1", pool_size=1, selection_episodes=1, batch_size_prompts=4,
                       n_envs=2, epochs=2, steps_per_epoch=256, steps_per_collect=64, ent_coef=0.01)  # fmt: skip
    env = CircuitDiscoveryEnv(model="tiny", tasks="ioi", pool_size=1, batch_size=4)
    obs, _ = env.reset(options={"batch_index": 0})
    reward = env.episode.table.reward  # every head's payoff, from the exact sweep
    torch.manual_seed(config.seed)  # what train() does right before building its network
    initial = HeadScorer(n_features=obs.shape[1], hidden=config.hidden)
    initial_head = int(np.argmax(PPOPolicy(initial).rank_heads(obs)))
    assert reward[initial_head] < reward.max() - 1.0  # there is something to learn

    train(config, tmp_path / "run", progress=False)
    trained = torch.load(tmp_path / "run" / "policy_last.pt", weights_only=True)
    assert trained.keys() == initial.state_dict().keys()
    assert not all(torch.equal(initial.state_dict()[k], trained[k]) for k in trained), "no update was made"
    net = HeadScorer(n_features=obs.shape[1], hidden=config.hidden)
    net.load_state_dict(trained)
    assert int(np.argmax(PPOPolicy(net).rank_heads(obs))) == int(np.argmax(reward))
    returns = [point["test_return"] for point in json.loads((tmp_path / "run" / "curve.json").read_text())]
    assert returns[0] == pytest.approx(reward[initial_head], abs=1e-6)  # before training
    assert returns[-1] == pytest.approx(reward.max(), abs=1e-6)


def test_head_scorer_ignores_head_order_but_uses_other_heads():
    from circuit_gym.baselines.ppo import HeadScorer

    torch.manual_seed(0)
    net = HeadScorer(hidden=16)
    obs = torch.rand(1, 16, 12)
    obs[..., 10] = 0
    perm = torch.randperm(16)
    # permuting the heads permutes the logits: no head index is used
    torch.testing.assert_close(net.logits(obs)[:, perm], net.logits(obs[:, perm]))
    # changing another head's features changes this head's logit (the context)
    other = obs.clone()
    other[0, 5, :10] += 1.0
    assert not torch.allclose(net.logits(obs)[0, 0], net.logits(other)[0, 0])


def test_the_one_model_job_quick_writes_every_artifact(tmp_path, monkeypatch):
    """The one-model job (circuit_gym.baselines.run_all, which scripts/reproduce_gpt2.py runs; the
    board's main job: tests/test_main_job.py), on tiny settings."""
    from circuit_gym.baselines.run_all import run_quick

    monkeypatch.setenv("CIRCUIT_GYM_CACHE", str(tmp_path / "cache"))
    run_quick(tmp_path / "res")
    res = tmp_path / "res"
    report = json.loads((res / "results.json").read_text())
    assert report["model"] == "toy"
    solvers = {r["solver"] for r in report["rows"]}
    assert solvers == {"random", "fixed", "greedy", "ppo"}
    for row in report["rows"]:
        assert {
            "solver",
            "task",
            "split",
            "k",
            "recovery",
            "recovery_ci95",
            "episodes_without_positive_oracle",
            "top1_rate",
            "episodes",
        } <= set(row)
    from circuit_gym.benchmark import HELD_OUT_TASKS, TRAIN_TASKS

    assert {(r["task"], r["split"]) for r in report["rows"]} == {(t, "eval") for t in TRAIN_TASKS} | {
        (t, "test") for t in HELD_OUT_TASKS
    }
    # circuit scores: every held-out task, every solver plus ACDC and EAP-IG, and a figure each
    circuits = report["circuits"]["tasks"]
    assert set(circuits) == set(HELD_OUT_TASKS)
    for task, by_solver in circuits.items():
        assert set(by_solver) == solvers | {"acdc", "eap_ig"}
        assert all(np.isfinite(r["cpr"]) and np.isfinite(r["cmd"]) for r in by_solver.values())
        assert (res / f"faithfulness_{task}.png").stat().st_size > 0
    # the training pools were swept before PPO, the evaluation pools in a worker process
    # during it and from the list's other end after it: each computed once (the job where
    # the two meet may be computed by both)
    tables = report["oracle_tables"]
    assert tables["train"]["computed"] > 0 and tables["evaluation"]["computed"] > 0
    ends = tables["evaluation"], tables["evaluation_from_the_end"]
    assert ends[0]["jobs"] == ends[1]["jobs"]
    assert ends[0]["jobs"] <= ends[0]["computed"] + ends[1]["computed"] <= ends[0]["jobs"] + 1
    for name in ("results.md", "learning_curve.png", "heatmap_ioi.png", "heatmap_docstring.png"):
        assert (res / name).stat().st_size > 100
    # circuit building: the four solvers on one episode per held-out task, PPO trained in out/circuit/ppo
    building = report["circuit_building"]
    expected = {
        (s, t) for s in ("greedy_search", "attribution", "random", "ppo") for t in (*HELD_OUT_TASKS, "all")
    }
    assert {(r["solver"], r["task"]) for r in building["rows"]} == expected
    assert (
        json.loads((res / "circuit" / "ppo" / "config.json").read_text())["budget"] == building["budget"] == 4
    )
    for e in building["episodes_rows"]:
        assert e["circuit_size"] <= 4 and len(e["order"]) == e["circuit_size"]
        if e["solver"] == "greedy_search":  # exact: one pass per candidate per step beyond the env's own
            assert e["forward_passes"] > 144
    assert "## Circuit building" in (res / "results.md").read_text()
    assert (res / "circuit" / "learning_curve.png").stat().st_size > 100


def test_ppo_reads_the_action_mask_from_info():
    from circuit_gym.baselines.ppo import HeadScorer, MaskInObservation

    env = MaskInObservation(gym.make("CircuitDiscovery-Toy-IOI-v1", episode_length=3, pool_size=2))
    obs, info = env.reset(seed=0)
    assert np.array_equal(obs["mask"], info["action_mask"]) and obs["mask"].all()
    obs, _, _, _, info = env.step(5)
    assert np.array_equal(obs["mask"], info["action_mask"]) and obs["mask"][5] == 0
    assert env.observation_space.contains(obs)
    net = HeadScorer()
    logits = net.logits(torch.as_tensor(obs["obs"])[None], torch.as_tensor(obs["mask"])[None])[0]
    assert logits[5] < -1e8 and (logits[np.arange(len(logits)) != 5] > -1e8).all()
