"""Statistics over evaluation seeds: interquartile mean, (stratified) bootstrap confidence intervals,
paired differences, probability of improvement, normalized scores.

Intervals are percentile bootstrap intervals from ``scipy.stats.bootstrap`` (the method rliable uses).
With several samples (strata, e.g. one per env) each is resampled on its own: a stratified bootstrap.
Resampling is seeded, so a report is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
N_RESAMPLES = 2000


def iqm(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """The interquartile mean: the mean of the middle 50% (25% trimmed from each end)."""
    return stats.trim_mean(values, 0.25, axis=axis)


def bootstrap_ci(
    samples: Sequence[np.ndarray] | np.ndarray,
    statistic: Callable[..., np.ndarray] = np.mean,
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile bootstrap interval of ``statistic`` over the pooled samples, each sample (stratum)
    resampled on its own. ``statistic(values, axis=-1)`` must reduce along the last axis. NaN when a
    stratum has fewer than two values."""
    strata = [np.asarray(samples, dtype=np.float64)] if np.ndim(samples[0]) == 0 else samples
    strata = [np.asarray(s, dtype=np.float64) for s in strata]
    if any(s.size < 2 for s in strata):
        return (np.nan, np.nan)
    pooled = np.concatenate(strata)
    if np.ptp(pooled) == 0:  # every resample gives the same value
        value = float(statistic(pooled, axis=-1))
        return (value, value)

    def pooled_statistic(*xs: np.ndarray, axis: int = -1) -> np.ndarray:
        return statistic(np.concatenate(xs, axis=axis), axis=axis)

    result = stats.bootstrap(
        tuple(strata),
        pooled_statistic,
        vectorized=True,
        paired=False,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))


def improvement_indicator(diff: np.ndarray, direction: int) -> np.ndarray:
    """1 where the difference is an improvement in the metric's direction, 0.5 for a tie, 0 otherwise."""
    signed = direction * np.asarray(diff, dtype=np.float64)
    return np.where(signed > 0, 1.0, np.where(signed == 0, 0.5, 0.0))


def normalized(values: np.ndarray, naive: float, oracle: float) -> np.ndarray:
    """(x - naive) / (oracle - naive): 0 at the naive baseline's mean, 1 at the oracle's (either direction)."""
    span = oracle - naive
    if not np.isfinite(span) or span == 0:
        return np.full(np.shape(values), np.nan)
    return (np.asarray(values, dtype=np.float64) - naive) / span
