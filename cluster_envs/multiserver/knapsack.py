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

The compiled kernel computes exactly these values and take decisions on every cell the answer and the backtrack
read, with far less work than the ``|E|·(S_max+1)·Π(c_k+1)`` cells spec §4.3 counts (docs/performance.md):

* Layout ``V[c', s]``, ``s`` innermost, updated in place. ``A`` has a positive entry in every column, so
  ``c' − A[:, i]`` is a different capacity point that comes earlier in the flat order; sweeping the points
  in descending order reads every source before it is overwritten, and each point's ``s``-run is one
  contiguous, vectorisable max.
* Capacity beyond what the edges processed so far can use changes nothing: ``V_i[s, c'] =
  V_i[s, min(c', S_i)]`` with ``S_i = Σ_{j ≥ i} A[:, j]``. Stage ``i`` works on the box ``min(c, S_i)`` only,
  first filling the box's new shell with the clamped values; the backtrack clamps the same way.
* Only capacities the answer can reach are needed: the answer is read at ``c̄ = min(c, S_0)``, and stage ``i``'s
  values are read (by stage ``i − 1`` and by the backtrack) only at ``c' ≥ c̄ − Σ_{j < i} A[:, j]``. With the
  box this is each stage's window ``[corner, box]``; points below it keep stale values that nothing reads.
* Per point, the largest feasible budget (``reach``) is tracked exactly: rows above it are never read or
  written, so the table needs no initialisation. Taking edge ``i`` reaches ``reach(c' − A_i) + Υ̂_i``.
* Per point, the flat prefix: budgets ``s ≤ flat(c')`` share row 0's value (``V`` is non-increasing in ``s``).
  Both branches of a stage are non-increasing, so the one that wins at row 0 (the keeping one on a tie) wins on
  its whole flat prefix with the same take bit: those rows are neither computed nor stored, and the backtrack
  reads row 0's bit for them (``flat`` per stage and point).
* Points with ``c' < A[:, i]`` in some component never take the edge, so they are not touched.

Infeasible rows are never combined with values: the answer's rows above the top point's reach are set to the
sentinel, and ``feasible`` marks the rows up to it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from cluster_envs.common.guards import Estimate
from cluster_envs.common.numba_cache import cached_njit

# Integer sentinels: with Σ|values| below the bound, sentinel ± Σ|values| neither overflows nor reaches the
# feasible range [−Σ|values|, Σ|values|].
_INT_TYPES = ((np.dtype(np.int32), -(2**30), 2**29), (np.dtype(np.int64), -(2**62), 2**61))
_PACK = np.uint64(0x0102040810204080)  # (8 bytes of 0/1) · _PACK >> 56 = the 8 bits, first byte lowest
# ESDP's value table (several budget rows) needs no initialisation, so one buffer per thread is kept from solve to
# solve: a fresh table of tens of MB costs a page fault per 4 KiB page (a fifth of a paper-scale ESDP slot). The
# oracle's one-row tables (solved once per arrival pattern) and tables above the cap are allocated per solve.
_KEPT_TABLE_BYTES = 2**28
_kept = threading.local()


def _value_table(size: int, dtype: np.dtype, width: int) -> np.ndarray:
    """An uninitialised array of ``size`` values: a view of this thread's kept buffer for a multi-row table that is
    small enough."""
    n_bytes = size * dtype.itemsize
    if width == 1 or n_bytes > _KEPT_TABLE_BYTES:
        return np.empty(size, dtype)
    buffer = getattr(_kept, "buffer", None)
    if buffer is None or buffer.size < n_bytes:
        buffer = _kept.buffer = np.empty(n_bytes + n_bytes // 4, np.uint8)  # room for the next slots' growth
    return buffer[:n_bytes].view(dtype)


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
    corner: np.ndarray  # (stages, K): the lower corner of each stage's guarded points
    rows: np.ndarray  # (stages,): budgets 0..rows−1 computed at each stage
    bit_offset: np.ndarray  # (stages,): where each stage's take bits start in ``bits``
    bits: np.ndarray  # take bits: per stage, per guarded point, ⌈rows/8⌉ bytes, bit s%8 of byte s//8
    flat_offset: np.ndarray  # (stages,): where each stage's guarded points start in ``flat``
    flat: np.ndarray  # per stage, per guarded point: budgets s ≤ flat[...] share row 0's value and take bit

    def backtrack(self, s: int | np.ndarray) -> np.ndarray:
        """x*_P4(s) for one budget (int8[|E|]) or for an array of budgets (int8[len(s), |E|])."""
        budgets = np.atleast_1d(np.asarray(s, dtype=np.int64))
        x = np.zeros((budgets.size, self.A.shape[1]), dtype=np.int8)
        layout = (self.order, self.box, self.corner, self.rows, self.bit_offset, self.bits, self.flat_offset,
                  self.flat)  # fmt: skip
        _backtrack(budgets, self.A, self.c, layout, self.budget_weights, x)
        return x[0] if np.ndim(s) == 0 else x


@cached_njit
def _backtrack(budgets, A, c, layout, budget_weights, x) -> None:
    """Follow the take bits from the full capacity, edges in index order, for each budget (into ``x``)."""
    order, box, corner, rows, bit_offset, bits, flat_offset, flat = layout
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
            point, stride = 0, 1  # the point in the guarded box corner[j] ≤ c' ≤ box[j], last dimension fastest
            for k in range(n_types - 1, -1, -1):
                ok &= cap[k] >= A[k, i]
                point += (min(cap[k], box[j, k]) - corner[j, k]) * stride
                stride *= box[j, k] - corner[j, k] + 1
            if not ok:
                continue
            row = s if s > 0 and s > flat[flat_offset[j] + point] else 0  # s = 0: no flat entry needed
            if not (bits[bit_offset[j] + point * ((rows[j] + 7) // 8) + row // 8] >> (row % 8)) & 1:
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

    order, box, corner, rows, guarded = _layout(A, c, upsilon, usable, s_max)
    final_box = box[-1] if order.size else np.zeros(n_types, np.int64)
    width = int(rows[-1]) if order.size else 1  # the s-stride of the layout
    extent = final_box + 1
    point_strides = np.append(np.cumprod(extent[:0:-1])[::-1], 1).astype(np.int64)
    sizes = guarded * ((rows + 7) // 8)
    bit_offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    bits = np.zeros(int(sizes.sum()), np.uint8)
    flat_sizes = guarded * (rows > 1)  # one budget row: nothing is flat beyond it
    flat_offset = np.concatenate([[0], np.cumsum(flat_sizes)[:-1]]).astype(np.int64)
    flat = np.zeros(int(flat_sizes.sum()), np.int32)
    n_points = int(np.prod(extent))
    V = _value_table(n_points * width, dtype, width)  # rows above a point's reach are never read
    V[0] = 0  # V_{|E|}[s, c'] = 0 iff s = 0 (the other points are filled as the box grows)
    n_tracked = n_points if width > 1 else 0  # one budget row (the oracle): row 0 is always feasible
    reach = np.zeros(n_tracked, np.int32)
    point_flat = np.zeros(n_tracked, np.int32)
    if order.size:
        layout = (order, box, corner, rows, bit_offset, point_strides, width, flat_offset)
        _sweep(V, reach, point_flat, bits, flat, values, upsilon, A, layout, neg)

    top_point = int(final_box @ point_strides)
    n_feasible, n_flat = (int(reach[top_point]) + 1, int(point_flat[top_point]) + 1) if n_tracked else (1, 1)
    top = np.full(s_max + 1, neg, dtype=dtype)
    top[:n_feasible] = V[top_point * width : top_point * width + n_feasible]
    top[:n_flat] = top[0]
    feasible = np.arange(s_max + 1) < n_feasible
    cells = order.size * (s_max + 1) * int(np.prod(c + 1))
    return KnapsackTable(top, feasible, cells, upsilon, A, c, order, box, corner, rows, bit_offset, bits, flat_offset,
                         flat)  # fmt: skip


def _layout(A: np.ndarray, c: np.ndarray, upsilon: np.ndarray, usable: np.ndarray, s_max: int):
    """The DP's shape: processed edges (last first), each stage's capacity box and budget rows, and its number of
    guarded points (``c' ≥ A[:, i]`` inside the box)."""
    order = np.flatnonzero(usable & (A <= c[:, None]).all(axis=0))[::-1].copy()
    requests = A[:, order].T.reshape(order.size, A.shape[0])
    used = np.cumsum(requests, axis=0)
    box = np.minimum(used, c)
    top = box[-1] if order.size else c  # the capacity the answer is read at
    later = used[-1] - used if order.size else used  # Σ of the requests of the stages after each stage
    corner = np.maximum(requests, top - later)
    rows = np.minimum(np.cumsum(upsilon[order]), s_max) + 1
    guarded = np.prod(box - corner + 1, axis=1)
    return order, box, corner, rows, guarded


# Seconds per guarded cell (point x budget row) of the sweep, fitted on oracle solves (one budget row, 33 to 320
# edges) on a loaded 2-core machine: docs/robustness.md, estimated vs measured. With several budget rows the sweep
# skips the rows above a point's reach and inside its flat prefix, so the estimate is an upper bound there.
SECONDS_PER_CELL = 8e-9


def estimate(
    A: np.ndarray, c: np.ndarray, *, budget_weights: np.ndarray | None = None, s_max: int = 0,
    usable: np.ndarray | None = None, value_bytes: int = 8,
) -> Estimate:  # fmt: skip
    """The peak allocation and run time of :func:`solve` on the same arguments, without running it (``value_bytes``:
    8 for float values, 4 or 8 for integer ones). Memory: the value table, the take bits, the flat prefixes and the
    per-point reach, exactly as :func:`solve` allocates them (a multi-row table comes from a buffer kept between
    solves, so only the first solve of a thread allocates it); time: a fitted cost per guarded cell."""
    A = np.asarray(A, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    n_types, n_edges = A.shape
    upsilon = np.zeros(n_edges, np.int64) if budget_weights is None else np.asarray(budget_weights, np.int64)
    usable = np.ones(n_edges, bool) if usable is None else np.asarray(usable, bool)
    order, box, corner, rows, guarded = _layout(A, c, upsilon, usable, s_max)
    if not order.size:
        return Estimate(0.0, 0.0, "no usable edge")
    # float: products of up to K capacities overflow int64 in exactly the cases the guard exists for
    points = float(np.prod((box[-1] + 1).astype(float)))
    value_table = points * int(rows[-1]) * value_bytes
    take_bits = float((guarded.astype(float) * ((rows + 7) // 8)).sum())
    flats = 4 * float((guarded.astype(float) * (rows > 1)).sum())
    per_point = 8 * points if rows[-1] > 1 else 0.0  # reach and flat prefix, int32 each
    memory = value_table + take_bits + flats + per_point
    cells = float((guarded.astype(float) * rows).sum())
    box_text = " x ".join(str(int(b) + 1) for b in box[-1])
    return Estimate(memory, cells * SECONDS_PER_CELL,
                    f"{order.size} edges, capacity box {box_text}, {int(rows[-1])} budget rows")  # fmt: skip


@cached_njit
def _sweep(V, reach, point_flat, bits, flat, values, upsilon, A, layout, neg):
    """Every stage of the DP in place on ``V`` (layout ``[c', s]``), ``reach`` and ``point_flat`` (per point, the
    largest feasible budget and the budgets up to which the value is row 0's), writing the take bits and ``flat``.
    ``layout``: the stages' (order, box, corner, rows, bit_offset) of :class:`KnapsackTable`, the point strides, the
    s-stride ``width`` and ``flat_offset``; ``neg``: the infeasible value.

    One function, hence its length: the per-point update is the DP's innermost work, inside the stage and point
    loops, where a helper taking the arrays would cost a reference count per array and call."""
    order, box, corner, rows, bit_offset, point_strides, width, flat_offset = layout
    n_types = A.shape[0]
    scratch = np.zeros(((width + 7) // 8) * 8, np.uint8)
    packed = scratch.view(np.uint64)
    previous_box = np.zeros(n_types, np.int64)
    for j in range(order.size):
        i = order[j]
        n_rows = rows[j]
        _extend_box(V, reach, point_flat, previous_box, box[j], point_strides, width)
        previous_box[:] = box[j]
        u = upsilon[i]
        v = values[i]
        shift = 0
        outer = 1  # guarded points, all dimensions but the last
        for k in range(n_types):
            shift += A[k, i] * point_strides[k]
            if k < n_types - 1:
                outer *= box[j, k] - corner[j, k] + 1
        last_lo, last_hi = corner[j, n_types - 1], box[j, n_types - 1]
        per_point = (n_rows + 7) // 8
        for o in range(outer - 1, -1, -1):
            rem = o
            base = 0
            for k in range(n_types - 2, -1, -1):
                span = box[j, k] - corner[j, k] + 1
                base += (rem % span + corner[j, k]) * point_strides[k]
                rem //= span
            if n_rows == 1:  # one budget row (the oracle's case): its take bit is bit 0 of the point's byte
                out = bit_offset[j] + o * (last_hi - last_lo + 1) - last_lo
                for last in range(last_hi, last_lo - 1, -1):
                    d = (base + last) * width
                    candidate, old = V[d - shift * width] + v, V[d]
                    bits[out + last] = candidate > old
                    V[d] = max(candidate, old)
                continue
            for last in range(last_hi, last_lo - 1, -1):
                point, source = base + last, base + last - shift
                old_reach, old_flat = reach[point], point_flat[point]
                top = min(reach[source] + u, n_rows - 1)  # the taking branch's largest feasible budget
                top_flat = min(point_flat[source] + u, top)  # ... and the budgets where it equals its row 0
                new_reach = max(old_reach, top)
                d, q = point * width, source * width
                old_first, first = V[d], V[q] + v
                # Both branches are non-increasing in s, so the winner at row 0 wins on its whole flat prefix.
                if first > old_first:
                    new_flat, first_bit = top_flat, 1
                    V[d] = first
                    for s in range(new_flat + 1, old_flat + 1):  # the keeping branch's rows, now needed
                        V[d + s] = old_first
                else:
                    new_flat, first_bit = old_flat, 0
                for s in range(max(old_reach, new_flat) + 1, new_reach + 1):  # rows only the taking branch reaches
                    V[d + s] = neg
                reach[point], point_flat[point] = new_reach, new_flat
                # Views, not indices, for the runs of budget rows: a view costs tens of ns, but the loops over
                # views vectorise, which the same loops indexing V twice (read and write) did not: 2x the DP.
                dst = V[d : d + top + 1]
                for s in range(new_flat + 1, top_flat + 1):  # the taking branch is flat there
                    old = dst[s]
                    scratch[s] = first > old
                    dst[s] = max(first, old)
                low = max(new_flat, top_flat) + 1  # rows s > top_flat read the source's rows s − Υ̂_i > its flat
                if low <= top:
                    dst_high = dst[low:]
                    src_high = V[q + low - u : q + top + 1 - u]
                    flags = scratch[low : top + 1]
                    for s in range(top + 1 - low):
                        candidate = src_high[s] + v
                        old = dst_high[s]
                        flags[s] = candidate > old
                        dst_high[s] = max(candidate, old)
                n_bytes = (top + 8) // 8
                start = (new_flat + 1) // 8  # bytes below hold only flat rows, which read row 0's bit
                scratch[8 * start : new_flat + 1] = 0
                scratch[top + 1 : 8 * n_bytes] = 0
                scratch[0] = first_bit
                slot = o * (last_hi - last_lo + 1) + last - last_lo
                flat[flat_offset[j] + slot] = new_flat
                out = bit_offset[j] + slot * per_point
                bits[out] = first_bit
                for b in range(start, n_bytes):  # bytes past the taking branch's reach stay 0: it never wins there
                    bits[out + b] = np.uint8((packed[b] * _PACK) >> np.uint64(56))


@cached_njit
def _extend_box(V, reach, point_flat, old_box, new_box, point_strides, width):
    """Fill the points of ``new_box`` outside ``old_box`` with their clamped values, reach and flat prefix.

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
            src = base + lo * point_strides[k]
            if width == 1:  # one budget row (the oracle's case): no reach or flat prefix to carry
                for ck in range(lo + 1, hi + 1):
                    V[base + ck * point_strides[k]] = V[src]
                continue
            first, end = point_flat[src] + 1, reach[src] + 1  # row 0 and the rows past the flat prefix
            for ck in range(lo + 1, hi + 1):
                dst = base + ck * point_strides[k]
                reach[dst], point_flat[dst] = reach[src], point_flat[src]
                V[dst * width] = V[src * width]
                V[dst * width + first : dst * width + end] = V[src * width + first : src * width + end]


def max_cardinality(A: np.ndarray, c: np.ndarray) -> int:
    """``max ‖x‖₁ s.t. Ax ≤ c`` (the exact ``m`` of spec §4.1, ``m_mode="exact"``)."""
    table = solve(np.ones(np.asarray(A).shape[1], dtype=np.int64), A, c)
    return int(table.values[0])
