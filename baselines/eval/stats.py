"""Statistics over evaluation seeds: interquartile mean, (stratified) bootstrap confidence intervals,
paired differences, probability of improvement, normalized scores.

Intervals are percentile bootstrap intervals from ``scipy.stats.bootstrap`` (the method rliable uses).
With several samples (strata, e.g. one per env) each is resampled on its own: a stratified bootstrap.
The aggregate over envs (IQM with stratified bootstrap intervals, performance profiles) calls rliable itself
(Agarwal et al. 2021). Resampling is seeded, so a report is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

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


@contextmanager
def _global_seed(seed: int) -> Iterator[None]:
    """numpy's global generator seeded for the block, then restored: rliable 1.2 draws its bootstrap indices from
    it (``np.random.choice`` in ``StratifiedBootstrap.update_indices``), ignoring ``random_state``."""
    state = np.random.get_state()  # noqa: NPY002
    np.random.seed(seed)  # noqa: NPY002
    try:
        yield
    finally:
        np.random.set_state(state)  # noqa: NPY002


def aggregate_iqm(scores: Mapping[str, np.ndarray], seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """Per agent, the IQM of its normalized scores over runs and tasks with a stratified bootstrap 95% interval
    (rliable: runs resampled within each task). ``scores[agent]`` has shape (runs, tasks)."""
    from rliable import library as rly
    from rliable import metrics

    with _global_seed(seed):
        points, intervals = rly.get_interval_estimates(
            {agent: np.asarray(x, dtype=np.float64) for agent, x in scores.items()},
            lambda x: np.array([metrics.aggregate_iqm(x)]),
            reps=N_RESAMPLES,
            confidence_interval_size=CONFIDENCE,
        )
    return {a: (float(points[a][0]), float(intervals[a][0, 0]), float(intervals[a][1, 0])) for a in scores}


def performance_profiles(
    scores: Mapping[str, np.ndarray], taus: np.ndarray, seed: int = 0
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """rliable's score distributions: per agent, the fraction of runs (over all tasks) with score > τ, and
    stratified bootstrap 95% bands."""
    from rliable import library as rly

    with _global_seed(seed):
        return rly.create_performance_profile(
            {agent: np.asarray(x, dtype=np.float64) for agent, x in scores.items()},
            taus,
            reps=N_RESAMPLES,
            confidence_interval_size=CONFIDENCE,
        )
