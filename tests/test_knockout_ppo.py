"""The knock-out track's learned agent (issue 60 item 4): it trains, resumes, is chosen on
training-side seeds only, and its selection score is the knock-out area an independent replay
of its episodes gives (exact stacked passes of the order's prefixes, not the environment's steps)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from circuit_gym.baselines import knockout_ppo as K
from circuit_gym.baselines.knockout_policy import load_policy
from circuit_gym.circuits.knockout_scores import relative_area
from circuit_gym.envs.registration import planted_knockout_id
from circuit_gym.solvers.knockout import knockout_curve, play_actions

PUBLIC_PLANTED_SEEDS = set(range(20))  # the board's public planted models (leaderboard.planted_scorer)


def test_training_and_selection_seeds_are_apart_from_each_other_and_the_boards():
    train, selection = set(K.TRAIN_SEEDS), set(K.SELECTION_SEEDS)
    assert train and selection and not train & selection
    assert not (train | selection) & PUBLIC_PLANTED_SEEDS


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        planted_knockout_id("backup")
    assert planted_knockout_id("self_repair") == "CircuitDiscovery-Planted-SelfRepair-KnockOut-v0"


@pytest.mark.slow
def test_trains_resumes_and_its_selection_score_is_the_replayed_knockout_area(tmp_path, monkeypatch):
    monkeypatch.setattr(K, "SELECTION_SEEDS", K.SELECTION_SEEDS[:1])
    monkeypatch.setattr(K, "KINDS", ("self_repair",))
    config = K.KnockOutPPOConfig(n_envs=1, epochs=1, steps_per_epoch=8, steps_per_collect=8, minibatch=8,
                                 repeat=1, steps=3)  # fmt: skip
    out = tmp_path / "run"
    K.train(config, out, progress=False)
    curve = json.loads((out / "curve.json").read_text())
    assert [row["env_steps"] for row in curve] == [0, 8]
    K.train(K.KnockOutPPOConfig(**{**config.__dict__, "epochs": 2}), out, progress=False)  # resumes, extends
    curve = json.loads((out / "curve.json").read_text())
    assert [row["env_steps"] for row in curve] == [0, 8, 16]

    # the kept policy, replayed: its order's exact curve against exact greedy's, computed here
    policy = load_policy(str(out))
    env = K.make_env(config, "self_repair", K.SELECTION_SEEDS, K.SELECTION_SPLIT, K.SELECTION_BATCH + 1)
    seed = K.SELECTION_SEEDS[0]
    inner = K.selection_episode(env, "self_repair", seed)
    played = play_actions(inner, "planted_self_repair", K.SELECTION_BATCH, policy.act)
    state = inner.state
    exact = knockout_curve(state, played.order)
    np.testing.assert_allclose(played.metrics, exact, rtol=1e-4, atol=1e-4)  # a wrong step's metric breaks it
    greedy = state.greedy_curve(config.steps)[1]
    expected = relative_area(exact, greedy, state.clean_metric, config.steps)
    # policy.pt is the first epoch with the best score (a later tie does not replace it), as max() picks
    best = max(curve, key=lambda row: row["selection_score"])
    assert best["selection_per_kind"]["self_repair"]["relative_area"] == pytest.approx(expected, abs=1e-4)
    assert 0.0 < expected < 3.0


def test_the_prior_adds_a_multiple_of_the_attribution_column_to_head_logits_only():
    """PriorScorer = CircuitScorer (same weights) + prior x attribution on each head's logit; STOP's
    logit untouched; masked actions still -1e9. At a large prior its choice is attribution's argmax."""
    import torch

    from circuit_gym.baselines.circuit_ppo import CircuitScorer
    from circuit_gym.baselines.knockout_policy import KnockOutPPOConfig, make_net
    from circuit_gym.envs.knockout import ATTRIBUTION_COLUMN, N_COLUMNS

    torch.manual_seed(0)
    config = KnockOutPPOConfig(prior=3.0)
    net = make_net(config)
    base = CircuitScorer(n_features=N_COLUMNS, hidden=config.hidden)
    base.load_state_dict({k: v for k, v in net.state_dict().items() if k != "prior"})
    obs = torch.randn(2, 144, N_COLUMNS)
    with torch.no_grad():
        got, want = net.logits(obs), base.logits(obs)
    assert torch.allclose(got[:, :144] - want[:, :144], 3.0 * obs[..., ATTRIBUTION_COLUMN], atol=1e-5)
    assert torch.allclose(got[:, 144], want[:, 144])
    mask = torch.ones(2, 145)
    mask[:, 7] = 0
    assert (net.logits(obs, mask)[:, 7] == -1e9).all()
    big = make_net(KnockOutPPOConfig(prior=1e4))
    obs[..., ATTRIBUTION_COLUMN] = torch.linspace(-1, 1, 144)[torch.randperm(144)]
    with torch.no_grad():
        assert int(big.logits(obs[:1])[0, :144].argmax()) == int(obs[0, :, ATTRIBUTION_COLUMN].argmax())


def test_the_zoo_mix_plays_every_planted_kind_and_only_the_zoos_training_members(monkeypatch):
    """With ``zoo_envs`` > 0, any n_envs consecutive training seeds (the trainer's ``seed + i``, whatever
    the resume offset) give each planted kind once and ``zoo_envs`` environments over zoo v3's training
    members, training tasks, train split; 0 keeps the planted-only assignment (``seed % 6``)."""
    from circuit_gym import embedded
    from circuit_gym.baselines.knockout_policy import KnockOutPPOConfig
    from circuit_gym.envs.registration import entry

    made = []
    monkeypatch.setattr(K, "WithoutInfoKeys", lambda env, keys: env)
    monkeypatch.setattr(
        K,
        "make_env",
        lambda config, kind, seeds, split, pool: made.append(("planted", kind, split)) or object(),
    )
    monkeypatch.setattr(K.gym, "make", lambda env_id, **kw: made.append(("zoo", env_id, kw)) or object())
    config = KnockOutPPOConfig(n_envs=8, zoo_envs=2)
    for base in (0, 13, 1000 + 7 * 8):
        made.clear()
        for i in range(config.n_envs):
            K.make_training_env(config, base + i)
        assert sorted(m[1] for m in made if m[0] == "planted") == sorted(K.KINDS)
        zoo = [m for m in made if m[0] == "zoo"]
        assert len(zoo) == 2 and all(
            kw["model"] == "zoo-v3-train" and kw["split"] == "train" for _, _, kw in zoo
        )
    assert set(embedded.MODEL_SETS["zoo-v3-train"]) == {"zoo9", "zoo11"}
    # Multi: the training tasks only
    assert set(entry(config.zoo_env_id).tasks) == {"agreement", "docstring", "greater_than", "ioi", "pronoun"}
    made.clear()
    planted_only = KnockOutPPOConfig()
    for seed in range(6):
        K.make_training_env(planted_only, seed)
    assert [m[1] for m in made] == list(K.KINDS)
    with pytest.raises(ValueError, match="zoo_envs"):
        KnockOutPPOConfig(n_envs=6, zoo_envs=6)


def test_the_trained_selection_cell_plays_training_members_on_verified_training_tasks_only():
    """The trained selection episodes are zoo v3's training members on training tasks whose pair
    their card verifies (read here from the cards): never a held-out member or task."""
    from circuit_gym import benchmark as B
    from circuit_gym.baselines.knockout_policy import KnockOutPPOConfig
    from circuit_gym.models.loading import embedded_dir

    jobs = K.trained_selection_jobs(KnockOutPPOConfig(n_envs=8, zoo_envs=2, selection_trained=True))
    bench = B.transfer_benchmark("v8")
    assert jobs and {m for m, _ in jobs} <= set(bench.train_models)
    assert {t for _, t in jobs} <= set(bench.train_tasks)
    for member, task in jobs:
        card = json.loads((embedded_dir(member) / "card_metrics.json").read_text())
        assert task in card["suite"]["included"] and card["backup_pairs"][task]["measures"]["meets_bar"]


@pytest.mark.slow
def test_the_trained_selection_cell_is_the_replayed_knockout_area_on_a_held_back_batch(tmp_path, monkeypatch):
    """With ``selection_trained`` the score averages the planted kinds' cells and the trained one; the
    trained cell's area is the one an independent replay gives (exact stacked passes of the order's
    prefixes against exact greedy's curve), on the train-split batch the training never draws."""
    import torch

    from circuit_gym.baselines.knockout_policy import KnockOutPPOConfig, KnockOutPPOPolicy, make_net
    from circuit_gym.envs.knockout import KnockOutEnv

    monkeypatch.setattr(K, "SELECTION_SEEDS", K.SELECTION_SEEDS[:1])
    monkeypatch.setattr(K, "KINDS", ("self_repair",))
    monkeypatch.setattr(K, "trained_selection_jobs", lambda config: (("zoo9", "pronoun"),))
    config = KnockOutPPOConfig(n_envs=2, zoo_envs=1, zoo_pool_size=2, selection_trained=True, steps=2,
                               batch_size_prompts=8)  # fmt: skip
    torch.manual_seed(0)
    net = make_net(config)
    score, reference = K.selection(config, tmp_path, None)
    got = score(net)
    env = KnockOutEnv(model="zoo9", tasks=("pronoun",), split="train", pool_size=3, batch_size=8, steps=2,
                      scores="attribution", observe_last=False)  # fmt: skip
    played = play_actions(env, "pronoun", 2, KnockOutPPOPolicy(net).act)
    state = env.state
    exact = knockout_curve(state, played.order)
    greedy = state.greedy_curve(2)[1]
    env.close()
    expected = relative_area(exact, greedy, state.clean_metric, 2)
    assert reference[K.TRAINED]["zoo9/pronoun"] == pytest.approx(list(greedy), abs=1e-5)
    assert got["selection_per_kind"][K.TRAINED]["relative_area"] == pytest.approx(expected, abs=1e-4)
    cells = [c["relative_area"] for c in got["selection_per_kind"].values()]
    assert len(cells) == 2 and got["selection_score"] == pytest.approx(float(np.mean(cells)))
