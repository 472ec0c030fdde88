"""Projection P4 and the unbiased rounding of Eq. 72 (Eq. 21 for K = 1; spec §4.0 P, S), compiled per machine column.

The kernels reproduce the vectorized numpy formulation bit for bit (sequential column sums, the sort-based
threshold, ``a if a >= b else b`` as ``np.maximum``), so agents built on them keep their decisions.
"""

from __future__ import annotations

import numpy as np

from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.common.simplex import cap_sorted


@cached_njit
def _positive(a):
    return a if a >= 0.0 else 0.0  # np.maximum(a, 0.0), sign of zero included


@cached_njit
def _clip(y, z, over) -> None:
    """z = max(y, 0); over[i] = Σ_k z[k, i] > 1, summed row by row as numpy's ``sum(axis=0)``."""
    n_rows, m = y.shape
    total = np.zeros(m)
    for k in range(n_rows):
        for i in range(m):
            z[k, i] = _positive(y[k, i])
            total[i] = z[k, i] if k == 0 else total[i] + z[k, i]
    for i in range(m):
        over[i] = total[i] > 1.0


@cached_njit
def _cap_columns(cols, ordered, columns, z) -> None:
    """z[:, columns] = the projection of each column of ``cols`` (``ordered``: its entries in decreasing order)
    onto the simplex (:func:`~cluster_envs.common.simplex.cap_sorted`, cap 1, the plain form)."""
    n_rows = z.shape[0]
    work = np.empty((1, 2 * n_rows))
    for j in range(columns.size):
        for k in range(n_rows):
            work[0, k], work[0, n_rows + k] = cols[k, j], ordered[k, j]
        cap_sorted(work, 0, 0, n_rows, 1.0, n_rows, False)
        for k in range(n_rows):
            z[k, columns[j]] = work[0, k]


def project_columns(y: np.ndarray) -> np.ndarray:
    """Euclidean projection of every column of ``y`` (K, M) onto {z ≥ 0, Σ_k z_k ≤ 1} (problem P4).

    If the positive part sums to ≤ 1 it is the answer; otherwise the projection onto the simplex
    z = max(y − η, 0) with the sort-based threshold η. Rows holding -inf stay 0 (inactive jobs).
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    z = np.empty_like(y)
    over = np.empty(y.shape[1], dtype=bool)
    _clip(y, z, over)
    if not over.any():
        return z
    cols = y[:, over]
    cols = np.where(np.isfinite(cols), cols, -1e300)
    _cap_columns(cols, -np.sort(-cols, axis=0), np.flatnonzero(over), z)  # numpy's sort is the fast part
    return z


@cached_njit
def _occupants(x, u, out) -> None:
    n_rows, m = x.shape
    for i in range(m):
        below = 0
        cumulative = 0.0
        for k in range(n_rows):
            cumulative = x[k, i] if k == 0 else cumulative + x[k, i]
            below += cumulative <= u[i]
        out[i] = 0 if below + 1 > n_rows else below + 1


def categorical_round(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One occupant per machine: slot k+1 with probability x[k, i], else idle (0), so E[x̃] = x (Eq. 72)."""
    u = rng.random(x.shape[1])
    occupant = np.empty(x.shape[1], dtype=np.int64)
    _occupants(np.ascontiguousarray(x, dtype=np.float64), u, occupant)
    return occupant


def coupled_round(
    x: np.ndarray, x_prev: np.ndarray, prev: np.ndarray, renewed: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """One occupant per machine, temporally coupled: the previous draw's occupant ``k`` of machine ``i`` is kept with
    probability min(1, x[k, i] / x_prev[k, i]) (idle likewise, with 1 − Σx), else the occupant is redrawn from
    the categories whose probability grew, in proportion to the growth (x − x_prev)⁺. If ``prev`` was drawn from
    ``x_prev`` (as every draw of this function or :func:`categorical_round` is), the new occupant is drawn from x:
    E[x̃] = x as Eq. 72 asks, while a machine changes occupant only with probability Σ_k (x_prev − x)⁺ (the
    maximal coupling of the two slots' laws). ``renewed`` (K,) bool marks the slots holding a new job: their
    previous occupant (the old job) is never kept and their x_prev counts as 0 for the new one.
    """
    n_slots, m = x.shape
    old_same = np.where(renewed[:, None], 0.0, x_prev)
    new_full = np.vstack([np.maximum(1.0 - x.sum(axis=0), 0.0), x])  # category 0 = idle, k = slot k
    old_full = np.vstack([np.maximum(1.0 - x_prev.sum(axis=0), 0.0), old_same])
    cols = np.arange(m)
    was, now = np.vstack([old_full[:1], x_prev])[prev, cols], new_full[prev, cols]
    keep = (rng.random(m) * was < now) & ~np.concatenate([[False], renewed])[prev]
    growth = np.maximum(new_full - old_full, 0.0)
    cumulative = np.cumsum(growth, axis=0)
    u = rng.random(m) * cumulative[-1]
    redrawn = np.minimum((cumulative <= u[None, :]).sum(axis=0), n_slots)
    return np.where(keep, prev, redrawn).astype(np.int64)


def occupant_to_assignment(occupant: np.ndarray, n_slots: int) -> np.ndarray:
    """(M,) occupants in 0..K (0 = idle) -> (K, M) bool assignment."""
    return occupant[None, :] == np.arange(1, n_slots + 1)[:, None]
