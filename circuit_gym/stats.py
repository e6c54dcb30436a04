"""Every statistic the package reports, each computed by ``scipy.stats`` (no hand-written
quantile tables or interval formulas anywhere else).

- :func:`mean_ci95` / :func:`mean_ci_columns`: mean with a Student-t interval
  (``scipy.stats.ttest_1samp(...).confidence_interval``);
- :func:`wilson_ci95`: Wilson score interval of a rate
  (``scipy.stats.binomtest(...).proportion_ci(method="wilson")``);
- :func:`spearman`: Spearman rank correlation (``scipy.stats.spearmanr``, average ranks for ties);
- :func:`ratio_of_sums_ci95`: paired bootstrap interval of a ratio of sums
  (``scipy.stats.bootstrap``, BCa, fixed seed);
- :func:`t_tests_against_zero`: one-sample t-tests of many columns at once, with p-values
  adjusted for multiple comparisons (``scipy.stats.false_discovery_control``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
ADJUSTMENTS = {
    "bh": "Benjamini-Hochberg (false discovery rate; scipy.stats.false_discovery_control, method='bh')",
    "by": "Benjamini-Yekutieli (false discovery rate under any dependence; "
    "scipy.stats.false_discovery_control, method='by')",
}


def mean_ci_columns(
    x: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column of ``x`` ([n, m], finite): mean and two-sided Student-t interval, vectorised.

    With fewer than two rows the interval is undefined and comes back NaN.
    """
    mean, lo, hi, _ = _t_columns(_as_columns(x), confidence)
    return mean, lo, hi


def _as_columns(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be [observations, columns], got shape {x.shape}")
    return x


def _t_columns(x: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, t interval and two-sided p-value of mean == 0, per column (scipy's ``ttest_1samp``)."""
    n, m = x.shape
    nan = np.full(m, np.nan)
    if n < 2:
        return (x.mean(axis=0) if n else nan.copy()), nan.copy(), nan.copy(), nan.copy()
    mean = x.mean(axis=0)
    # A constant column has a zero-width interval and p = 0 (or undefined when it is all 0);
    # scipy says the same but warns about precision loss, so only the others go to scipy.
    constant = np.ptp(x, axis=0) == 0
    lo, hi = mean.copy(), mean.copy()
    p = np.where(mean != 0, 0.0, np.nan)
    if not constant.all():
        test = stats.ttest_1samp(x[:, ~constant], 0.0, axis=0)
        ci = test.confidence_interval(confidence)
        lo[~constant], hi[~constant], p[~constant] = ci.low, ci.high, test.pvalue
    return mean, lo, hi, p


def mean_ci95(values: Sequence[float]) -> tuple[float, list[float]]:
    """Mean of the finite values and its 95% Student-t interval (NaN interval below two values)."""
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=np.float64)
    if len(x) == 0:
        return float("nan"), [float("nan"), float("nan")]
    mean, lo, hi = mean_ci_columns(x[:, None])
    return float(mean[0]), [float(lo[0]), float(hi[0])]


def wilson_ci95(hits: int, n: int) -> list[float]:
    """95% Wilson score interval of the rate ``hits / n`` (NaN when ``n == 0``)."""
    if n == 0:
        return [float("nan"), float("nan")]
    ci = stats.binomtest(int(hits), int(n)).proportion_ci(CONFIDENCE, method="wilson")
    return [float(ci.low), float(ci.high)]


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties); NaN when either side is constant."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"spearman needs two 1-D sequences of one length, got {a.shape} and {b.shape}")
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")  # undefined; scipy would say the same with a warning
    return float(stats.spearmanr(a, b).statistic)


def adjust_pvalues(p: np.ndarray, method: str = "bh") -> np.ndarray:
    """Multiple-comparison adjusted p-values (``method`` in :data:`ADJUSTMENTS`).

    NaN p-values (tests that could not be run) stay NaN but still count as tests, as if
    their p-value were 1, so they can only make the adjustment more conservative.
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"method must be one of {sorted(ADJUSTMENTS)}, got {method!r}")
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p must be 1-D, got shape {p.shape}")
    if p.size == 0:
        return p.copy()
    missing = ~np.isfinite(p)
    adjusted = stats.false_discovery_control(np.where(missing, 1.0, p), method=method)
    return np.where(missing, np.nan, adjusted)


@dataclass(frozen=True)
class ColumnTests:
    """Per column: mean, 95% interval, raw and adjusted two-sided p-values of mean == 0."""

    n: int
    mean: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    p_adjusted: np.ndarray
    method: str
    alpha: float

    @property
    def significant(self) -> np.ndarray:
        """Columns whose *adjusted* p-value is at most ``alpha``."""
        with np.errstate(invalid="ignore"):
            return self.p_adjusted <= self.alpha

    @property
    def significant_raw(self) -> np.ndarray:
        """Columns whose unadjusted p-value is at most ``alpha`` (for comparison only)."""
        with np.errstate(invalid="ignore"):
            return self.p_value <= self.alpha


def t_tests_against_zero(x: np.ndarray, alpha: float = 0.05, method: str = "bh") -> ColumnTests:
    """Two-sided one-sample t-test of mean == 0 for every column of ``x`` ([n, m]) at once,
    with the p-values adjusted across the m columns (``method`` in :data:`ADJUSTMENTS`).

    The interval is each column's own 95% interval (marginal, not simultaneous, whatever ``alpha``).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if method not in ADJUSTMENTS:
        raise ValueError(f"method must be one of {sorted(ADJUSTMENTS)}, got {method!r}")
    x = _as_columns(x)
    mean, lo, hi, p = _t_columns(x, CONFIDENCE)
    return ColumnTests(len(x), mean, lo, hi, p, adjust_pvalues(p, method), method, alpha)


BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 0  # fixed: the same episodes always give the same interval


def _ratio_of_sums(chosen: np.ndarray, oracle: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(chosen, axis=axis) / np.sum(oracle, axis=axis)


def ratio_of_sums_ci95(chosen: Sequence[float], oracle: Sequence[float]) -> list[float]:
    """95% interval of ``sum(chosen) / sum(oracle)`` from ``scipy.stats.bootstrap``, resampling
    episodes (the pairs stay together), BCa with a fixed seed; the percentile interval where BCa
    is undefined. Needs positive ``oracle`` values; NaN below two episodes, a zero-width interval
    when every episode has the same ratio."""
    chosen, oracle = np.asarray(chosen, dtype=np.float64), np.asarray(oracle, dtype=np.float64)
    if len(chosen) < 2:
        return [float("nan"), float("nan")]
    ratios = chosen / oracle
    if np.ptp(ratios) == 0:  # every resample has this ratio; scipy would warn and give NaN
        value = float(_ratio_of_sums(chosen, oracle))
        return [value, value]
    return _paired_bootstrap_ci95((chosen, oracle), _ratio_of_sums)


def _paired_bootstrap_ci95(samples: tuple[np.ndarray, ...], statistic) -> list[float]:
    """95% interval of ``statistic`` from ``scipy.stats.bootstrap`` resampling episodes (the
    arrays stay paired): BCa with a fixed seed, the percentile interval where BCa is undefined."""
    for method in ("BCa", "percentile"):
        ci = stats.bootstrap(samples, statistic, n_resamples=BOOTSTRAP_RESAMPLES, paired=True, vectorized=True,
                             method=method, rng=np.random.default_rng(BOOTSTRAP_SEED)).confidence_interval  # fmt: skip
        if np.isfinite(ci.low) and np.isfinite(ci.high):
            break
    return [float(ci.low), float(ci.high)]


def _difference_of_ratios(a: np.ndarray, b: np.ndarray, oracle: np.ndarray, axis: int = -1) -> np.ndarray:
    return (np.sum(a, axis=axis) - np.sum(b, axis=axis)) / np.sum(oracle, axis=axis)


def recovery_difference_ci95(
    a: Sequence[float], b: Sequence[float], oracle: Sequence[float]
) -> tuple[float, list[float]]:
    """How far recovery ``sum(a) / sum(oracle)`` is above ``sum(b) / sum(oracle)``, two solvers
    on the same episodes, with a 95% interval from a paired bootstrap over episodes (the
    triples stay together: BCa, fixed seed; percentile where BCa is undefined)."""
    a, b, oracle = (np.asarray(x, dtype=np.float64) for x in (a, b, oracle))
    if not len(a) == len(b) == len(oracle):
        raise ValueError(
            f"need one value per episode for both solvers and the oracle, got {len(a)}, {len(b)}, {len(oracle)}"
        )
    value = float(_difference_of_ratios(a, b, oracle))
    if len(a) < 2:
        return value, [float("nan"), float("nan")]
    if np.ptp((a - b) / oracle) == 0:  # every resample gives the same difference
        return value, [value, value]
    return value, _paired_bootstrap_ci95((a, b, oracle), _difference_of_ratios)
