"""NumPy's summation order inside compiled code, so a compiled step sums exactly as the numpy model did.

``np.add.reduce`` of float64 (``pairwise_sum_DOUBLE``) adds runs of at most 128 terms with 8 interleaved
accumulators and splits longer runs in two halves (the first a multiple of 8), recursively; the result is added
to the identity 0.0 (so an all-(-0.0) sum is +0.0). :func:`pairwise_sum` reproduces that bit for bit.

The summed terms are ``a[at + (lo + i,)]`` for i < n: ``at`` is the index tuple of the run's row (``()`` for a
1-D array, ``(b,)`` for row b of a 2-D one, ``(b, row)`` in a 3-D one), so callers index their batch arrays in
place; a view per call would cost more than a short sum. Runs of more than 128 terms walk the split tree on an
explicit stack of ``SUM_STACK`` float entries, ``stack[stack_at + (stack_lo + k,)]``, that the caller provides
(numba cannot cache recursive functions, and an allocation here would be paid by every caller).
"""

from __future__ import annotations

from cluster_envs.common.numba_cache import cached_njit

BLOCK = 128  # the longest run summed without a split
SUM_DEPTH = 64  # entries of each of the stack's four parts (a split halves the run: 64 levels cover any length)
SUM_STACK = 4 * SUM_DEPTH


@cached_njit(inline="always")
def block_sum(a, at, lo, n):
    """Σ a[at + (lo + i,)] for i < n ≤ 128 as NumPy adds it: sequentially below 8 terms, else 8 interleaved
    accumulators (without NumPy's final addition to 0.0: see :func:`pairwise_sum`)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[at + (i,)]
        return res
    r0, r1, r2, r3 = a[at + (lo,)], a[at + (lo + 1,)], a[at + (lo + 2,)], a[at + (lo + 3,)]
    r4, r5, r6, r7 = a[at + (lo + 4,)], a[at + (lo + 5,)], a[at + (lo + 6,)], a[at + (lo + 7,)]
    i = 8
    while i < n - n % 8:
        k = lo + i
        r0, r1, r2, r3 = r0 + a[at + (k,)], r1 + a[at + (k + 1,)], r2 + a[at + (k + 2,)], r3 + a[at + (k + 3,)]
        r4, r5, r6, r7 = r4 + a[at + (k + 4,)], r5 + a[at + (k + 5,)], r6 + a[at + (k + 6,)], r7 + a[at + (k + 7,)]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[at + (lo + i,)]
        i += 1
    return res


@cached_njit(inline="always")
def split_sum(a, at, lo, n, stack, stack_at, stack_lo):
    """:func:`block_sum` for any n: the split tree walked on the stack (four parts of ``SUM_DEPTH`` entries: the
    runs' starts, sizes, visit phases, and the partial sums), each node's halves added left + right."""
    los, sizes, phase, values = stack_lo, stack_lo + SUM_DEPTH, stack_lo + 2 * SUM_DEPTH, stack_lo + 3 * SUM_DEPTH
    top, count = 0, 0
    stack[stack_at + (los,)], stack[stack_at + (sizes,)], stack[stack_at + (phase,)] = lo, n, 0
    while top >= 0:
        size = int(stack[stack_at + (sizes + top,)])
        if size <= BLOCK:
            stack[stack_at + (values + count,)] = block_sum(a, at, int(stack[stack_at + (los + top,)]), size)
            count += 1
            top -= 1
            continue
        half = size // 2 - (size // 2) % 8
        visit = stack[stack_at + (phase + top,)]
        if visit < 2:  # visit the left, then the right half
            start = int(stack[stack_at + (los + top,)])
            start, length = (start, half) if visit == 0 else (start + half, size - half)
            stack[stack_at + (phase + top,)] = visit + 1
            top += 1
            stack[stack_at + (los + top,)], stack[stack_at + (sizes + top,)] = start, length
            stack[stack_at + (phase + top,)] = 0
        else:
            count -= 1
            stack[stack_at + (values + count - 1,)] += stack[stack_at + (values + count,)]
            top -= 1
    return stack[stack_at + (values,)]


@cached_njit(inline="always")
def pairwise_sum(a, at, lo, n, stack, stack_at, stack_lo):
    """NumPy's ``sum`` of ``a[at + (lo + i,)]`` for i < n, bit for bit (the sign of a zero sum included); the
    stack (see the module docstring) is read only when n > 128."""
    if n <= BLOCK:
        return 0.0 + block_sum(a, at, lo, n)
    return 0.0 + split_sum(a, at, lo, n, stack, stack_at, stack_lo)
