"""The budgeted 0/1 multi-dimensional knapsack dynamic program (Algorithm 2 of paper 001, spec §4.3).

One implementation serves two callers:

* the env's oracle (spec §4.6): ``max ṽᵀx s.t. Ax ≤ c`` over the usable edges, which is the budgeted
  problem with ``s_max = 0`` and float values;
* ESDP (agents/multiserver): P4(s) = ``max Σ̂²ᵀx s.t. Ax ≤ c, Υ̂ᵀx ≥ s`` for every ``s ∈ {0..s_max}``,
  with integer values.

State ``(s, c')`` with ``s ∈ {0..s_max}`` and ``c' ∈ Π_k {0..c_k}``; the value layer ``V_i[s, c']`` is the
best value over edges ``i..|E|-1`` (0-based), ``−∞`` when infeasible. Edges are processed from the last
to the first, the whole ``(s, c')`` table at once: taking edge ``i`` maps ``s`` to ``max(s − Υ̂_i, 0)`` (a
row shift, all rows below ``Υ̂_i`` reading row 0) and ``c'`` to ``c' − A[:, i]`` (a slice offset), and is
allowed only where ``A[:, i] ≤ c'``, which is the printed algorithm's clip-and-revert in one guard. Ties
keep the edge out (Alg. 2 line 10). The per-edge take tables are bit-packed for the backtrack.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_INT_SENTINEL = {np.dtype(np.int32): -(2**31 - 1), np.dtype(np.int64): -(2**62)}


@dataclass
class KnapsackTable:
    """The result of :func:`solve`: the optimal value of every budget and what backtracking needs."""

    values: np.ndarray  # V_0[s, c] for s = 0..s_max (−inf / sentinel where infeasible)
    feasible: np.ndarray  # bool per s
    take: list[np.ndarray | None]  # packed take bits per edge (None: edge never takeable)
    shape: tuple[int, ...]  # (s_max + 1, c_1 + 1, ..., c_K + 1)
    budget_weights: np.ndarray  # Υ̂ (int64, zeros for the oracle)
    A: np.ndarray
    c: np.ndarray
    cells: int  # DP cells updated: Σ over processed edges of (s_max + 1)·Π(c_k + 1)

    def backtrack(self, s: int | np.ndarray) -> np.ndarray:
        """x*_P4(s) for one budget (int8[|E|]) or for an array of budgets (int8[len(s), |E|])."""
        scalar = np.ndim(s) == 0
        s_cur = np.atleast_1d(np.asarray(s, dtype=np.int64)).copy()
        cap = np.broadcast_to(self.c, (s_cur.size, self.c.size)).astype(np.int64)
        strides = np.cumprod((self.shape[1:] + (1,))[::-1])[::-1]  # element strides of (s, c_1..c_K)
        x = np.zeros((s_cur.size, len(self.take)), dtype=np.int8)
        for i, packed in enumerate(self.take):
            if packed is None:
                continue
            flat = s_cur * strides[0] + cap @ strides[1:]
            bit = (packed[flat >> 3] >> (7 - (flat & 7))) & 1
            hit = bit.astype(bool)
            x[hit, i] = 1
            s_cur[hit] = np.maximum(s_cur[hit] - self.budget_weights[i], 0)
            cap[hit] -= self.A[:, i]
        return x[0] if scalar else x


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
    n_edges = A.shape[1]
    upsilon = np.zeros(n_edges, np.int64) if budget_weights is None else np.asarray(budget_weights, np.int64)
    usable = np.ones(n_edges, bool) if usable is None else np.asarray(usable, bool)
    values = np.asarray(values)
    if values.dtype.kind == "f":
        dtype, neg = np.dtype(np.float64), -np.inf
    else:  # integers: int32 when no sum of values can reach the sentinel's half, else int64
        dtype = np.dtype(np.int32) if int(np.abs(values).sum()) < 2**29 else np.dtype(np.int64)
        neg = _INT_SENTINEL[dtype]
    values = values.astype(dtype)
    shape = (s_max + 1, *(int(ck) + 1 for ck in c))
    V = np.full(shape, neg, dtype=dtype)
    V[0] = 0  # V_{|E|}[s, c'] = 0 iff s = 0
    take: list[np.ndarray | None] = [None] * n_edges
    cells = 0
    for i in range(n_edges - 1, -1, -1):
        a = A[:, i]
        if not usable[i] or (a > c).any():
            continue
        cells += V.size
        src = tuple(slice(0, int(ck) + 1 - int(ak)) for ck, ak in zip(c, a, strict=True))
        dst = tuple(slice(int(ak), int(ck) + 1) for ck, ak in zip(c, a, strict=True))
        u = int(min(upsilon[i], s_max + 1))
        # Candidates are computed from V_{i+1} before V is overwritten in place.
        high = V[(slice(0, s_max + 1 - u), *src)] + values[i]  # rows s ≥ u read s − u
        low = V[(0, *src)] + values[i]  # rows s < u read row 0
        bits = np.zeros(shape, dtype=bool)
        for rows, cand in ((slice(u, s_max + 1), high), (slice(0, u), low)):
            view = V[(rows, *dst)]
            if view.size == 0:
                continue
            better = cand > view
            bits[(rows, *dst)] = better
            np.copyto(view, cand, where=better)
        take[i] = np.packbits(bits.ravel())
    top = V[(slice(None), *(int(ck) for ck in c))].copy()
    feasible = top > (neg / 2 if dtype.kind == "i" else -np.inf)
    return KnapsackTable(top, feasible, take, shape, upsilon, A, c, cells)


def max_cardinality(A: np.ndarray, c: np.ndarray) -> int:
    """``max ‖x‖₁ s.t. Ax ≤ c`` (the exact ``m`` of spec §4.1, ``m_mode="exact"``)."""
    table = solve(np.ones(np.asarray(A).shape[1], dtype=np.int64), A, c)
    return int(table.values[0])
