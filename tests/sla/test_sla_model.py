"""The SLA model: projection (Prop. 1), the offline optimum (Prop. 2) against an LP, PG, the static benchmark."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, minimize

from agents.sla.oracles import water_fill
from agents.sla.projection import kl_project
from cluster_envs.common.fluid import capped_cumulative_work
from cluster_envs.sla.model import windowed_sla_gap


def _kl(x, y):
    return float(np.sum(x * np.log(x / y)))


@pytest.mark.parametrize("case", range(40))
def test_projection_matches_slsqp_and_prop1(case):
    rng = np.random.default_rng(case)
    n = int(rng.integers(2, 8))
    eps = float(rng.uniform(0.01, 0.1))
    y = rng.lognormal(0.0, 2.0, size=n)
    x = kl_project(y, eps)
    floor = eps / n
    assert abs(x.sum() - 1) < 1e-12 and x.min() >= floor - 1e-15
    # (a) the clamped users are the smallest y; (b) the others are y scaled by one common factor
    clamped = np.isclose(x, floor, rtol=0, atol=1e-15)
    if clamped.any() and (~clamped).any():
        assert y[clamped].max() <= y[~clamped].min()
    ratio = x[~clamped] / y[~clamped]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    # optimality against a generic solver
    res = minimize(
        lambda v: _kl(v, y), np.full(n, 1 / n), method="SLSQP",
        bounds=[(floor, 1)] * n, constraints=[{"type": "eq", "fun": lambda v: v.sum() - 1}], options={"ftol": 1e-14},
    )  # fmt: skip
    assert _kl(x, y) <= _kl(res.x, y) + 1e-9


def test_projection_is_identity_inside_the_truncated_simplex():
    x = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(kl_project(x, 0.02), x, rtol=1e-15)


def _lp_opt(loads: np.ndarray, capacity: float) -> float:
    """(P_c): max Σ w s.t. prefix work ≤ prefix load per user, Σ_i w_t(i) ≤ c, w ≥ 0 (HiGHS)."""
    n, horizon = loads.shape
    idx = np.arange(n * horizon).reshape(n, horizon)
    rows, rhs = [], []
    for i in range(n):
        for t in range(horizon):
            row = np.zeros(n * horizon)
            row[idx[i, : t + 1]] = 1
            rows.append(row)
            rhs.append(loads[i, : t + 1].sum())
    for t in range(horizon):
        row = np.zeros(n * horizon)
        row[idx[:, t]] = 1
        rows.append(row)
        rhs.append(capacity)
    res = linprog(-np.ones(n * horizon), A_ub=np.array(rows), b_ub=rhs, bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun


def _simulate_pg(loads: np.ndarray, beta: np.ndarray, capacity: float) -> np.ndarray:
    queue = np.zeros(loads.shape[0])
    cumulative = []
    total = 0.0
    for t in range(loads.shape[1]):
        demand = queue + loads[:, t]
        work = water_fill(demand, beta, capacity)
        queue = demand - work
        total += work.sum()
        cumulative.append(total)
    return np.array(cumulative)


@pytest.mark.parametrize("case", range(25))
def test_closed_form_optimum_equals_lp_and_pg(case):
    rng = np.random.default_rng(100 + case)
    n, horizon = int(rng.integers(1, 5)), int(rng.integers(1, 40))
    loads = rng.exponential(1.0 / n, size=(n, horizon)) * rng.integers(0, 2, size=(n, horizon))
    beta = rng.dirichlet(np.ones(n))
    for capacity in (1.0, 0.9):
        closed = capped_cumulative_work(loads.sum(axis=0), capacity)
        assert closed[-1] == pytest.approx(_lp_opt(loads, capacity), abs=1e-7)
        np.testing.assert_allclose(_simulate_pg(loads, beta, capacity), closed, atol=1e-9)
        # the prefix optimum is the LP on the prefix
        t = int(rng.integers(1, horizon + 1))
        assert closed[t - 1] == pytest.approx(_lp_opt(loads[:, :t], capacity), abs=1e-7)


@settings(max_examples=200, deadline=None)
@given(
    demand=st.lists(st.floats(0, 5), min_size=1, max_size=6),
    weights=st.lists(st.floats(0, 1), min_size=6, max_size=6),
    capacity=st.floats(0.01, 1.0),
)
def test_water_fill_is_feasible_and_work_conserving(demand, weights, capacity):
    d = np.array(demand)
    w = np.array(weights[: d.size])
    work = water_fill(d, w, capacity)
    assert (work >= -1e-12).all() and (work <= d + 1e-12).all()
    assert work.sum() == pytest.approx(min(capacity, d.sum()), abs=1e-9)


def test_water_fill_fixes_the_printed_argmin_bug():
    # A13 (iv): the printed argmin_k Rem(k) gives user 2 work 0.9 > its demand 0.6
    np.testing.assert_allclose(water_fill(np.array([0.5, 0.6]), np.array([0.1, 0.9]), 1.0), [0.4, 0.6])


def test_static_benchmark_closed_form_equals_queue_simulation():
    rng = np.random.default_rng(3)
    loads = rng.gamma(2.0, 0.2, size=(3, 500))
    share = np.array([0.2, 0.3, 0.5])
    queue, cumulative = np.zeros(3), np.zeros(3)
    expected = []
    for t in range(loads.shape[1]):
        work = np.minimum(share, queue + loads[:, t])
        queue = queue + loads[:, t] - work
        cumulative += work
        expected.append(cumulative.copy())
    np.testing.assert_allclose(capped_cumulative_work(loads, share), np.array(expected).T, atol=1e-9)


def test_windowed_sla_gap_matches_direct_computation():
    rng = np.random.default_rng(4)
    loads = rng.gamma(2.0, 0.15, size=(2, 80))
    work = rng.uniform(0, 0.3, size=(2, 80))
    start_queue = rng.uniform(0, 2, size=(2, 80))
    share, tau = np.array([0.4, 0.6]), 7
    gap = windowed_sla_gap(loads, start_queue, work, share, tau)
    for i in range(2):
        for t in (0, 13, 73):
            q, acc = start_queue[i, t], 0.0
            for k in range(tau):
                served = min(share[i], q + loads[i, t + k])
                q += loads[i, t + k] - served
                acc += served
            assert gap[i, t] == pytest.approx(acc - work[i, t : t + tau].sum(), abs=1e-12)
