"""The budgeted 0/1 multi-dimensional knapsack dynamic program (Algorithm 2 of paper 001, spec §4.3).

One implementation serves two callers:

* the env's oracle (spec §4.6): ``max ṽᵀx s.t. Ax ≤ c`` over the usable edges, which is the budgeted
  problem with ``s_max = 0`` and float values;
* ESDP (agents/multiserver): P4(s) = ``max Σ̂²ᵀx s.t. Ax ≤ c, Υ̂ᵀx ≥ s`` for every ``s ∈ {0..s_max}``,
  with integer values.

State ``(s, c')`` with ``s ∈ {0..s_max}`` and ``c' ∈ Π_k {0..c_k}``; the value layer ``V_i[s, c']`` is the
best value over edges ``i..|E|-1`` (0-based), ``−∞`` when infeasible. Edges are processed from the last
to the first; taking edge ``i`` maps ``s`` to ``max(s − Υ̂_i, 0)`` and ``c'`` to ``c' − A[:, i]`` and is
allowed only where ``A[:, i] ≤ c'`` (the printed algorithm's clip-and-revert in one guard). Ties keep the
edge out (Alg. 2 line 10).

The compiled kernel computes exactly these values and take decisions, with less work (spec §4.3 counts
``|E|·(S_max+1)·Π(c_k+1)`` cells; at paper scale this kernel updates about half of them):

* Layout ``V[c', s]``, ``s`` innermost, updated in place. ``A`` has a positive entry in every column, so
  ``c' − A[:, i]`` is a different capacity point that comes earlier in the flat order; sweeping the points
  in descending order reads every source before it is overwritten, and each point's ``s``-run is one
  contiguous, vectorisable max.
* Capacity beyond what the edges processed so far can use changes nothing: ``V_i[s, c'] =
  V_i[s, min(c', S_i)]`` with ``S_i = Σ_{j ≥ i} A[:, j]``. Stage ``i`` works on the box ``min(c, S_i)`` only,
  first filling the box's new shell with the clamped values; the backtrack clamps the same way.
* Budgets above ``R_i = Σ_{j ≥ i} Υ̂_j`` are infeasible at stage ``i``, and so are, at a point ``c'``, budgets
  above the sum of the ``n(c')`` largest ``Υ̂_j`` (``j ≥ i``), where ``n(c') = min_k`` (how many of the smallest
  requests ``A[k, j]`` fit in ``c'_k``) bounds how many edges fit: those rows keep the sentinel.
* Points with ``c' < A[:, i]`` in some component never take the edge, so they are not touched.

Infeasible cells hold the sentinel plus whatever values were added on top of it; the sentinel is chosen so
that such a sum stays below every feasible value (hence ``feasible`` is a threshold test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from cluster_envs.common.guards import Estimate

# Integer sentinels: with Σ|values| below the bound, sentinel ± Σ|values| neither overflows nor reaches the
# feasible range [−Σ|values|, Σ|values|].
_INT_TYPES = ((np.dtype(np.int32), -(2**30), 2**29), (np.dtype(np.int64), -(2**62), 2**61))
_PACK = np.uint64(0x0102040810204080)  # (8 bytes of 0/1) · _PACK >> 56 = the 8 bits, first byte lowest


@dataclass
class KnapsackTable:
    """The result of :func:`solve`: the optimal value of every budget and what backtracking needs."""

    values: np.ndarray  # V_0[s, c] for s = 0..s_max (the sentinel where infeasible)
    feasible: np.ndarray  # bool per s
    cells: int  # the nominal DP size of spec §4.3: Σ over processed edges of (s_max + 1)·Π(c_k + 1)
    budget_weights: np.ndarray  # Υ̂ (int64, zeros for the oracle)
    A: np.ndarray
    c: np.ndarray
    order: np.ndarray  # processed edges, in processing order (last edge first)
    box: np.ndarray  # (stages, K): the capacity box of each stage
    rows: np.ndarray  # (stages,): budgets 0..rows−1 computed at each stage
    bit_offset: np.ndarray  # (stages,): where each stage's take bits start in ``bits``
    bits: np.ndarray  # take bits: per stage, per guarded point, ⌈rows/8⌉ bytes, bit s%8 of byte s//8

    def backtrack(self, s: int | np.ndarray) -> np.ndarray:
        """x*_P4(s) for one budget (int8[|E|]) or for an array of budgets (int8[len(s), |E|])."""
        budgets = np.atleast_1d(np.asarray(s, dtype=np.int64))
        x = np.zeros((budgets.size, self.A.shape[1]), dtype=np.int8)
        _backtrack(budgets, self.A, self.c, self.order, self.box, self.rows, self.bit_offset, self.bits,
                   self.budget_weights, x)  # fmt: skip
        return x[0] if np.ndim(s) == 0 else x


@njit(cache=True)
def _backtrack(budgets, A, c, order, box, rows, bit_offset, bits, budget_weights, x) -> None:
    """Follow the take bits from the full capacity, edges in index order, for each budget (into ``x``)."""
    n_types = A.shape[0]
    cap = np.empty(n_types, np.int64)
    for m in range(budgets.size):
        s = budgets[m]
        for k in range(n_types):
            cap[k] = c[k]
        for j in range(order.size - 1, -1, -1):
            i = order[j]
            if s >= rows[j]:
                continue
            ok = True
            point, stride = 0, 1  # the point in the guarded box c' ≥ A[:, i], last dimension fastest
            for k in range(n_types - 1, -1, -1):
                ok &= cap[k] >= A[k, i]
                point += (min(cap[k], box[j, k]) - A[k, i]) * stride
                stride *= box[j, k] - A[k, i] + 1
            if not ok or not (bits[bit_offset[j] + point * ((rows[j] + 7) // 8) + s // 8] >> (s % 8)) & 1:
                continue
            x[m, i] = 1
            s = max(s - budget_weights[i], 0)
            for k in range(n_types):
                cap[k] -= A[k, i]


def _value_type(values: np.ndarray) -> tuple[np.dtype, float | int]:
    if values.dtype.kind == "f":
        return np.dtype(np.float64), -np.inf
    total = int(np.abs(values.astype(object)).sum())  # exact, whatever the magnitudes
    for dtype, sentinel, bound in _INT_TYPES:
        if total < bound:
            return dtype, sentinel
    raise ValueError(f"values: the sum of |values| must be below 2**61 for exact integer arithmetic, got {total}")


def solve(
    values: np.ndarray,
    A: np.ndarray,
    c: np.ndarray,
    *,
    budget_weights: np.ndarray | None = None,
    s_max: int = 0,
    usable: np.ndarray | None = None,
) -> KnapsackTable:
    """Run the DP. ``values`` float (oracle) or integer (ESDP, exact arithmetic); ``usable`` masks edges."""
    A = np.asarray(A, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    n_types, n_edges = A.shape
    upsilon = np.zeros(n_edges, np.int64) if budget_weights is None else np.asarray(budget_weights, np.int64)
    usable = np.ones(n_edges, bool) if usable is None else np.asarray(usable, bool)
    if (A < 0).any() or not (A > 0).any(axis=0).all():
        raise ValueError("A: entries must be non-negative with a positive entry in every column")
    if (upsilon < 0).any():
        raise ValueError("budget_weights: entries must be non-negative")
    values = np.asarray(values)
    dtype, neg = _value_type(values)
    values = values.astype(dtype)

    order, box, rows, guarded = _layout(A, c, upsilon, usable, s_max)
    final_box = box[-1] if order.size else np.zeros(n_types, np.int64)
    width = int(rows[-1]) if order.size else 1  # the s-stride of the layout
    extent = final_box + 1
    point_strides = np.append(np.cumprod(extent[:0:-1])[::-1], 1).astype(np.int64)
    sizes = guarded * ((rows + 7) // 8)
    bit_offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    bits = np.zeros(int(sizes.sum()), np.uint8)
    V = np.full(int(np.prod(extent)) * width, neg, dtype=dtype)
    V[::width] = 0  # V_{|E|}[s, c'] = 0 iff s = 0
    if order.size:
        layout = (order, box, rows, bit_offset, point_strides, width)
        _sweep(V, bits, values, upsilon, A, layout, _reach_bounds(order, A, c, upsilon))

    top = np.full(s_max + 1, neg, dtype=dtype)
    base = int(final_box @ point_strides) * width
    top[:width] = V[base : base + width]
    feasible = top > (neg // 2 if dtype.kind == "i" else -np.inf)
    top[~feasible] = neg
    cells = order.size * (s_max + 1) * int(np.prod(c + 1))
    return KnapsackTable(top, feasible, cells, upsilon, A, c, order, box, rows, bit_offset, bits)


def _layout(A: np.ndarray, c: np.ndarray, upsilon: np.ndarray, usable: np.ndarray, s_max: int):
    """The DP's shape: processed edges (last first), each stage's capacity box and budget rows, and its number of
    guarded points (``c' ≥ A[:, i]`` inside the box)."""
    order = np.flatnonzero(usable & (A <= c[:, None]).all(axis=0))[::-1].copy()
    box = np.minimum(np.cumsum(A[:, order], axis=1).T, c).reshape(order.size, A.shape[0])
    rows = np.minimum(np.cumsum(upsilon[order]), s_max) + 1
    guarded = np.prod(box - A[:, order].T + 1, axis=1)
    return order, box, rows, guarded


# Seconds per guarded cell (point x budget row) of the sweep and per entry of the reach bounds, fitted on oracle
# solves (one budget row, 33 to 320 edges) on a loaded 2-core machine: docs/robustness.md, estimated vs measured.
SECONDS_PER_CELL = 8e-9
SECONDS_PER_REACH_ENTRY = 25e-9


def estimate(
    A: np.ndarray, c: np.ndarray, *, budget_weights: np.ndarray | None = None, s_max: int = 0,
    usable: np.ndarray | None = None, value_bytes: int = 8,
) -> Estimate:  # fmt: skip
    """The peak allocation and run time of :func:`solve` on the same arguments, without running it (``value_bytes``:
    8 for float values, 4 or 8 for integer ones). Memory: the value table, the take bits and the reach bounds,
    exactly as :func:`solve` allocates them; time: a fitted cost per guarded cell and per reach-bound entry."""
    A = np.asarray(A, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    n_types, n_edges = A.shape
    upsilon = np.zeros(n_edges, np.int64) if budget_weights is None else np.asarray(budget_weights, np.int64)
    usable = np.ones(n_edges, bool) if usable is None else np.asarray(usable, bool)
    order, box, rows, guarded = _layout(A, c, upsilon, usable, s_max)
    if not order.size:
        return Estimate(0.0, 0.0, "no usable edge")
    # float: products of up to K capacities overflow int64 in exactly the cases the guard exists for
    points = float(np.prod((box[-1] + 1).astype(float)))
    value_table = points * int(rows[-1]) * value_bytes
    take_bits = float((guarded.astype(float) * ((rows + 7) // 8)).sum())
    reach = order.size * n_types * (float(c.max()) + 1) + order.size * (order.size + 1)
    memory = value_table + take_bits + 8 * reach
    cells = float((guarded.astype(float) * rows).sum())
    box_text = " x ".join(str(int(b) + 1) for b in box[-1])
    return Estimate(memory, cells * SECONDS_PER_CELL + reach * SECONDS_PER_REACH_ENTRY,
                    f"{order.size} edges, capacity box {box_text}, {int(rows[-1])} budget rows")  # fmt: skip


@njit(cache=True)
def _reach_bounds(order: np.ndarray, A: np.ndarray, c: np.ndarray, upsilon: np.ndarray):
    """Per stage j (edges ``order[:j+1]``): ``fit_count[j, k, v]``, how many of the smallest requests
    ``A[k, ·]`` fit in ``v``, and ``top_sum[j, n]``, the sum of the ``n`` largest ``Υ̂``."""
    n_stages, n_types = order.size, A.shape[0]
    n_levels = c.max() + 1
    fit_count = np.empty((n_stages, n_types, n_levels), np.int64)
    top_sum = np.empty((n_stages, n_stages + 1), np.int64)
    for j in range(n_stages):
        taken = order[: j + 1]
        for k in range(n_types):
            smallest = np.sort(A[k][taken])
            n = total = 0
            for level in range(n_levels):
                while n < smallest.size and total + smallest[n] <= level:
                    total += smallest[n]
                    n += 1
                fit_count[j, k, level] = n
        largest = np.sort(upsilon[taken])[::-1]
        top_sum[j, 0] = 0
        for n in range(n_stages):
            top_sum[j, n + 1] = top_sum[j, n] + (largest[n] if n <= j else 0)
    return fit_count, top_sum


@njit(cache=True)
def _sweep(V, bits, values, upsilon, A, layout, bounds):
    """Every stage of the DP in place on ``V`` (layout ``[c', s]``), writing the take bits. ``layout``: the stages'
    (order, box, rows, bit_offset) of :class:`KnapsackTable`, the point strides and the s-stride ``width``;
    ``bounds``: :func:`_reach_bounds`'s (fit_count, top_sum)."""
    order, box, rows, bit_offset, point_strides, width = layout
    fit_count, top_sum = bounds
    n_types = A.shape[0]
    scratch = np.zeros(((width + 7) // 8) * 8, np.uint8)
    packed = scratch.view(np.uint64)
    previous_box = np.zeros(n_types, np.int64)
    previous_rows = 1
    for j in range(order.size):
        i = order[j]
        n_rows = rows[j]
        _extend_box(V, previous_box, box[j], point_strides, width, previous_rows)
        previous_box[:] = box[j]
        previous_rows = n_rows
        u = upsilon[i]
        v = values[i]
        shift = 0
        outer = 1  # guarded points, all dimensions but the last
        for k in range(n_types):
            shift += A[k, i] * point_strides[k]
            if k < n_types - 1:
                outer *= box[j, k] - A[k, i] + 1
        shift *= width
        last_lo, last_hi = A[n_types - 1, i], box[j, n_types - 1]
        per_point = (n_rows + 7) // 8
        for o in range(outer - 1, -1, -1):
            rem = o
            base = 0
            n_fit = order.size
            for k in range(n_types - 2, -1, -1):
                span = box[j, k] - A[k, i] + 1
                level = rem % span + A[k, i]
                base += level * point_strides[k]
                n_fit = min(n_fit, fit_count[j, k, level])
                rem //= span
            if n_rows == 1:  # one budget row (the oracle's case): its take bit is bit 0 of the point's byte
                out = bit_offset[j] + o * (last_hi - last_lo + 1) - last_lo
                for last in range(last_hi, last_lo - 1, -1):
                    d = (base + last) * width
                    candidate, old = V[d - shift] + v, V[d]
                    bits[out + last] = candidate > old
                    V[d] = max(candidate, old)
                continue
            for last in range(last_hi, last_lo - 1, -1):
                reach = min(n_rows, top_sum[j, min(n_fit, fit_count[j, n_types - 1, last])] + 1)  # rows to update
                d = (base + last) * width
                # Views, not indices, for the runs of budget rows: a view costs tens of ns, but the loops over
                # views vectorise, which the same loops indexing V twice (read and write) did not: 2x the DP.
                dst = V[d : d + reach]
                src = V[d - shift : d - shift + reach]
                first = src[0] + v
                low = min(u, reach)  # rows s < Υ̂_i read row 0 of the source
                for s in range(low):
                    old = dst[s]
                    scratch[s] = first > old
                    dst[s] = max(first, old)
                dst_high = dst[low:]
                src_high = src[: reach - low]
                flags = scratch[low:reach]
                for s in range(reach - low):
                    candidate = src_high[s] + v
                    old = dst_high[s]
                    flags[s] = candidate > old
                    dst_high[s] = max(candidate, old)
                n_bytes = (reach + 7) // 8
                scratch[reach : 8 * n_bytes] = 0
                out = bit_offset[j] + (o * (last_hi - last_lo + 1) + last - last_lo) * per_point
                for b in range(n_bytes):  # bytes past the reach stay 0: those budgets are infeasible
                    bits[out + b] = np.uint8((packed[b] * _PACK) >> np.uint64(56))


@njit(cache=True)
def _extend_box(V, old_box, new_box, point_strides, width, n_rows):
    """Fill the points of ``new_box`` outside ``old_box`` with their clamped values (rows < ``n_rows``).

    One dimension at a time, so that corners copy from already filled points."""
    n_types = old_box.size
    for k in range(n_types):
        lo, hi = old_box[k], new_box[k]
        if hi == lo:
            continue
        count = 1  # points of the face c'_k = lo: dimensions < k already extended, > k not yet
        for m in range(n_types):
            if m != k:
                count *= (new_box[m] if m < k else old_box[m]) + 1
        for p in range(count):
            rem = p
            base = 0
            for m in range(n_types - 1, -1, -1):
                if m != k:
                    span = (new_box[m] if m < k else old_box[m]) + 1
                    base += (rem % span) * point_strides[m]
                    rem //= span
            src = (base + lo * point_strides[k]) * width
            for ck in range(lo + 1, hi + 1):
                dst = (base + ck * point_strides[k]) * width
                V[dst : dst + n_rows] = V[src : src + n_rows]


def max_cardinality(A: np.ndarray, c: np.ndarray) -> int:
    """``max ‖x‖₁ s.t. Ax ≤ c`` (the exact ``m`` of spec §4.1, ``m_mode="exact"``)."""
    table = solve(np.ones(np.asarray(A).shape[1], dtype=np.int64), A, c)
    return int(table.values[0])
