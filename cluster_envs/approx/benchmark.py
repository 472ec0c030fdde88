"""The offline benchmark of Eq. 7 (spec §4.6): true mean rates, all jobs known, fractional relaxation.

One job (Lemma 4): the optimum is constant in time, the fractional knapsack x* = argmax θ·x s.t. p·x ≤ B/T.
Many jobs: the segment-aggregated concave program, solved with scipy's SLSQP (exact for the relaxation;
intended for small instances). ``opt_per_job`` returns OPT_j, the benchmark's per-job term of Eq. 6, which
the env accrues at OPT_j/(d_j − a_j) per active slot so that the cumulative regret ends at Reg_T.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from cluster_envs.approx.model import Jobs
from cluster_envs.approx.simulator import perspective, utility, utility_derivative

BENCHMARK_KINDS = ("eq6", "p1", "thm3")
WORK_FLOOR = 1e-9


def fractional_knapsack(means: np.ndarray, prices: np.ndarray, per_slot_budget: float) -> np.ndarray:
    """x* ∈ [0,1]^M maximizing θ·x s.t. p·x ≤ b: machines by θ_i/p_i, the last one fractional."""
    order = np.argsort(-means / prices, kind="stable")
    x = np.zeros_like(means)
    cumulative = np.cumsum(prices[order])
    full = cumulative <= per_slot_budget
    x[order[full]] = 1.0
    n_full = int(full.sum())
    if n_full < means.size:
        spent = cumulative[n_full - 1] if n_full else 0.0
        x[order[n_full]] = (per_slot_budget - spent) / prices[order[n_full]]
    return x


def single_job_opt(kind: str, value: float, beta: float, means, prices, budget: float, horizon: int) -> float:
    """OPT = T f(θ·x*) of one job with a_1 = 0, d_1 = T (Lemma 4; every benchmark kind gives the same x*)."""
    x = fractional_knapsack(means, prices, budget / horizon)
    per_slot = float(means @ x)
    return float(horizon * utility(kind, np.array([value]), beta, np.array([per_slot]))[0])


def segments(jobs: Jobs, horizon: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Segment lengths L_s and active sets J_s between consecutive distinct arrival/deadline times."""
    edges = np.unique(np.concatenate([[0, horizon], jobs.arrival, jobs.deadline]))
    lengths, members = [], []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        active = np.flatnonzero((jobs.arrival <= lo) & (jobs.deadline >= hi))
        if active.size:
            lengths.append(hi - lo)
            members.append(active)
    return np.asarray(lengths, dtype=np.float64), members


def multi_job_opt(
    kind: str, beta: float, jobs: Jobs, means: np.ndarray, prices: np.ndarray, horizon: int, benchmark: str
) -> np.ndarray:
    """OPT_j for every job: the optimum of the segment-aggregated program scored as in Eq. 6 (or L517)."""
    lengths, members = segments(jobs, horizon)
    m = means.size
    # Variable z[v, i] ∈ [0, 1]: the fraction of machine i's L_s slots given to job j in segment s.
    owner = np.concatenate(members)
    seg_of = np.repeat(np.arange(len(members)), [len(a) for a in members])
    n_var = owner.size
    weight = lengths[seg_of][:, None] * means[None, :]  # work per unit of z
    cost = lengths[seg_of][:, None] * prices[None, :]
    life = (jobs.deadline - jobs.arrival).astype(np.float64)
    value = jobs.value

    def job_work(z):
        return np.bincount(owner, weights=(weight * z).sum(axis=1), minlength=jobs.count)

    def objective(flat):
        z = flat.reshape(n_var, m)
        if benchmark == "thm3":
            seg_work = np.maximum((weight * z).sum(axis=1), WORK_FLOOR)
            val = perspective(kind, value[owner], beta, seg_work, lengths[seg_of])
            slope = utility_derivative(kind, value[owner], beta, seg_work / lengths[seg_of])
            return -val.sum(), -(slope[:, None] * weight).ravel()
        x = np.maximum(job_work(z), WORK_FLOOR)
        scale = life if benchmark == "eq6" else np.ones_like(life)
        val = perspective(kind, value, beta, x, scale)
        slope = utility_derivative(kind, value, beta, x / scale)
        return -val.sum(), -(slope[owner][:, None] * weight).ravel()

    capacity_rows = np.zeros((len(members) * m, n_var * m))
    for v in range(n_var):
        capacity_rows[seg_of[v] * m + np.arange(m), v * m + np.arange(m)] = 1.0
    budget_rows = np.zeros((jobs.count, n_var * m))
    for v in range(n_var):
        budget_rows[owner[v], v * m : (v + 1) * m] = cost[v]
    a_ub = np.vstack([capacity_rows, budget_rows])
    b_ub = np.concatenate([np.ones(len(members) * m), jobs.budget])
    counts = np.array([len(a) for a in members], dtype=np.float64)
    start = np.minimum(1.0 / counts[seg_of], 1.0)[:, None] * np.ones((1, m))
    spend = np.bincount(owner, weights=(cost * start).sum(axis=1), minlength=jobs.count)
    start *= np.minimum(1.0, 0.5 * jobs.budget / np.maximum(spend, 1e-300))[owner][:, None]
    scale = abs(objective(start.ravel())[0]) + 1.0  # SLSQP's ftol is absolute: solve at unit scale

    def scaled(flat):
        value, grad = objective(flat)
        return value / scale, grad / scale

    result = minimize(
        scaled,
        start.ravel(),
        jac=True,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * (n_var * m),
        constraints=[{"type": "ineq", "fun": lambda f: b_ub - a_ub @ f, "jac": lambda f: -a_ub}],
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    z = np.clip(result.x.reshape(n_var, m), 0.0, 1.0)
    if benchmark == "thm3":
        seg_val = perspective(kind, value[owner], beta, (weight * z).sum(axis=1), lengths[seg_of])
        return np.bincount(owner, weights=seg_val, minlength=jobs.count)
    return perspective(kind, value, beta, job_work(z), life)


def opt_per_job(
    kind: str, beta: float, jobs: Jobs, means: np.ndarray, prices: np.ndarray, horizon: int, benchmark: str
) -> np.ndarray:
    """OPT_j of every job (closed form for one job spanning the horizon, else the convex program)."""
    if jobs.count == 1 and jobs.arrival[0] == 0 and jobs.deadline[0] == horizon:
        return np.array([single_job_opt(kind, jobs.value[0], beta, means, prices, jobs.budget[0], horizon)])
    return multi_job_opt(kind, beta, jobs, means, prices, horizon, benchmark)
