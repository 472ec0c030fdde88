"""The per-slot allocation problem (3) of Alg. 1 and its KKT check (spec §4.1).

maximise Σ_i Σ_j (r̃_ij − γ) y_ij + Σ_i a_i log(Σ_j y_ij)  s.t.  Σ_i y_ij ≤ n_j,  y ≥ 0,

over the rows with a_i > 0 (the non-empty classes). KKT: a_i/s_i ≤ γ − r̃_ij + q_j with equality where
y_ij > 0, q_j (n_j − Σ_i y_ij) = 0, s_i = Σ_j y_ij. When no column binds (q = 0) the solution is explicit:
s_i = a_i/(γ − max_j r̃_ij), split evenly over the maximising j (the fast path). Otherwise the problem is
solved numerically (SLSQP on the smooth concave objective, warm-started at the scaled fast path).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

TIE_TOL = 1e-12


def fast_path(rt: np.ndarray, a: np.ndarray, gamma: float) -> np.ndarray:
    """The q = 0 KKT point: s_i = a_i/(γ − m_i), split evenly over T_i = {j : r̃_ij ≥ m_i − 1e-12}."""
    m = rt.max(axis=1)
    ties = rt >= m[:, None] - TIE_TOL
    s = a / (gamma - m)
    return ties * (s / ties.sum(axis=1))[:, None]


def solve_allocation(rt: np.ndarray, a: np.ndarray, caps: np.ndarray, gamma: float) -> np.ndarray:
    """The solution y (K × J) of (3); rows with a_i = 0 are 0. Requires γ > max r̃ (costs γ − r̃ > 0)."""
    y = np.zeros(rt.shape)
    rows = a > 0
    if not rows.any():
        return y
    fast = fast_path(rt[rows], a[rows], gamma)
    if (fast.sum(axis=0) <= caps * (1 + 1e-12)).all():
        y[rows] = fast
        return y
    y[rows] = _solve_binding(rt[rows], a[rows], caps, gamma, fast)
    return y


def _smooth_log(s: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """log s and its derivative, continued quadratically below eps so the solver may probe s ≤ 0."""
    low = s < eps
    safe = np.where(low, eps, s)
    val = np.where(low, np.log(eps) + (s - eps) / eps - (s - eps) ** 2 / (2 * eps**2), np.log(safe))
    grad = np.where(low, 1 / eps - (s - eps) / eps**2, 1 / safe)
    return val, grad


def _solve_binding(rt: np.ndarray, a: np.ndarray, caps: np.ndarray, gamma: float, fast: np.ndarray) -> np.ndarray:
    k, n_j = rt.shape
    cost = gamma - rt
    # every s_i ≥ a_i/(γ + 1 + q_max) > 0 at the optimum; eps sits far below that
    eps = 1e-6 * float(a.min()) / (gamma + 1.0 + float(a.sum() / caps.min()))
    start = fast / np.maximum(fast.sum(axis=0) / (0.99 * caps), 1.0)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        y = x.reshape(k, n_j)
        logs, dlog = _smooth_log(y.sum(axis=1), eps)
        val = float((cost * y).sum() - a @ logs)
        return val, (cost - (a * dlog)[:, None]).ravel()

    col = np.kron(np.ones(k), np.eye(n_j))  # (J, K·J): column sums
    res = minimize(
        objective,
        start.ravel(),
        jac=True,
        method="SLSQP",
        bounds=[(0.0, None)] * (k * n_j),
        constraints=[{"type": "ineq", "fun": lambda x: caps - col @ x, "jac": lambda x: -col}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    y = np.maximum(res.x.reshape(k, n_j), 0.0)
    return y / np.maximum(y.sum(axis=0) / caps, 1.0)


def kkt_residual(
    y: np.ndarray, rt: np.ndarray, a: np.ndarray, caps: np.ndarray, gamma: float, tol: float = 1e-7
) -> float:
    """Largest relative violation of the KKT conditions of (3) at y, with q_j recovered from y."""
    rows = a > 0
    y, rt, a = y[rows], rt[rows], a[rows]
    s = y.sum(axis=1)
    marginal = a / s  # a_i / s_i
    cost = gamma - rt
    used = y > tol * max(1.0, float(y.max()))
    q = np.maximum(np.where(used, marginal[:, None] - cost, -np.inf).max(axis=0), 0.0)
    q = np.where(np.isfinite(q), q, 0.0)
    scale = float(marginal.max())
    dual = np.maximum(marginal[:, None] - cost - q, 0.0).max() / scale  # a_i/s_i ≤ γ − r̃ + q
    station = np.where(used, np.abs(marginal[:, None] - cost - q), 0.0).max() / scale
    slack = float((q * np.maximum(caps - y.sum(axis=0), 0.0)).max()) / scale
    primal = float(np.maximum(y.sum(axis=0) - caps, 0.0).max())
    return float(max(dual, station, slack, primal))
