"""Euclidean projection onto a capped simplex {z ≥ 0, Σ z ≤ r}: one compiled kernel for every setting.

The answer is z = max(x − η, 0) with the sort-based threshold η = (Σ_{k ≤ k*} u_k − r) / k* over the entries u
in decreasing order, k* the last k with u_k > (Σ_{l ≤ k} u_l − r) / k (Duchi et al. 2008). :func:`cap_sorted`
projects one column held in a row of a caller's float scratch, in place, given its entries sorted (a caller
that sorts many long columns at once with numpy, faster than a compiled sort of each); :func:`cap_simplex` sorts
the column itself (a compiled step: short columns, no allocation, no array views).

Two arithmetic forms of the same point, kept because published results depend on their last bits (a flipped
last bit flips a later random rounding, and a learning agent's trajectory follows it):

- ``scaled=False``: the formula above in its plain form (the numpy formulation of the Approx projection P4,
  cap 1 per machine);
- ``scaled=True``: computed on x / max(x) (the projection commutes with scaling) and around the mean of the kept
  entries, so entries up to the float maximum neither overflow nor cancel to an empty support (the Bilinear
  allocation, spec §3.3, caps n_j(t)/n_j).
"""

from __future__ import annotations

from cluster_envs.common.numba_cache import cached_njit


@cached_njit(inline="always")
def _maximum(a, b):
    return a if a >= b else b  # np.maximum's choice on ties (-0.0 vs 0.0)


@cached_njit(inline="always")
def cap_sorted(work, row, lo, n, radius, sorted_lo, scaled):
    """Project ``work[row, lo : lo + n]`` in place onto {z ≥ 0, Σ z ≤ ``radius``}, given the same entries in
    decreasing order at ``work[row, sorted_lo : sorted_lo + n]``. The entries must be finite and their positive
    parts sum to more than ``radius`` (the caller decides when a column needs the projection, with its own
    tolerance). ``scaled``: the arithmetic form (module docstring). A ``radius`` ≤ 0 gives zeros."""
    scale = work[row, sorted_lo] if scaled else 1.0  # dividing by it keeps the order of the sorted entries
    r = radius / scale
    keep, acc, eta, found = 1, 0.0, 0.0, False
    for i in range(n):
        v = work[row, sorted_lo + i] / scale
        acc += v
        if scaled:
            mean = acc / (i + 1)
            if (v - mean) + r / (i + 1) > 0:
                keep, eta, found = i + 1, mean, True
        else:
            excess = acc - radius
            if v - excess / (i + 1) > 0:
                keep, eta, found = i + 1, excess, True
    if not found:  # only in floating-point corner cases (the first entry always qualifies in exact arithmetic)
        keep, eta = (1, work[row, sorted_lo] / scale) if scaled else (n, acc - radius)
    for i in range(n):
        x = work[row, lo + i]
        if scaled:
            work[row, lo + i] = 0.0 if radius <= 0 else scale * _maximum((x / scale - eta) + r / keep, 0.0)
        else:
            work[row, lo + i] = _maximum(x - eta / keep, 0.0)


@cached_njit
def cap_simplex(work, row, lo, n, radius, scaled):
    """:func:`cap_sorted` of ``work[row, lo : lo + n]``, sorted into the scratch ``work[row, lo + n : lo + 2n]``
    (a Shell sort, in place: an insertion sort for the short columns of a compiled step)."""
    s = lo + n
    for i in range(n):
        work[row, s + i] = work[row, lo + i]
    gap = 1  # gaps (3^k − 1)/2
    while gap < n // 3:
        gap = 3 * gap + 1
    while gap >= 1:
        for i in range(gap, n):
            v = work[row, s + i]
            k = i
            while k >= gap and work[row, s + k - gap] < v:
                work[row, s + k] = work[row, s + k - gap]
                k -= gap
            work[row, s + k] = v
        gap //= 3
    cap_sorted(work, row, lo, n, radius, s, scaled)
