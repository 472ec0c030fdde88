"""Projection P4 and the unbiased roundings of Eqs. 21 and 72 (spec §4.0 P, S), compiled per machine column.

The kernels reproduce the vectorized numpy formulation bit for bit (sequential column sums, the sort-based
threshold, ``a if a >= b else b`` as ``np.maximum``), so agents built on them keep their decisions.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _positive(a):
    return a if a >= 0.0 else 0.0  # np.maximum(a, 0.0), sign of zero included


@njit(cache=True)
def _project_into(y, z) -> None:
    n_rows, m = y.shape
    column, cumulative = np.empty(n_rows), np.empty(n_rows)
    for i in range(m):
        total = 0.0
        for k in range(n_rows):
            z[k, i] = _positive(y[k, i])
            total = z[k, i] if k == 0 else total + z[k, i]
        if not total > 1.0:
            continue
        for k in range(n_rows):  # descending order, as -sort(-column)
            column[k] = -y[k, i] if math.isfinite(y[k, i]) else 1e300
        column.sort()
        running = 0.0
        k_star = n_rows
        for k in range(n_rows):
            running = -column[k] if k == 0 else running + -column[k]
            cumulative[k] = running - 1.0
        for k in range(n_rows - 1, -1, -1):  # the last index where the support condition holds
            if -column[k] - cumulative[k] / (k + 1) > 0:
                k_star = k + 1
                break
        eta = cumulative[k_star - 1] / k_star
        for k in range(n_rows):
            value = y[k, i] if math.isfinite(y[k, i]) else -1e300
            z[k, i] = _positive(value - eta)


def project_columns(y: np.ndarray) -> np.ndarray:
    """Euclidean projection of every column of ``y`` (K, M) onto {z ≥ 0, Σ_k z_k ≤ 1} (problem P4).

    If the positive part sums to ≤ 1 it is the answer; otherwise the projection onto the simplex
    z = max(y − η, 0) with the sort-based threshold η. Rows holding -inf stay 0 (inactive jobs).
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    z = np.empty_like(y)
    _project_into(y, z)
    return z


@njit(cache=True)
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


def bernoulli_round(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Independent x̃_i ~ Bernoulli(x_i) (Eq. 21)."""
    return (rng.random(x.shape) < x).astype(np.int8)


def occupant_to_assignment(occupant: np.ndarray, n_slots: int) -> np.ndarray:
    """(M,) occupants in 0..K (0 = idle) -> (K, M) bool assignment."""
    return occupant[None, :] == np.arange(1, n_slots + 1)[:, None]
