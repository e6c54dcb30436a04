"""The transfer reference baselines of issue 35 items 5 and 6, first fitted on zoo v1: the test-set
memoriser, the single-column policy (fair and ceiling) and the fixed memoriser fitted on zoo v1.

Attacks first: what the board scores must never reach a fit (the memoriser's batches, the fair
column's tasks and models), and a forged checkpoint must be a clear error, not a ranking."""

import json
from pathlib import Path

import numpy as np
import pytest

from circuit_gym import benchmark as B
from circuit_gym.baselines import column_policy, fixed_policy, testset_memoriser
from circuit_gym.baselines.column_policy import ColumnPolicy, choose_fair_rule, parse_rule
from circuit_gym.baselines.testset_memoriser import (
    FitEpisode,
    TestsetMemoriser,
    collect,
    fit,
    fit_centroids,
    nearest_centroid,
    recognition_accuracy,
)
from circuit_gym.envs.features import FEATURE_NAMES
from circuit_gym.envs.pool import EpisodePool

ROOT = Path(__file__).resolve().parents[1]
TRANSFER = ROOT / "docs" / "results" / "transfer"


@pytest.fixture
def batches_read(monkeypatch):
    """Every (model name, task, split, batch index) any pool builds or returns while the test runs:
    the one door to a batch's prompts, features and tables."""
    seen: list[tuple[str, str, str, int]] = []
    original = EpisodePool.episode

    def spy(self, index):
        seen.append((self.model.circuit_gym_info.name, self.task.name, self.split, int(index)))
        return original(self, index)

    monkeypatch.setattr(EpisodePool, "episode", spy)
    return seen


# --------------------------------------------------------------------- the memoriser's fit
def test_memoriser_fit_never_reads_a_batch_the_board_scores(batches_read):
    episodes = collect(("zoo1",), ("capital",), (8, 9))
    assert [(e.model, e.task, e.batch_index) for e in episodes] == [
        ("zoo1", "capital", 8),
        ("zoo1", "capital", 9),
    ]
    assert batches_read and {split for _, _, split, _ in batches_read} == {B.SPLIT}
    assert {i for *_, i in batches_read} == {8, 9}
    assert not {i for *_, i in batches_read} & set(B.TRANSFER_SEEDS)


def test_memoriser_fit_refuses_scored_batches_before_reading_any(batches_read):
    with pytest.raises(ValueError, match=r"batches \[7\] are scored by the board"):
        collect(("zoo1",), ("capital",), (7, 8))
    assert batches_read == []


def test_committed_memorisers_were_fitted_off_the_board_and_agree():
    """The shipped checkpoints: fitted on the public test split's unscored batches of every public
    model; the pooled variant's head scores are the mean of the per-model variant's (the same
    episodes, the same number per model), to the checkpoints' 7 significant digits."""
    pooled_record = json.loads((TRANSFER / "testset_memoriser.json").read_text())
    fitted = pooled_record["fitted_on"]
    assert fitted["split"] == B.SPLIT and not set(fitted["batches"]) & set(B.TRANSFER_SEEDS)
    assert set(fitted["models"]) == set(B.TRAIN_MODELS + B.HELD_OUT_MODELS)
    pooled = TestsetMemoriser.load(TRANSFER / "testset_memoriser.json")
    per_model = TestsetMemoriser.load(TRANSFER / "testset_memoriser_per_model.json")
    assert pooled.labels == per_model.labels
    np.testing.assert_array_equal(pooled.centroids, per_model.centroids)
    tables = dict(zip(per_model.labels, per_model.head_scores, strict=True))
    for (task, _), scores in zip(pooled.labels, pooled.head_scores, strict=True):
        expected = np.mean([s for (t, _), s in tables.items() if t == task], axis=0)
        np.testing.assert_allclose(scores, expected, rtol=1e-6, atol=1e-7 * np.abs(expected).max())


# --------------------------------------------------------------- recognition (nearest centroid)
def test_nearest_centroid_recovers_two_separated_synthetic_clusters():
    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0.0, 5.0, 0.0], [3.0, -2.0, 5.0, 0.0]])  # column 2 constant: no information
    x = np.concatenate([m + rng.normal(0, 0.3, (50, 4)) * [1, 1, 0, 1] for m in means])
    y = np.repeat([0, 1], 50)
    centroids, scale = fit_centroids(x, y, 2)
    np.testing.assert_allclose(centroids, [x[:50].mean(axis=0), x[50:].mean(axis=0)])
    assert scale[2] == 1.0 and np.isclose(scale[0], x[:, 0].std())  # a constant column divides by 1, not 0
    assert [nearest_centroid(v, centroids, scale) for v in x] == y.tolist()
    # Distances are in units of each column's spread: blowing up a noise column changes nothing.
    noisy = x * [1, 1, 1, 1000]
    c2, s2 = fit_centroids(noisy, y, 2)
    assert [nearest_centroid(v, c2, s2) for v in noisy] == y.tolist()
    with pytest.raises(ValueError, match="no fitting signature"):
        fit_centroids(x[:50], y[:50], 2)


def synthetic_episodes(rng, n_heads=6, batches=range(4)) -> list[FitEpisode]:
    """Episodes of 2 tasks x 2 models whose observation columns differ by class, with known rewards."""
    n_cols = len(testset_memoriser.signature_columns())
    out = []
    for ti, task in enumerate(("capital", "minimum")):
        for mi, model in enumerate(("zoo1", "zoo2")):
            base = rng.normal(0, 1, (n_heads, n_cols)) + 4 * (2 * ti + mi)
            for b in batches:
                reward = np.zeros(n_heads)
                reward[(2 * ti + mi) % n_heads] = 1.0 + 0.1 * b  # the class's best head
                out.append(FitEpisode(model, task, b, base + rng.normal(0, 0.05, base.shape), reward))
    return out


@pytest.mark.parametrize("kind", ["mean", "heads"])
def test_memoriser_recognises_synthetic_classes_and_ranks_by_their_tables(kind, tmp_path):
    episodes = synthetic_episodes(np.random.default_rng(1))
    for head_scores in ("pooled", "per_model"):
        memoriser = fit(episodes, head_scores=head_scores, signature_kind=kind)
        assert recognition_accuracy(memoriser, episodes) == {
            "task": 1.0,
            "model": 1.0,
            "episodes": len(episodes),
        }
        memoriser.save(tmp_path / "m.json")
        loaded = TestsetMemoriser.load(tmp_path / "m.json")
        for e in episodes[::4]:
            obs = np.zeros((6, len(FEATURE_NAMES)), dtype=np.float32)
            obs[:, loaded.indices] = e.columns
            assert loaded.recognise(obs) == (e.task, e.model)
            same = [
                x.reward
                for x in episodes
                if x.task == e.task and (head_scores == "pooled" or x.model == e.model)
            ]
            np.testing.assert_allclose(loaded.rank_heads(obs), np.mean(same, axis=0), rtol=1e-6)


# ---------------------------------------------------------------------- forged checkpoints
def write(tmp_path, record) -> str:
    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps(record))
    return str(path)


def memoriser_record(n_heads=4) -> dict:
    columns = testset_memoriser.signature_columns()
    return {"kind": testset_memoriser.KIND, "features": "attention", "columns": columns, "signature": "mean",
            "scale": [1.0] * len(columns),
            "classes": [{"task": "capital", "model": "zoo1", "centroid": [0.0] * len(columns),
                         "head_scores": list(range(n_heads))}]}  # fmt: skip


@pytest.mark.parametrize(
    "forge, message",
    [
        (lambda r: r.update(kind="fixed"), "is not a testset-memoriser checkpoint"),
        (lambda r: r.pop("scale"), "lacks"),
        (lambda r: r.update(columns=r["columns"][:-1] + ["answer_logit"]), "signature columns must be"),
        (lambda r: r.update(signature="everything"), "signature must be one of"),
        (lambda r: r["classes"].append({**r["classes"][0], "head_scores": [1.0, 2.0]}), "one score per head"),
        (lambda r: r["classes"][0].update(head_scores=[]), "one score per head"),
        (lambda r: r["classes"][0].update(centroid=[float("nan")] * len(r["columns"])), "NaN or infinite"),
        (lambda r: r["classes"][0].update(centroid=[0.0]), "centroid must have shape"),
        (lambda r: r.update(scale=[0.0] * len(r["columns"])), "scale must be positive"),
        (lambda r: r.update(classes=[]), "at least one class"),
        (lambda r: r["classes"][0].pop("head_scores"), "every class has"),
    ],
)
def test_forged_memoriser_checkpoint_is_a_clear_error(tmp_path, forge, message):
    record = memoriser_record()
    TestsetMemoriser.load(write(tmp_path, record))  # the unforged record loads
    forge(record)
    with pytest.raises(ValueError, match=message):
        testset_memoriser.make_policy(write(tmp_path, record))


def test_memoriser_refuses_an_observation_of_another_head_count(tmp_path):
    policy = testset_memoriser.make_policy(write(tmp_path, memoriser_record(n_heads=4)))
    np.testing.assert_array_equal(policy.rank_heads(np.zeros((4, len(FEATURE_NAMES)))), [0, 1, 2, 3])
    with pytest.raises(ValueError, match="observations of shape"):
        policy.rank_heads(np.zeros((144, len(FEATURE_NAMES))))


@pytest.mark.parametrize(
    "record, message",
    [
        ({"column": "answer_logit", "sign": 1, "features": "attention"}, "unknown column"),
        ({"column": "ablated", "sign": 1, "features": "attention"}, "unknown column"),  # a state column
        ({"column": "last_copy", "sign": 2, "features": "attention"}, "sign must be"),
        ({"column": "last_copy", "sign": True, "features": "attention"}, "sign must be"),
        ({"column": "last_copy", "sign": "1", "features": "attention"}, "sign must be"),
        ({"column": "last_copy", "sign": 1, "features": "secret"}, "unknown feature set"),
        ({"column": "last_copy", "sign": 1}, "has 'column', 'sign' and 'features'"),
        ([1, 2, 3], "has 'column', 'sign' and 'features'"),
    ],
)
def test_forged_column_checkpoint_is_a_clear_error(tmp_path, record, message):
    with pytest.raises(ValueError, match=message):
        column_policy.make_policy(write(tmp_path, record))


def test_column_policy_ranks_by_its_column_and_refuses_other_observations(tmp_path):
    policy = column_policy.make_policy(
        write(tmp_path, {"column": "entropy", "sign": -1, "features": "attention"})
    )
    obs = np.random.default_rng(0).random((144, len(FEATURE_NAMES))).astype(np.float32)
    np.testing.assert_array_equal(
        policy.rank_heads(obs), -obs[:, FEATURE_NAMES.index("entropy")].astype(np.float64)
    )
    with pytest.raises(ValueError, match="observations"):
        policy.rank_heads(obs[:, :-1])
    assert parse_rule(policy.rule) == ("entropy", -1)


def test_forged_fixed_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="one finite number per head"):
        fixed_policy.make_policy(write(tmp_path, {"scores": [1.0, float("nan")]}))
    policy = fixed_policy.make_policy(str(TRANSFER / "fixed_policy.json"))
    with pytest.raises(ValueError, match="fitted on 144 heads"):
        policy.rank_heads(np.zeros((16, len(FEATURE_NAMES))))


# ------------------------------------------------------------------------ the fair column
class FakeEnv:
    """Stands in for a transfer env: random observations and tables, its resets recorded."""

    def __init__(self, model, tasks, split, rng, resets):
        self.model, self.tasks, self.split, self.rng, self.resets = model, tasks, split, rng, resets
        self.unwrapped = self

    def reset(self, options):
        assert options["task"] in self.tasks
        self.resets.append((self.model, options["task"], self.split, options["batch_index"]))
        self.episode = type("E", (), {"table": type("T", (), {"reward": self.rng.normal(size=144)})})
        return self.rng.random((144, len(FEATURE_NAMES))).astype(np.float32), {}

    def close(self):
        pass


def test_fair_column_is_chosen_from_training_tasks_of_training_models_only():
    """Every environment the fair choice builds, and every episode it resets to, is a training task
    of a training model on the eval split; the rule is the best of what those episodes score."""
    rng, built, resets = np.random.default_rng(0), [], []

    def make_env(model, tasks, split, pool_size, features="attention"):
        built.append((model, tuple(tasks), split, pool_size))
        return FakeEnv(model, tasks, split, rng, resets)

    rule, rules = choose_fair_rule(episodes=3, make_env=make_env)
    assert built == [(m, B.TRANSFER_TRAIN_TASKS, "eval", 3) for m in B.TRAIN_MODELS]
    assert sorted(resets) == sorted(
        (m, t, "eval", i) for m in B.TRAIN_MODELS for t in B.TRANSFER_TRAIN_TASKS for i in range(3)
    )
    assert rule == column_policy.best_rule(rules) and len(rules) == 2 * len(
        column_policy.rule_columns("attention")
    )


@pytest.mark.slow
def test_fair_column_never_builds_an_env_or_reads_a_batch_held_out(monkeypatch, batches_read):
    """The same on the real environments (10 eval tables, about 2 minutes cold on one core)."""
    from circuit_gym.baselines import transfer_envs

    built = []
    real = transfer_envs.transfer_env

    def recording(model, tasks, split, pool_size, features="attention"):
        built.append((model, tuple(tasks), split))
        return real(model, tasks, split, pool_size, features)

    monkeypatch.setattr(transfer_envs, "transfer_env", recording)
    rule, rules = choose_fair_rule(episodes=1)
    assert {m for m, _, _ in built} == set(B.TRAIN_MODELS)
    assert {t for _, ts, _ in built for t in ts} == set(B.TRANSFER_TRAIN_TASKS)
    assert {s for _, _, s in built} == {"eval"}
    assert {(m, s) for m, _, s, _ in batches_read} <= {(m, "eval") for m in B.TRAIN_MODELS}
    assert {t for _, t, _, _ in batches_read} <= set(B.TRANSFER_TRAIN_TASKS)
    assert rule == column_policy.best_rule(rules) and parse_rule(rule)


@pytest.mark.parametrize(
    "kwargs",
    [{"tasks": ("ioi", "brackets")}, {"models": ("zoo1", "zoo2")}, {"split": "test"}],
)
def test_fair_column_refuses_anything_held_out(kwargs, batches_read):
    with pytest.raises(ValueError, match="fair rule"):
        choose_fair_rule(episodes=1, **kwargs)
    assert batches_read == []


def test_committed_column_checkpoint_is_the_reports_fair_rule():
    """Zoo v1's board entry and its feature-ceiling report (docs/results/feature_ceiling/zoo_v1.json)
    agree on the fair rule, chosen on training tasks of training models; the ceiling is another rule."""
    record = json.loads((TRANSFER / "column_policy.json").read_text())
    report = json.loads((ROOT / "docs" / "results" / "feature_ceiling" / "zoo_v1.json").read_text())
    policy = ColumnPolicy.load(TRANSFER / "column_policy.json")
    assert (
        policy.rule == record["rule"] == report["fair_rule"] == column_policy.best_rule(report["rules_train"])
    )
    assert record["fitted_on"]["models"] == list(B.TRAIN_MODELS) == report["train_models"]
    assert (
        record["fitted_on"]["tasks"] == list(B.TRANSFER_TRAIN_TASKS)
        and record["fitted_on"]["split"] == "eval"
    )
    assert report["ceiling_rule"] == column_policy.best_rule(report["rules_held_out"])
