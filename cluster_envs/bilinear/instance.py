"""Problem instances of the bilinear queueing model: features, the parameter θ, and the oracle LP.

Sec. V of the paper draws every feature entry and every entry of θ from U[0, 1] and normalises each
vector to unit L2 norm. θ = vec(Θ) stacks the ROWS of Θ, so z_ij = vec(u_i v_jᵀ) = ``np.outer(u_i,
v_j).ravel()`` and r_ij = z_ijᵀθ = u_iᵀΘv_j (spec §2.1).
"""

from __future__ import annotations

import numpy as np
from numba import njit


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

    Returns (r*, ρ_i p*_ij). In x = ρp it is a transportation problem (class i ships ρ_i, server class j takes at
    most n_j, a unit on (i, j) earns r_ij), solved exactly by :func:`transport`; infeasible only when Σρ > Σ n_j.
    """
    r = np.ascontiguousarray(r, dtype=np.float64)
    rho, caps = np.asarray(rho, dtype=np.float64), np.asarray(caps, dtype=np.float64)
    x = np.zeros(r.shape)
    if not transport(r, rho, caps, x):
        raise ValueError(f"the oracle LP is infeasible for capacities {caps.tolist()}: Σρ = {rho.sum():.6g} > Σn")
    return float((r * x).sum()), x


@njit(cache=True)
def transport(r, supply, caps, x):
    """Max-reward transportation by successive shortest paths (Bellman–Ford on the residual graph); False if
    the supply exceeds the capacity.

    From x = 0 (no cycle, so no negative one), each round ships along a cheapest path (cost −r, reverse arcs
    where x > 0) from a class with supply left to a server class with room, as much as the path allows: each
    round exhausts a supply, fills a capacity or empties an arc, and the flow stays optimal for its value.
    """
    n_i, n_j = r.shape
    left, room = supply.copy(), caps.copy()
    tol = 1e-12 * max(1.0, supply.sum(), caps.sum())
    # a relaxation must gain more than rounding can: a cycle of ties (e.g. r_ij − r_ij' + r_i'j' − r_i'j) may
    # round to a tiny negative cost, and following it would loop
    eps = 1e-12 * max(1.0, np.abs(r).max())
    dist_i, dist_j = np.empty(n_i), np.empty(n_j)
    pred_i, pred_j = np.empty(n_i, np.int64), np.empty(n_j, np.int64)
    for _ in range(4 * (n_i + 1) * (n_j + 1)):  # rounds; far more than an exact run needs
        if left.max() <= tol:
            return True
        dist_i[:], dist_j[:], pred_i[:], pred_j[:] = np.inf, np.inf, -1, -1
        for i in range(n_i):
            if left[i] > tol:
                dist_i[i] = 0.0
        for _sweep in range(n_i + n_j + 1):
            changed = False
            for i in range(n_i):
                if dist_i[i] < np.inf:
                    for j in range(n_j):
                        if dist_i[i] - r[i, j] < dist_j[j] - eps:
                            dist_j[j], pred_j[j], changed = dist_i[i] - r[i, j], i, True
            for j in range(n_j):
                if dist_j[j] < np.inf:
                    for i in range(n_i):
                        if x[i, j] > tol and dist_j[j] + r[i, j] < dist_i[i] - eps:
                            dist_i[i], pred_i[i], changed = dist_j[j] + r[i, j], j, True
            if not changed:
                break
        sink = -1
        for j in range(n_j):
            if room[j] > tol and dist_j[j] < np.inf and (sink < 0 or dist_j[j] < dist_j[sink]):
                sink = j
        if sink < 0:
            return False
        amount, j, i = room[sink], sink, pred_j[sink]
        while pred_i[i] >= 0:  # back along the path to the class whose supply it ships
            amount = min(amount, x[i, pred_i[i]])
            j = pred_i[i]
            i = pred_j[j]
        amount = min(amount, left[i])
        left[i] -= amount
        room[sink] -= amount
        j = sink
        while True:
            i = pred_j[j]
            x[i, j] += amount
            if pred_i[i] < 0:
                break
            j = pred_i[i]
            x[i, j] -= amount
    return left.max() <= tol
