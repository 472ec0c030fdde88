"""The package's one interval rule, and the statistics built on it.

**The rule.** Every interval is a 95% percentile bootstrap of ``scipy.stats.bootstrap`` over *seed indices*
(``seed_bootstrap``). Resampling the evaluation-seed index resamples every array indexed by it together: the agent,
the naive anchor and the clairvoyant anchor of a seed stay paired (common random numbers), so an interval measures
the agent, not how different the instances are. An RL row is a (training seeds × evaluation seeds) matrix: its
training-seed index and its evaluation-seed index are resampled independently of each other, a two-level (crossed)
bootstrap in which training is one source of variance and the instances the other. Resampling is seeded, so a report
is reproducible. ``interval_over`` is the sentence every table header prints.

**Normalized scores.** On each evaluation seed the headline metric is normalized by *that seed's* anchors. The
point estimate and its interval are a ratio of means, (mean agent − mean naive) / (mean oracle − mean naive) over
the (resampled) seeds, so a seed with a wide anchor span weighs more than one with a narrow span, instead of a
narrow span blowing up one seed's score. The "runs" fed to rliable's aggregates are paired per seed too: a
reference agent's run is an evaluation seed, scored against its own anchors; an RL run is a training seed, scored
by the ratio of its means over the evaluation seeds.

**Bad input** is an error naming the argument: an interval on fewer than 2 evaluation seeds, or a normalization
whose anchors coincide on a seed (the protocol drops such degenerate seeds before it normalizes:
``baselines.eval.compare.Comparison.degenerate_seeds``).

The aggregates over envs (IQM with stratified bootstrap intervals, probability of improvement, performance
profiles) call rliable itself (Agarwal et al. 2021).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
N_RESAMPLES = 2000
BATCH = 250  # resamples per call of the statistic: bounds memory for per-step curves (seeds × steps per resample)
DEGENERATE_TOLERANCE = 1e-9  # anchors within this relative distance coincide (float noise, e.g. regret 0 vs 1e-13)

Statistic = Callable[[np.ndarray | None, np.ndarray], np.ndarray]


def iqm(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """The interquartile mean: the mean of the middle 50% (25% trimmed from each end)."""
    return stats.trim_mean(values, 0.25, axis=axis)


def check_seed_count(n_eval: int) -> None:
    if n_eval < 2:
        raise ValueError(
            f"an interval needs at least 2 evaluation seeds, got {n_eval}; pass more seeds (e.g. --seeds 0-4)"
        )


def interval_over(n_eval: int, n_train: int = 1) -> str:
    """What an interval of ``seed_bootstrap`` runs over, as every table header says it."""
    seeds = f"{n_eval} evaluation seed{'s' if n_eval != 1 else ''}"
    if n_eval < 2:
        return f"no interval ({seeds})"
    if n_train > 1:
        return f"{CONFIDENCE:.0%} two-level bootstrap over {n_train} training seeds × {seeds}"
    return f"{CONFIDENCE:.0%} paired bootstrap over {seeds}"


def seed_bootstrap(statistic: Statistic, n_eval: int, n_train: int = 1, *, seed: int = 0) -> tuple[Any, Any]:
    """The interval rule: a percentile bootstrap interval of ``statistic(train, evals)``, where ``evals`` holds
    resampled evaluation-seed indices (shape (resamples, n_eval)) and ``train`` resampled training-seed indices
    (resamples, n_train), or None with one training seed. The statistic returns one value per resample (shape
    (resamples,)) or several (k, resamples), e.g. a curve's points. Returns (low, high): floats, or arrays of k."""
    check_seed_count(n_eval)
    samples = (np.arange(n_eval),) if n_train < 2 else (np.arange(n_train), np.arange(n_eval))

    def resampled(*indices: np.ndarray, axis: int = -1) -> np.ndarray:
        train, evals = (None, *indices) if len(indices) == 1 else indices
        return statistic(train, evals)

    result = stats.bootstrap(
        samples,
        resampled,
        vectorized=True,
        paired=False,  # each index its own sample: one level per index (a single index resamples paired arrays)
        confidence_level=CONFIDENCE,
        n_resamples=N_RESAMPLES,
        batch=BATCH,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    low, high = result.confidence_interval
    return (float(low), float(high)) if np.ndim(low) == 0 else (np.asarray(low), np.asarray(high))


def as_matrix(values: np.ndarray) -> np.ndarray:
    """Values per evaluation seed (n_eval,) or per training seed and evaluation seed (n_train, n_eval, ...), as the
    latter (one row for an agent that does not train)."""
    x = np.asarray(values, dtype=np.float64)
    return x[None] if x.ndim == 1 else x


def _resample(matrix: np.ndarray, train: np.ndarray | None, evals: np.ndarray) -> np.ndarray:
    """``matrix`` (n_train, n_eval, ...) at the resampled indices: (resamples, n_train, n_eval, ...)."""
    if train is None:
        train = np.zeros((*evals.shape[:-1], matrix.shape[0]), dtype=np.intp) + np.arange(matrix.shape[0])
    return matrix[train[..., :, None], evals[..., None, :]]


def mean_interval(values: np.ndarray) -> tuple[float, float]:
    """The interval of the mean of ``values`` (per evaluation seed, or a (training seeds, evaluation seeds)
    matrix: two-level)."""
    x = as_matrix(values)

    def mean(train: np.ndarray | None, evals: np.ndarray) -> np.ndarray:
        return _resample(x, train, evals).mean(axis=(-2, -1))

    return seed_bootstrap(mean, x.shape[1], x.shape[0])


def curve_band(traces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per step, the interval of the mean of ``traces`` (training seeds, evaluation seeds, steps)."""
    x = np.asarray(traces, dtype=np.float64)

    def mean(train: np.ndarray | None, evals: np.ndarray) -> np.ndarray:
        return np.moveaxis(_resample(x, train, evals).mean(axis=(-3, -2)), -1, 0)

    return seed_bootstrap(mean, x.shape[1], x.shape[0])


def improvement_indicator(diff: np.ndarray, direction: int) -> np.ndarray:
    """1 where the difference is an improvement in the metric's direction, 0.5 for a tie, 0 otherwise."""
    signed = direction * np.asarray(diff, dtype=np.float64)
    return np.where(signed > 0, 1.0, np.where(signed == 0, 0.5, 0.0))


def degenerate(naive: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Per evaluation seed, whether its anchors coincide (to ``DEGENERATE_TOLERANCE``, relative to their size):
    no score can be normalized on such a seed."""
    naive, top = np.broadcast_arrays(np.asarray(naive, dtype=np.float64), np.asarray(top, dtype=np.float64))
    scale = np.maximum(1.0, np.maximum(np.abs(naive), np.abs(top)))
    return np.abs(top - naive) <= DEGENERATE_TOLERANCE * scale


def check_anchors(naive: np.ndarray, top: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The anchors per evaluation seed as float arrays of one length (a scalar ``top``, a closed-form optimum, is
    broadcast); an error when they coincide on some seed."""
    naive = np.asarray(naive, dtype=np.float64)
    if naive.ndim != 1:
        raise ValueError(f"naive must hold one value per evaluation seed, got shape {naive.shape}")
    top = np.broadcast_to(np.asarray(top, dtype=np.float64), naive.shape)
    same = np.flatnonzero(degenerate(naive, top))
    if same.size:
        which = "every" if same.size == naive.size else f"{same.size} of the {naive.size}"
        raise ValueError(
            f"the naive and clairvoyant anchors coincide on {which} evaluation seed(s) (positions {same.tolist()}), "
            "so no score can be normalized there; drop those seeds first (the protocol's degenerate-instance rule)"
        )
    return naive, top


def per_seed_scores(values: np.ndarray, naive: np.ndarray, top: np.ndarray) -> np.ndarray:
    """(x_s − naive_s) / (top_s − naive_s) per evaluation seed s (the last axis of ``values``): 0 at the naive
    anchor's value on that seed, 1 at the clairvoyant anchor's (either direction of the metric)."""
    naive, top = check_anchors(naive, top)
    return (np.asarray(values, dtype=np.float64) - naive) / (top - naive)


def _ratio_of_means(x: np.ndarray, naive: np.ndarray, top: np.ndarray, train, evals) -> np.ndarray:
    agent = _resample(x, train, evals).mean(axis=(-2, -1))
    low, high = naive[evals].mean(axis=-1), top[evals].mean(axis=-1)
    return (agent - low) / (high - low)


def normalized_score(
    values: np.ndarray, naive: np.ndarray, top: np.ndarray, trains: bool = False
) -> dict[str, float | None]:
    """The normalized score of ``values`` (per evaluation seed, or (training seeds, evaluation seeds)) against the
    anchors per evaluation seed: the ratio of means, its interval (``seed_bootstrap``; None below 2 evaluation
    seeds, with the reason in ``no_interval``), the IQM of its runs (``run_scores``; ``trains``: an RL agent's) and
    their count."""
    naive, top = check_anchors(naive, top)
    x = as_matrix(values)
    if x.shape[1] != naive.size:
        raise ValueError(f"values has {x.shape[1]} evaluation seeds, the anchors {naive.size}")
    runs = run_scores(x, naive, top, trains)
    everything = np.arange(naive.size)
    row: dict[str, float | None] = {
        "mean": float(_ratio_of_means(x, naive, top, None, everything)),
        "iqm": float(iqm(runs)),
        "runs": int(runs.size),
        "ci_low": None,
        "ci_high": None,
    }
    if naive.size < 2:
        row["no_interval"] = "one evaluation seed"
        return row
    row["ci_low"], row["ci_high"] = seed_bootstrap(
        lambda train, evals: _ratio_of_means(x, naive, top, train, evals), x.shape[1], x.shape[0]
    )
    return row


def normalized(values: np.ndarray, naive: float, top: float) -> np.ndarray:
    """(x − naive) / (top − naive) against anchors that are means over the same evaluation seeds as each x (a ratio
    of means: an RL run's score, ``run_scores``); an error when the anchors coincide."""
    if degenerate(naive, top):
        raise ValueError(f"the anchors coincide (naive {naive!r}, clairvoyant {top!r}): no score can be normalized")
    return (np.asarray(values, dtype=np.float64) - naive) / (top - naive)


def run_scores(values: np.ndarray, naive: np.ndarray, top: np.ndarray, trains: bool = False) -> np.ndarray:
    """The runs rliable aggregates, paired per seed: per evaluation seed its normalized score for an agent that does
    not train (one row); per training seed the ratio of its means over the evaluation seeds for an RL agent
    (``trains``)."""
    naive, top = check_anchors(naive, top)
    x = as_matrix(values)
    if not trains:
        return per_seed_scores(x[0], naive, top)
    return normalized(x.mean(axis=1), naive.mean(), top.mean())


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


def probability_of_improvement(
    scores: Mapping[str, np.ndarray], pairs: list[tuple[str, str]], seed: int = 0
) -> dict[tuple[str, str], tuple[float, float, float]]:
    """Per pair (x, y), rliable's probability that a run of x beats a run of y on the same task, averaged over the
    tasks, with its stratified bootstrap 95% interval. ``scores[agent]`` has shape (runs, tasks), the same tasks."""
    from rliable import library as rly
    from rliable import metrics

    pair_scores = {f"{x},{y}": [np.asarray(scores[x]), np.asarray(scores[y])] for x, y in pairs}
    with _global_seed(seed):
        points, intervals = rly.get_interval_estimates(
            pair_scores,
            metrics.probability_of_improvement,
            reps=N_RESAMPLES,
            confidence_interval_size=CONFIDENCE,
        )
    return {
        (x, y): (float(np.squeeze(points[f"{x},{y}"])), *map(float, np.ravel(intervals[f"{x},{y}"]))) for x, y in pairs
    }


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
