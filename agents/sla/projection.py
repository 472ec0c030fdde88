"""KL projection onto the truncated simplex Δ_ε = {x : Σx = 1, x ≥ ε/N} (Prop. 1, Appendix A of paper 003)."""

from __future__ import annotations

import numpy as np


def kl_project(y: np.ndarray, eps: float) -> np.ndarray:
    """argmin_{x ∈ Δ_ε} Σ x(i) ln(x(i)/y(i)) for y > 0, in O(N log N).

    The users clamped at the floor m = ε/N are a prefix of the ascending order of y (Prop. 1a) and the
    others are rescaled by a common factor (Prop. 1b); the optimal prefix is the shortest feasible one.
    """
    n = y.size
    floor = eps / n
    order = np.argsort(y, kind="stable")
    ascending = y[order]
    # suffix[k] = sum of the n - k largest entries, for k clamped entries
    suffix = np.cumsum(ascending[::-1])[::-1]
    clamped = np.arange(n)
    scale = (1.0 - clamped * floor) / suffix
    k = int(np.argmax(ascending * scale >= floor))
    x_sorted = np.where(clamped < k, floor, ascending * scale[k])
    x = np.empty(n)
    x[order] = x_sorted
    return x
