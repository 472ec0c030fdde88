"""Problem instances of the bilinear queueing model: features, the parameter θ, and the oracle LP.

Sec. V of the paper draws every feature entry and every entry of θ from U[0, 1] and normalises each
vector to unit L2 norm. θ = vec(Θ) stacks the ROWS of Θ, so z_ij = vec(u_i v_jᵀ) = ``np.outer(u_i,
v_j).ravel()`` and r_ij = z_ijᵀθ = u_iᵀΘv_j (spec §2.1).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.optimize import linprog


def unit_rows(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """``rows`` vectors of U[0, 1] entries, each normalised to unit L2 norm."""
    return normalised(rng.uniform(0.0, 1.0, size=(rows, cols)))


def normalised(x: np.ndarray) -> np.ndarray:
    """x with each vector along the last axis divided by its L2 norm (a stack of instances at once)."""
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def sample_instance(rng: np.random.Generator, n_job: int, n_server: int, dim: int) -> tuple[np.ndarray, ...]:
    """(u, v, θ) in the order u, then v, then θ (spec §3.2)."""
    u = unit_rows(rng, n_job, dim)
    v = unit_rows(rng, n_server, dim)
    theta = unit_rows(rng, 1, dim * dim)[0]
    return u, v, theta


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """z of shape (I, J, d²) with z[i, j] = vec(u_i v_jᵀ), row-major."""
    return np.einsum("ia,jb->ijab", u, v).reshape(u.shape[0], v.shape[0], -1)


def mean_rewards(u: np.ndarray, v: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """r_ij = u_iᵀ Θ v_j with Θ = θ reshaped row-major to (d, d)."""
    d = u.shape[1]
    return u @ theta.reshape(d, d) @ v.T


ASSIGNMENT_MARGIN = 1e-6  # the closed form only this far from a tie or a binding capacity (HiGHS's tolerances: 1e-7)


def oracle_lp(r: np.ndarray, rho: np.ndarray, caps: np.ndarray) -> tuple[float, np.ndarray]:
    """The fluid oracle of eq. (1): max Σ r_ij ρ_i p_ij s.t. Σ_i ρ_i p_ij ≤ n_j, Σ_j p_ij = 1, p ≥ 0.

    Returns (r*, ρ_i p*_ij), exactly as ``scipy.optimize.linprog(method="highs")`` returns them (the former
    implementation; tests compare them bit for bit). When every class has a clear best server class and the
    classes fit their best server classes, the optimum is that assignment and :func:`_assignment_optimum` computes
    it as HiGHS does; otherwise HiGHS solves the LP. Infeasible only when ρ > Σ n_j.
    """
    fast = _assignment_optimum(r, rho, caps)
    return fast if fast is not None else _highs_optimum(r, rho, caps)


def _assignment_optimum(r: np.ndarray, rho: np.ndarray, caps: np.ndarray) -> tuple[float, np.ndarray] | None:
    """:func:`assignment_optima` of one instance: (r*, ρ_i p*_ij), or None where HiGHS must solve it."""
    r_star, alloc, found = np.zeros(1), np.zeros((1, *r.shape)), np.zeros(1, dtype=np.bool_)
    assignment_optima(np.ascontiguousarray(r, dtype=np.float64)[None], rho, caps, r_star, alloc, found)
    return (float(r_star[0]), alloc[0]) if found[0] else None


@njit(cache=True)
def assignment_optima(r, rho, caps, r_star, alloc, found):
    """The LP optimum of each instance k (``r[k]``: I × J) where p_ij = 1 for j = argmax_j r_ij is feasible with
    slack and optimal by a margin: r* into ``r_star[k]``, ρ_i p*_ij into ``alloc[k]``, and ``found[k]``; elsewhere
    ``found[k]`` is False. HiGHS returns that vertex with x ∈ {0, 1} and its objective Σ_k c_k x_k summed in
    column order (c = -(r ρ), row-major), and so does this. Only for J = 2: with more server classes HiGHS's
    vertex is not always exactly 0/1 (tested)."""
    n_job, n_server = r.shape[1], r.shape[2]
    for k in range(r.shape[0]):
        found[k] = False
        if n_server != 2:
            continue
        ok, load_0, load_1 = True, 0.0, 0.0
        for i in range(n_job):
            best = 0 if r[k, i, 0] >= r[k, i, 1] else 1  # np.argmax: the first maximum
            gap = r[k, i, best] - r[k, i, 1 - best]
            ok = ok and rho[i] > 0 and not gap * rho[i] < ASSIGNMENT_MARGIN
            if best == 0:  # the load of each server class, summed in class order (np.bincount)
                load_0 += rho[i]
            else:
                load_1 += rho[i]
            for j in range(n_server):
                alloc[k, i, j] = rho[i] * (1.0 if j == best else 0.0)
        if not ok or load_0 > caps[0] - ASSIGNMENT_MARGIN or load_1 > caps[1] - ASSIGNMENT_MARGIN:
            continue
        objective = 0.0
        for i in range(n_job):
            for j in range(n_server):
                objective += -(r[k, i, j] * rho[i]) * (1.0 if alloc[k, i, j] != 0.0 else 0.0)
        r_star[k], found[k] = -objective, True


def _highs_optimum(r: np.ndarray, rho: np.ndarray, caps: np.ndarray) -> tuple[float, np.ndarray]:
    n_job, n_server = r.shape
    cost = -(r * rho[:, None]).ravel()
    a_ub = np.zeros((n_server, n_job * n_server))
    a_eq = np.zeros((n_job, n_job * n_server))
    for j in range(n_server):
        a_ub[j, j::n_server] = rho
    for i in range(n_job):
        a_eq[i, i * n_server : (i + 1) * n_server] = 1.0
    res = linprog(cost, A_ub=a_ub, b_ub=caps, A_eq=a_eq, b_eq=np.ones(n_job), bounds=(0, None), method="highs")
    if res.status != 0:
        raise ValueError(f"the oracle LP is infeasible for capacities {caps.tolist()}: {res.message}")
    p = res.x.reshape(n_job, n_server)
    return float(-res.fun), rho[:, None] * p
