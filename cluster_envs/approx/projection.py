"""Projection P4 and the unbiased roundings of Eqs. 21 and 72 (spec §4.0 P, S), vectorized over machines."""

from __future__ import annotations

import numpy as np


def project_columns(y: np.ndarray) -> np.ndarray:
    """Euclidean projection of every column of ``y`` (K, M) onto {z ≥ 0, Σ_k z_k ≤ 1} (problem P4).

    If the positive part sums to ≤ 1 it is the answer; otherwise the projection onto the simplex
    z = max(y − η, 0) with the sort-based threshold η. Rows holding -inf stay 0 (inactive jobs).
    """
    y = np.asarray(y, dtype=np.float64)
    z = np.maximum(y, 0.0)
    over = z.sum(axis=0) > 1.0
    if not over.any():
        return z
    cols = np.where(np.isfinite(y[:, over]), y[:, over], -1e300)
    u = -np.sort(-cols, axis=0)
    cumulative = np.cumsum(u, axis=0) - 1.0
    k = np.arange(1, u.shape[0] + 1)[:, None]
    support = (u - cumulative / k) > 0
    k_star = u.shape[0] - np.argmax(support[::-1], axis=0)  # last index where the condition holds
    eta = cumulative[k_star - 1, np.arange(u.shape[1])] / k_star
    z[:, over] = np.maximum(cols - eta, 0.0)
    return z


def categorical_round(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One occupant per machine: slot k+1 with probability x[k, i], else idle (0), so E[x̃] = x (Eq. 72)."""
    cumulative = np.cumsum(x, axis=0)
    u = rng.random(x.shape[1])
    occupant = (cumulative <= u[None, :]).sum(axis=0) + 1
    occupant[occupant > x.shape[0]] = 0
    return occupant


def bernoulli_round(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Independent x̃_i ~ Bernoulli(x_i) (Eq. 21)."""
    return (rng.random(x.shape) < x).astype(np.int8)


def occupant_to_assignment(occupant: np.ndarray, n_slots: int) -> np.ndarray:
    """(M,) occupants in 0..K (0 = idle) -> (K, M) bool assignment."""
    return occupant[None, :] == np.arange(1, n_slots + 1)[:, None]
