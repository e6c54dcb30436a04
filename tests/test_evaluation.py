import math
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

from circuit_gym.ablation import ContrastiveScorer, SweepTable
from circuit_gym.evaluation import (
    RECOVERY_CLIP,
    evaluate,
    oracle_recovery,
    recovery_summary,
    summarize,
)
from circuit_gym.policy import InvalidScoresError, check_scores
from circuit_gym.stats import (
    adjust_pvalues,
    mean_ci95,
    mean_ci_columns,
    ratio_of_sums_ci95,
    spearman,
    wilson_ci95,
)

# Two-sided 95% t quantiles in closed form: 1 degree of freedom is the Cauchy distribution,
# 2 degrees of freedom have F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
T975_DF1 = math.tan(math.pi * (0.975 - 0.5))  # 12.7062...
T975_DF2 = (2 * 0.975 - 1) / math.sqrt(2 * 0.975 * 0.025)  # 4.3027...


def _wilson_by_hand(hits: int, n: int, z: float = 1.959963984540054) -> list[float]:
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [centre - half, centre + half]


def test_mean_interval_against_closed_form_t_quantiles():
    mean, (lo, hi) = mean_ci95([1.0, 2.0])
    assert mean == 1.5
    assert hi - mean == pytest.approx(T975_DF1 * 0.5, rel=1e-9)  # sd/sqrt(2) = 0.5
    mean, (lo, hi) = mean_ci95([1.0, 2.0, 6.0])
    assert mean == 3.0
    assert (lo, hi) == pytest.approx((3 - T975_DF2 * math.sqrt(7 / 3), 3 + T975_DF2 * math.sqrt(7 / 3)))
    assert mean_ci95([float("nan"), 2.0, 4.0])[0] == 3.0  # non-finite values are dropped
    assert mean_ci95([5.0, 5.0, 5.0]) == (5.0, [5.0, 5.0])
    # one value has no interval; none has no mean
    assert mean_ci95([2.0])[0] == 2.0 and np.isnan(mean_ci95([2.0])[1]).all()
    assert np.isnan(mean_ci95([])[0])


def test_mean_interval_covers_95_percent_in_simulation():
    """4 normal draws per sample: the t interval covers the true mean 95% of the time; an
    interval with the normal quantile 1.96 (the usual hand-written shortcut) covers ~88%."""
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(4, 20_000))
    mean, lo, hi = mean_ci_columns(x)
    coverage = np.mean((lo < 3.0) & (hi > 3.0))
    assert coverage == pytest.approx(0.95, abs=0.006)  # 4 binomial standard errors
    normal_half = 1.959964 * x.std(axis=0, ddof=1) / 2
    assert np.mean(np.abs(mean - 3.0) < normal_half) < 0.9
    one = mean_ci95(x[:, 7])
    assert one[0] == pytest.approx(mean[7]) and one[1] == pytest.approx([lo[7], hi[7]])


def test_wilson_interval_against_the_closed_form():
    for hits, n in [(8, 10), (1, 3), (0, 5), (5, 5), (37, 120)]:
        assert wilson_ci95(hits, n) == pytest.approx(_wilson_by_hand(hits, n), abs=1e-9)
    assert wilson_ci95(8, 10) == pytest.approx([0.490, 0.943], abs=1e-3)  # published example
    assert wilson_ci95(0, 5)[0] == pytest.approx(0.0, abs=1e-12)
    assert wilson_ci95(5, 5)[1] == pytest.approx(1.0, abs=1e-12)
    assert np.isnan(wilson_ci95(0, 0)).all()


def test_spearman_against_hand_computed_values():
    a = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6]  # no ties: rho = 1 - 6 sum d^2 / (n (n^2 - 1))
    b = [2.0, 7.0, 1.0, 8.0, 2.5, 3.0]
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    assert spearman(a, b) == pytest.approx(1 - 6 * np.sum((ra - rb) ** 2) / (6 * 35))
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties get average ranks: ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4) give 3 / sqrt(10)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(3 / math.sqrt(10))
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="one length"):
        spearman([1, 2], [1, 2, 3])


def test_adjusted_p_values_against_hand_computed_benjamini_hochberg():
    p = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.060, 0.074, 0.205])
    # BH by hand: p_(i) * m / i, then the running minimum from the largest p down
    bh = [0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.074 * 8 / 7, 0.205]
    assert adjust_pvalues(p) == pytest.approx(bh)
    order = np.random.default_rng(1).permutation(len(p))
    assert adjust_pvalues(p[order]) == pytest.approx(np.asarray(bh)[order])  # input order is kept
    harmonic = sum(1 / i for i in range(1, 9))  # Benjamini-Yekutieli: BH times sum 1/i, at most 1
    assert adjust_pvalues(p, "by") == pytest.approx(np.minimum(1.0, np.asarray(bh) * harmonic))
    # an untestable (NaN) p-value stays NaN but still counts as a test
    with_nan = adjust_pvalues(np.array([0.01, np.nan]))
    assert with_nan[0] == pytest.approx(0.02) and np.isnan(with_nan[1])
    with pytest.raises(ValueError, match="method"):
        adjust_pvalues(p, "holm")


def test_check_scores_rejects_bad_outputs():
    assert check_scores([1, 2, 3], 3).dtype == np.float64
    for bad in ([1, 2], [[1, 2, 3]], [1, np.nan, 3], ["a", "b", "c"], None):
        with pytest.raises(InvalidScoresError):
            check_scores(bad, 3)


def test_oracle_recovery_definition():
    assert oracle_recovery(1.5, 2.0) == 0.75
    assert oracle_recovery(-1.0, 2.0) == -0.5
    assert np.isnan(oracle_recovery(1.0, 0.0)) and np.isnan(oracle_recovery(1.0, -0.5))


# --------------------------------------------------- evaluation on hand-made tables
# Three episodes of a 4-head "model", lam = 0.5. Rewards worked out by hand from the damages:
#   episode 0: task (1, 3, 2, 0.5), general (0, 2, 1, 3) -> rewards (1, 2, 1.5, -1), oracle head 1
#   episode 1: task (2, 0, 0, 0),   general 0            -> rewards (2, 0, 0, 0),    oracle head 0
#   episode 2: task (-1, -2, -0.5, -3), general 0        -> no positive oracle (head 2, -0.5)
DAMAGES = [
    ([1.0, 3.0, 2.0, 0.5], [0.0, 2.0, 1.0, 3.0]),
    ([2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]),
    ([-1.0, -2.0, -0.5, -3.0], [0.0, 0.0, 0.0, 0.0]),
]
REWARDS = [[1.0, 2.0, 1.5, -1.0], [2.0, 0.0, 0.0, 0.0], [-1.0, -2.0, -0.5, -3.0]]


class HandMadeEnv:
    """Just enough of CircuitDiscoveryEnv for ``evaluate``: hand-made tables, hand-computed rewards."""

    n_total, split = 4, "eval"

    def __init__(self) -> None:
        self.unwrapped = self
        self.episode = None

    def reset(self, options):
        i = options["batch_index"]
        task_damage, general_damage = DAMAGES[i]
        table = SweepTable(model="hand", weights_hash="-", task=options["task"], split="eval", seed=i,
                           batch_size=1, ablation="zero", lam=0.5, reference="-", n_layers=2, n_heads=2,
                           clean_metric=0.0, clean_general_loss=0.0, task_damage=np.array(task_damage),
                           general_damage=np.array(general_damage))  # fmt: skip
        pool = SimpleNamespace(task=SimpleNamespace(name=options["task"]))
        self.episode = SimpleNamespace(table=table, index=i, pool=pool)
        return np.zeros((4, 12), np.float32), {}

    def action_mask(self):
        return np.ones(4, dtype=np.int8)

    def single_head_rewards(self, heads):
        return np.array([REWARDS[self.episode.index][h] for h in heads])


def test_recovery_and_top1_of_a_wrong_ranker_on_hand_made_tables():
    # always prefers head 2, then 0, 1, 3: right only in episode 2 (which has no positive oracle)
    results = evaluate(HandMadeEnv(), lambda obs, env: np.array([0.5, 0.1, 1.0, 0.0]), "wrong", ["ioi"],
                       range(3), ks=(1, 2, 3))  # fmt: skip
    rows = {r["k"]: r for r in summarize(results)}
    # k=1: head 2 everywhere -> rewards 1.5 and 0 against oracle rewards 2 and 2 (episode 2 has
    # no positive oracle: counted, not in the ratio); top-1 only in episode 2
    assert [r.recovery for r in results if r.k == 1][:2] == [0.75, 0.0]
    assert rows[1]["recovery"] == pytest.approx((1.5 + 0.0) / (2.0 + 2.0))
    # Two episodes resampled in pairs: the bootstrap ratio is 0 (1/4 of resamples), 0.375 (1/2)
    # or 0.75 (1/4), so the 2.5% and 97.5% quantiles are the two extremes.
    assert rows[1]["recovery_ci95"] == pytest.approx([0.0, 0.75])
    assert rows[1]["recovery_clipped_mean"] == pytest.approx(0.375)
    assert rows[1]["top1_rate"] == pytest.approx(1 / 3)
    assert rows[1]["top1_ci95"] == pytest.approx(_wilson_by_hand(1, 3))
    assert rows[1]["episodes"] == 3 and rows[1]["episodes_without_positive_oracle"] == 1
    assert rows[1]["episodes_with_positive_oracle"] == 2
    # k=2 tries heads 2 and 0: 1.5 of 2 in episode 0, 2 of 2 in episode 1
    assert rows[2]["recovery"] == pytest.approx(3.5 / 4.0)
    assert rows[2]["recovery_ci95"] == pytest.approx([0.75, 1.0])
    assert rows[2]["top1_rate"] == pytest.approx(2 / 3)
    # k=3 reaches the oracle head in every episode
    assert rows[3]["recovery"] == 1.0 and rows[3]["recovery_ci95"] == [1.0, 1.0]
    assert rows[3]["top1_rate"] == 1.0


def test_recovery_is_a_ratio_of_sums_so_a_tiny_oracle_cannot_dominate():
    # episode 0 has a tiny positive oracle reward and a harmful choice: its ratio is -1000
    rewards, oracle = [-0.001, 1.0, 0.9, 0.8, 0.5], [1e-6, 1.0, 1.0, 1.0, -0.2]
    s = recovery_summary(rewards, oracle, [False, True, False, False, False])
    assert s["recovery"] == pytest.approx((-0.001 + 1.0 + 0.9 + 0.8) / (1e-6 + 3.0))
    old_mean = np.mean([oracle_recovery(r, o) for r, o in zip(rewards[:4], oracle[:4], strict=True)])
    assert old_mean < -200  # the mean of ratios this replaces
    assert s["episodes"] == 5 and s["episodes_without_positive_oracle"] == 1
    lo, hi = RECOVERY_CLIP
    assert s["recovery_clip"] == [lo, hi]
    assert s["recovery_clipped_mean"] == pytest.approx((lo + 1.0 + 0.9 + 0.8) / 4)
    assert s == recovery_summary(rewards, oracle, [False, True, False, False, False])  # deterministic
    with pytest.raises(ValueError, match="one length"):
        recovery_summary([1.0], [1.0, 2.0], [True])


def test_recovery_interval_matches_an_independent_paired_bootstrap():
    rng = np.random.default_rng(3)
    oracle = rng.uniform(0.2, 3.0, 48)
    chosen = oracle * rng.uniform(0.2, 1.0, 48)
    lo, hi = ratio_of_sums_ci95(chosen, oracle)
    idx = np.random.default_rng(11).integers(0, 48, size=(20_000, 48))  # resample episodes, pairs together
    boot = chosen[idx].sum(axis=1) / oracle[idx].sum(axis=1)
    assert lo < chosen.sum() / oracle.sum() < hi
    assert [lo, hi] == pytest.approx(np.percentile(boot, [2.5, 97.5]), abs=0.01)
    # unpaired resampling would be much wider: the pairing is what the interval relies on
    other = np.random.default_rng(12).integers(0, 48, size=(20_000, 48))
    unpaired = chosen[idx].sum(axis=1) / oracle[other].sum(axis=1)
    assert np.subtract(*np.percentile(unpaired, [97.5, 2.5])) > 1.5 * (hi - lo)
    assert np.isnan(ratio_of_sums_ci95([1.0], [2.0])).all()


def test_recovery_difference_interval_matches_an_independent_paired_bootstrap():
    from circuit_gym.stats import recovery_difference_ci95

    rng = np.random.default_rng(5)
    oracle = rng.uniform(0.2, 3.0, 48)
    a = oracle * rng.uniform(0.5, 1.0, 48)  # a solver that transfers
    b = oracle * rng.uniform(0.0, 0.8, 48)  # a memoriser on the same episodes
    value, (lo, hi) = recovery_difference_ci95(a, b, oracle)
    assert value == pytest.approx(a.sum() / oracle.sum() - b.sum() / oracle.sum())
    idx = np.random.default_rng(11).integers(0, 48, size=(20_000, 48))  # episodes resampled as triples
    boot = (a[idx].sum(1) - b[idx].sum(1)) / oracle[idx].sum(1)
    assert lo < value < hi and [lo, hi] == pytest.approx(np.percentile(boot, [2.5, 97.5]), abs=0.01)
    assert recovery_difference_ci95(a, a, oracle) == (0.0, [0.0, 0.0])  # a solver is not above itself
    with pytest.raises(ValueError, match="one value per episode"):
        recovery_difference_ci95(a, b[:-1], oracle)


def test_fixed_head_ranker_on_the_embedded_model_matches_a_separate_scorer(tiny_model):
    """End to end on the real environment: a ranker that always picks head 5 must score the
    recovery R(5) / R(oracle), with R(5) measured by a separately built ContrastiveScorer."""
    env = gym.make("CircuitDiscovery-Toy-Multi-v1", split="eval", pool_size=3, batch_size=4)
    scores = -np.abs(np.arange(16) - 5.0)  # head 5 first, then its neighbours
    results = evaluate(env, lambda obs, e: scores, "head5", ["ioi"], range(3), ks=(1, 16))
    base = env.unwrapped
    pool = base.pool("ioi")
    for r in results:
        episode = pool.episode(r.batch_index)
        scorer = ContrastiveScorer(
            tiny_model, pool.task, episode.batch, pool.reference, pool.ablation, pool.lam
        )
        oracle = max(scorer.reward([h]) for h in range(16))
        if r.k == 1:
            assert r.head == 5
            assert r.reward == pytest.approx(scorer.reward([5]), abs=1e-5)
            expected = scorer.reward([5]) / oracle if oracle > 0 else float("nan")
            assert r.recovery == pytest.approx(expected, abs=1e-4, nan_ok=True)
        else:  # trying every head finds the oracle
            assert r.reward == pytest.approx(oracle, abs=1e-5)
            assert r.top1 and (r.recovery == pytest.approx(1.0) or oracle <= 0)
