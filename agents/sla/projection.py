"""KL projection onto the truncated simplex Δ_ε = {x : Σx = 1, x ≥ ε/N} (Prop. 1, Appendix A of paper 003)."""

from __future__ import annotations

import numpy as np

from cluster_envs.common.numba_cache import cached_njit


@cached_njit
def kl_project(y: np.ndarray, eps: float) -> np.ndarray:
    """argmin_{x ∈ Δ_ε} Σ x(i) ln(x(i)/y(i)) for y > 0, in O(N log N).

    The users clamped at the floor m = ε/N are a prefix of the ascending order of y (Prop. 1a) and the
    others are rescaled by a common factor (Prop. 1b); the optimal prefix is the shortest feasible one.
    """
    n = y.size
    floor = eps / n
    order = np.argsort(y, kind="mergesort")
    suffix = 0.0  # sum of the n - k largest entries
    for r in range(n):
        suffix += y[r]
    x = np.empty(n)
    for k in range(n):  # k users clamped
        scale = (1.0 - k * floor) / suffix
        if y[order[k]] * scale >= floor:
            for r in range(n):
                x[order[r]] = floor if r < k else y[order[r]] * scale
            return x
        suffix -= y[order[k]]
    return x  # unreachable for ε < 1: k = n - 1 always succeeds
