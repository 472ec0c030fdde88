"""H4-H6: projection P4 and rounding, the offline benchmark, the on/off machine generator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from cluster_envs.approx.model import (
    ONOFF_MEAN_RATE,
    STATIONARY_AP,
    Jobs,
    ap_time,
    fractional_knapsack,
    make_rate_process,
    multi_job_opt,
    opt_per_job,
    single_job_opt,
)
from cluster_envs.approx.projection import categorical_round, project_columns


def _projection_by_enumeration(y: np.ndarray) -> np.ndarray:
    """Exact projection onto {z ≥ 0, Σz ≤ 1}: the nearest feasible KKT candidate (y − η)_S."""
    best, best_dist = None, np.inf
    for size in range(len(y) + 1):
        for support in itertools.combinations(range(len(y)), size):
            s = list(support)
            eta = max(0.0, (y[s].sum() - 1.0) / size) if size else 0.0
            z = np.zeros_like(y)
            z[s] = y[s] - eta
            if (z < 0).any() or z.sum() > 1 + 1e-12:
                continue
            dist = ((z - y) ** 2).sum()
            if dist < best_dist:
                best, best_dist = z, dist
    return best


def test_h4_projection_matches_exact_enumeration():
    rng = np.random.default_rng(0)
    for _ in range(200):
        k = int(rng.integers(1, 6))
        y = rng.normal(0.3, 0.8, size=(k, 7))
        z = project_columns(y)
        for i in range(7):
            np.testing.assert_allclose(z[:, i], _projection_by_enumeration(y[:, i]), atol=1e-10)


def test_h4_projection_ignores_inactive_rows():
    y = np.array([[0.9, -np.inf], [0.8, 2.0], [-np.inf, 0.5]])
    z = project_columns(y)
    np.testing.assert_allclose(z, [[0.55, 0.0], [0.45, 1.0], [0.0, 0.0]], atol=1e-12)


def test_h4_categorical_rounding_is_unbiased_and_respects_capacity():
    rng = np.random.default_rng(1)
    x = project_columns(rng.uniform(0, 0.6, size=(4, 6)))
    draws = 20_000
    counts = np.zeros_like(x)
    for _ in range(draws):
        occupant = categorical_round(x, rng)
        assert occupant.shape == (6,) and occupant.min() >= 0 and occupant.max() <= 4
        counts[occupant[occupant > 0] - 1, np.flatnonzero(occupant > 0)] += 1
    sigma = np.sqrt(x * (1 - x) / draws)
    assert (np.abs(counts / draws - x) <= 4 * sigma + 1e-12).all()


def test_h5_single_job_closed_form_equals_lp_solution():
    rng = np.random.default_rng(2)
    for _ in range(50):
        m = int(rng.integers(2, 12))
        means, prices = rng.uniform(0.1, 0.9, m), rng.uniform(0.2, 1.0, m)
        b = float(rng.uniform(0.1, prices.sum() * 1.2))
        x = fractional_knapsack(means, prices, b)
        lp = linprog(-means, A_ub=prices[None, :], b_ub=[b], bounds=[(0, 1)] * m, method="highs")
        np.testing.assert_allclose(means @ x, -lp.fun, rtol=1e-9, atol=1e-12)
        assert prices @ x <= b + 1e-9 and (x >= 0).all() and (x <= 1).all()
        opt = single_job_opt("log", 2.0, 0.5, means, prices, b * 100, 100)
        np.testing.assert_allclose(opt, 100 * 2.0 * np.log1p(-lp.fun), rtol=1e-9)


def _lp_optimum(jobs: Jobs, means, prices, horizon) -> float:
    """Linear utility: the fractional benchmark is an LP over x_j^i(t) per slot, solved by HiGHS."""
    n, m = jobs.count, means.size
    n_var = n * m * horizon
    c = np.zeros(n_var)
    bounds = []
    for j, i, t in itertools.product(range(n), range(m), range(horizon)):
        active = jobs.arrival[j] <= t < jobs.deadline[j]
        c[(j * m + i) * horizon + t] = -jobs.value[j] * means[i]
        bounds.append((0, 1 if active else 0))
    rows, rhs = [], []
    for i, t in itertools.product(range(m), range(horizon)):
        row = np.zeros(n_var)
        row[[(j * m + i) * horizon + t for j in range(n)]] = 1
        rows.append(row)
        rhs.append(1)
    for j in range(n):
        row = np.zeros(n_var)
        for i in range(m):
            row[(j * m + i) * horizon : (j * m + i + 1) * horizon] = prices[i]
        rows.append(row)
        rhs.append(jobs.budget[j])
    return -linprog(c, A_ub=np.array(rows), b_ub=rhs, bounds=bounds, method="highs").fun


def test_h5_multi_job_program_matches_slotwise_lp_for_linear_utility():
    rng = np.random.default_rng(3)
    jobs = Jobs(np.array([0, 3, 5]), np.array([8, 12, 9]), np.array([4.0, 6.0, 2.0]), np.array([1.0, 2.5, 4.0]))
    means, prices = rng.uniform(0.2, 0.9, 4), rng.uniform(0.3, 1.0, 4)
    ours = multi_job_opt("linear", 1.0, jobs, means, prices, 12, "eq6").sum()
    np.testing.assert_allclose(ours, _lp_optimum(jobs, means, prices, 12), rtol=1e-6)


def test_h5_multi_job_program_dominates_random_feasible_schedules_and_thm3_is_weaker():
    rng = np.random.default_rng(4)
    jobs = Jobs(np.array([0, 2, 4]), np.array([10, 7, 12]), np.array([5.0, 4.0, 6.0]), np.array([1.0, 3.0, 2.0]))
    means, prices = rng.uniform(0.2, 0.9, 3), rng.uniform(0.3, 1.0, 3)
    eq6 = opt_per_job("power", 0.5, jobs, means, prices, 12, "eq6").sum()
    thm3 = opt_per_job("power", 0.5, jobs, means, prices, 12, "thm3").sum()
    assert thm3 <= eq6 + 1e-6
    life = (jobs.deadline - jobs.arrival).astype(float)
    for _ in range(300):  # random per-slot schedules, scaled down to feasibility
        x = (
            rng.random((3, 3, 12))
            * np.array([[(jobs.arrival[j] <= t < jobs.deadline[j]) for t in range(12)] for j in range(3)])[:, None, :]
        )
        x /= np.maximum(1.0, x.sum(axis=0, keepdims=True))
        spend = np.einsum("jit,i->j", x, prices)
        x *= np.minimum(1.0, jobs.budget / spend)[:, None, None]
        work = np.einsum("jit,i->j", x, means)
        assert (life * jobs.value * np.sqrt(work / life)).sum() <= eq6 + 1e-6


def test_h6_onoff_generator_statistics():
    rng = np.random.default_rng(5)
    horizon, m = 20_000, 200
    process = make_rate_process("onoff_gamma", rng, np.random.default_rng(6), m, horizon, (0.1, 0.9), 0.0)
    total_ap = ap_time(process.ends, process.is_ap, np.array([float(horizon)]))[0]
    assert abs(total_ap.mean() / horizon - STATIONARY_AP) < 0.01
    rates = np.array([process.rates(t) for t in range(1, horizon + 1)])
    assert abs(rates.mean() - ONOFF_MEAN_RATE) < 0.01
    assert abs(ONOFF_MEAN_RATE - 0.697) < 0.001 and abs(STATIONARY_AP - 0.809) < 0.001
    assert (rates >= 0).all() and (rates <= 1).all()
    np.testing.assert_allclose(process.means, rates.mean(axis=0), atol=0.02)
    centred = rates - rates.mean(axis=0)
    lag1 = (centred[1:] * centred[:-1]).mean() / centred.var()
    assert 0.85 < lag1 < 0.93  # spec §5.2.1: ≈ 0.89


@pytest.mark.parametrize("kind", ["iid_bernoulli", "iid_uniform", "iid_beta"])
def test_iid_rate_processes_have_their_means(kind):
    rng = np.random.default_rng(7)
    process = make_rate_process(kind, rng, np.random.default_rng(8), 5, 20_000, (0.1, 0.9), 0.0)
    rates = np.array([process.rates(t) for t in range(1, 20_001)])
    assert (rates >= 0).all() and (rates <= 1).all()
    np.testing.assert_allclose(rates.mean(axis=0), process.means, atol=0.015)
