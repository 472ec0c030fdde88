"""Distributed iterative allocators of Sec. IV [L280–389]: job-node and server-node versions with delays.

Within a slot the hard capacities of (3) become penalties C_j with C_j' = p_j, p_j(z) = (z/n_j)^β_j,
and the nodes iterate (eq. 6/7 for job nodes, eq. 12 for server nodes) on delayed information. The
default ``update="kelly_voice"`` carries the factor y_ij(r − τ) of the Kelly–Voice dynamics that the
paper's linearisation and condition (13) analyse; ``"literal"`` is the printed additive form (spec §7-H).
The fixed point maximises (8): Σ_i a_i log y_i† − Σ_j C_j(y_j§) − Σ_ij (γ − r̃_ij) y_ij.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

NODES = ("job", "server")
UPDATES = ("kelly_voice", "literal")


def stability_bound(beta: float) -> float:
    """Condition (13) for p_j = (z/n_j)^β_j: α_ij τ_(ij) < (π/2)/(1 + β_j)."""
    return (np.pi / 2) / (1.0 + beta)


def default_step(beta: float, round_trip: np.ndarray) -> np.ndarray:
    """α_ij = 0.5 × the bound of (13) divided by τ_(ij) (τ taken ≥ 1), the spec's default."""
    return 0.5 * stability_bound(beta) / np.maximum(round_trip, 1)


def iterate(
    rt: np.ndarray,
    a: np.ndarray,
    caps: np.ndarray,
    gamma: float,
    *,
    node: str = "job",
    beta: float = 8.0,
    alpha: np.ndarray | float | None = None,
    delays: tuple[np.ndarray, np.ndarray] | None = None,
    iterations: int = 5000,
    y0: float = 0.1,
    update: str = "kelly_voice",
) -> np.ndarray:
    """Run the iteration; return the history y(0..R) of shape (R+1, K, J) over the rows with a_i > 0.

    ``delays = (τ_job→server, τ_server→job)``, integer (K, J) arrays counted in iterations.
    """
    if node not in NODES:
        raise ValueError(f"node={node!r} is not allowed; choose one of {list(NODES)}")
    if update not in UPDATES:
        raise ValueError(f"update={update!r} is not allowed; choose one of {list(UPDATES)}")
    k, n_j = rt.shape
    up, down = (
        (np.zeros((k, n_j), dtype=np.int64),) * 2 if delays is None else (np.asarray(d, dtype=np.int64) for d in delays)
    )
    trip = up + down
    step = default_step(beta, trip) if alpha is None else np.broadcast_to(np.asarray(alpha, dtype=np.float64), (k, n_j))
    lag = int(trip.max()) + int(up.max()) + int(down.max()) + 1
    hist = np.full((iterations + 1 + lag, k, n_j), y0)  # index r + lag holds y(r); earlier entries are y0
    ii, jj = np.meshgrid(np.arange(k), np.arange(n_j), indexing="ij")
    cost = gamma - rt

    def at(r: int, delay: np.ndarray, rows=ii, cols=jj) -> np.ndarray:
        return hist[r + lag - delay, rows, cols]

    # server-node j's view of the column sum: Σ_i' y_i'j(r − τ_(i'j)); job node i receives it τ_ji later
    cross = down[:, None, :] + up[None, :, :]  # (i, i', j): τ_ji + τ_i'j
    i_src = np.broadcast_to(np.arange(k)[None, :, None], cross.shape)
    j_src = np.broadcast_to(np.arange(n_j)[None, None, :], cross.shape)
    for r in range(iterations):
        y = hist[r + lag]
        if node == "job":
            ydag = at(r, trip).sum(axis=1)[:, None]
            ysec = hist[r + lag - cross, i_src, j_src].sum(axis=1)
        else:
            col = at(r, trip).sum(axis=0)[None, :]
            ysec = np.broadcast_to(col, (k, n_j))
            # job node i's row sum as the server node held it τ_ij ago: Σ_j' y_ij'(r − τ_ij − τ_j'i)
            row_lag = up[:, :, None] + down[:, None, :]  # (i, j, j')
            ydag = hist[r + lag - row_lag, ii[:, :, None], np.broadcast_to(np.arange(n_j), row_lag.shape)].sum(axis=2)
        price = (ysec / caps) ** beta + cost
        g = 1.0 - price * np.maximum(ydag, 1e-300) / a[:, None]
        g = np.where(y <= 0, np.maximum(g, 0.0), g)
        mult = at(r, trip) if update == "kelly_voice" else 1.0
        hist[r + lag + 1] = np.maximum(0.0, y + step * mult * g)
    return hist[lag:]


def solve_distributed(rt: np.ndarray, a: np.ndarray, caps: np.ndarray, gamma: float, **kwargs) -> np.ndarray:
    """The last iterate, columns rescaled to Σ_i y_ij ≤ n_j (the penalty is soft); rows with a_i = 0 are 0."""
    y = np.zeros(rt.shape)
    rows = a > 0
    if rows.any():
        last = iterate(rt[rows], a[rows], caps, gamma, **kwargs)[-1]
        y[rows] = last / np.maximum(last.sum(axis=0) / caps, 1.0)
    return y


def solve_penalized(rt: np.ndarray, a: np.ndarray, caps: np.ndarray, gamma: float, beta: float = 8.0) -> np.ndarray:
    """The optimum of (8) with C_j(z) = n_j (z/n_j)^{β+1}/(β+1), by L-BFGS-B (the centralised reference)."""
    k, n_j = rt.shape
    cost = gamma - rt

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        y = x.reshape(k, n_j)
        s, col = y.sum(axis=1), y.sum(axis=0)
        val = (cost * y).sum() + (caps * (col / caps) ** (beta + 1) / (beta + 1)).sum() - a @ np.log(s)
        grad = cost + ((col / caps) ** beta)[None, :] - (a / s)[:, None]
        return float(val), grad.ravel()

    bounds = [(1e-12, None)] * (k * n_j)
    options = {"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000}
    res = minimize(objective, np.full(k * n_j, 0.1), jac=True, method="L-BFGS-B", bounds=bounds, options=options)
    return res.x.reshape(k, n_j)
