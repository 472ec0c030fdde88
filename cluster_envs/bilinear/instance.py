"""Problem instances of the bilinear queueing model: features, the parameter θ, and the oracle LP.

Sec. V of the paper draws every feature entry and every entry of θ from U[0, 1] and normalises each
vector to unit L2 norm. θ = vec(Θ) stacks the ROWS of Θ, so z_ij = vec(u_i v_jᵀ) = ``np.outer(u_i,
v_j).ravel()`` and r_ij = z_ijᵀθ = u_iᵀΘv_j (spec §2.1).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog


def unit_rows(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """``rows`` vectors of U[0, 1] entries, each normalised to unit L2 norm."""
    x = rng.uniform(0.0, 1.0, size=(rows, cols))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


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


def oracle_lp(r: np.ndarray, rho: np.ndarray, caps: np.ndarray) -> tuple[float, np.ndarray]:
    """The fluid oracle of eq. (1): max Σ r_ij ρ_i p_ij s.t. Σ_i ρ_i p_ij ≤ n_j, Σ_j p_ij = 1, p ≥ 0.

    Returns (r*, ρ_i p*_ij). Solved with HiGHS; infeasible only when ρ > Σ n_j.
    """
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
