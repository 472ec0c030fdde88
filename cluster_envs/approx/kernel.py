"""The compiled slot transition of the approximation-job model (numba, no gymnasium).

:class:`~cluster_envs.approx.simulator.ApproxSimulator` keeps its state in a few flat arrays (rows named
below) and steps them with :func:`step_begin` and :func:`step_end`, which run :func:`batch_begin` and
:func:`batch_end` (the batched env's loops over copies) on a batch of one. The utility's transcendental part
(``np.power`` / ``np.log1p``) runs between the two as one numpy call: numpy's SIMD maths differs from
libm in the last bit, and the trajectories must stay bit-for-bit those of the vectorized numpy model
(golden hashes). Sums use numpy's summation order (:mod:`~cluster_envs.common.pairwise`) and the matrix-vector
products ``executed @ rates`` BLAS's (:func:`batch_begin`), for the same reason.

The kernels take the state as one record, :class:`Batch` (fields :data:`BATCH_FIELDS`, by name, made by
:func:`batch_record`); the rows of its matrices and entries of its vectors are named below.
"""

from __future__ import annotations

import numpy as np

from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.common.pairwise import BLOCK, SUM_STACK, block_sum, pairwise_sum
from cluster_envs.common.record import declare_record

# Rows of the float job matrix ``jf`` (one column per job).
BUDGET, VALUE, LIFETIME, SPENT, WORK, SURROGATE, OPT_RATE, DEMAND, FWORK, SCRATCH = range(10)
JF_ROWS = 10
# Rows of the int job matrix ``ji``: data, flags, and three index buffers (FIFO queue, active jobs, departure order).
ARRIVAL, DEADLINE, EXHAUSTED, SCHEDULED, PARALLELISM, DEPARTURE_ORDER, WAITING, ACTIVE = range(8)
JI_ROWS = 8
# Rows of the float machine matrix ``mf`` and of the int machine matrix ``mi``.
PRICE, N_OBS, SUM_OBS, LAST_RATE, CAPACITY = range(5)
MF_ROWS = 5
LAST_MASK, LAST_JOB, NOW_JOB, EXEC_SLOT = range(4)  # EXEC_SLOT: the slot machine i ran (-1: none), if EXEC_SPARSE
MI_ROWS = 4
# Rows of the int slot matrix ``si`` and of the float slot matrix ``sf``.
SLOT_JOB, IS_NEW, EXHAUSTED_NOW, CHANGED = range(4)
SI_ROWS = 4
SLOT_WORK, SLOT_COST = range(2)
SF_ROWS = 2
# Entries of the int counters ``c``.
(T, NEXT_ARRIVAL, NEXT_DEPARTURE, NEXT_ACTIVATE, N_WAITING, N_ACTIVE, N_CHANGED, TOTAL_INVALID, TOTAL_BLOCKED,
 TOTAL_REPAIRED, MAX_CONCURRENCY, N_WAITED, N_INVALID, N_BLOCKED, N_REPAIRED, ARRIVALS_FROM,
 DEPARTURES_FROM, N_JOBS, RATES_FROM, EXEC_SPARSE) = range(20)  # fmt: skip
C_SIZE = 20  # N_JOBS: the instance's job count (a batch pads the job axis); RATES_FROM: slot of batch_begin's rates[0]
# EXEC_SPARSE: 1 if the last slot was stepped by _occupant_slot, so ``executed``'s ones are those of mi[EXEC_SLOT]
# Entries of the float statistics ``f``.
(UTILITY_TRUE, UTILITY_APPROX, ORACLE_ACCRUED, FIT_SIGNED, FIT_POSITIVE, MIGRATION_SUM, MIGRATIONS, REWARD_TRUE,
 REWARD_APPROX, REWARD_SPARSE) = range(10)  # fmt: skip
F_SIZE = 10
# Entries of the int parameters ``p``.
P_HARD, P_GENERALIZED, P_HAS_OPT, P_HORIZON = range(4)
P_SIZE = 4
# How :func:`step_begin` reads an action: occupants 0..K per machine, a 0/1 row for job slot 1, a 0/1 (K, M) matrix.
DECODE_OCCUPANT, DECODE_SINGLE, DECODE_MATRIX = range(3)
BAD_VALUE, OUT_OF_RANGE = -1, -2  # step_begin's error codes (nothing has changed when it returns them)

# The state record: per copy b (leading axis; the single env is a batch of one) the proposed ``assign`` (B, K, M)
# bool and ``executed`` (B, K, M) uint8 assignments and the row matrices and vectors named above (``jf``, ``ji``
# (B, rows, jobs), ``mf``, ``mi`` (B, rows, M), ``si``, ``sf`` (B, rows, K), ``c``, ``f`` (B, size)); the
# parameters ``p`` (P_SIZE,) are shared by every copy.
BATCH_FIELDS = ("assign", "executed", "jf", "ji", "mf", "mi", "si", "sf", "c", "f", "p")


BatchType, Batch, batch_record = declare_record(
    __name__,
    "Batch",
    BATCH_FIELDS,
    "The kernels' record of the copies' state (fields :data:`BATCH_FIELDS`); made by :func:`batch_record`.",
)


# Every per-copy function below indexes batch arrays (leading axis: the copy b) in place: a view per array and
# copy (numba's array views cost tens of ns each, refcounts included) would cost more than a copy's whole slot.
# The single env runs them on its own arrays with a leading axis of 1 (copy 0).


@cached_njit
def _long_row_sum(a, b, row, n):
    """:func:`_row_sum` beyond 128 terms, its split stack allocated here (rare: a row per job or job slot)."""
    return pairwise_sum(a, (b, row), 0, n, np.empty(SUM_STACK), (), 0)


@cached_njit(inline="always")
def _row_sum(a, b, row, n):
    """numpy's ``a[b, row, :n].sum()`` bit for bit (:func:`~cluster_envs.common.pairwise.pairwise_sum`), inlined
    for the usual n ≤ 128."""
    if n <= BLOCK:
        return 0.0 + block_sum(a, (b, row), 0, n)  # numpy adds to the identity 0.0 (an empty or -0.0 sum is +0.0)
    return _long_row_sum(a, b, row, n)


@cached_njit
def budget_check_into(assign, prices, spent, budget, out) -> None:
    """Alg. 1 lines 7-12 per row (A4): keep machine i of row k iff spent_k + Σ_{i' ≤ i} p_i' x_k^i' < budget_k."""
    for k in range(assign.shape[0]):
        cumulative = 0.0
        for i in range(assign.shape[1]):
            if assign[k, i]:
                cumulative += prices[i]
                out[k, i] = spent[k] + cumulative < budget[k]
            else:
                out[k, i] = False


@cached_njit(inline="always")
def _validate(actions, b, mode, n_slots) -> int:
    size = actions.shape[1]
    for i in range(size):
        v = actions[b, i]
        if v != v or v - np.floor(v) != 0:  # NaN, inf (inf - inf is NaN) or a fraction
            return BAD_VALUE
    high = n_slots if mode == DECODE_OCCUPANT else 1
    for i in range(size):
        if actions[b, i] < 0 or actions[b, i] > high:
            return OUT_OF_RANGE
    return 0


@cached_njit
def _repair(assign, b, si, jf, ji, mf, sf) -> int:
    """Sec. V-C repair in place (spec §3.10): capacity by dropping the highest slots, then parallelism.
    The column scratch is copy b's slot-work row, which is only filled after the repair."""
    n_slots, m = assign.shape[1], assign.shape[2]
    dropped = 0
    for i in range(m):
        load = 0.0
        for k in range(n_slots):
            j = si[b, SLOT_JOB, k]
            sf[b, SLOT_WORK, k] = jf[b, DEMAND, j] * assign[b, k, i] if j >= 0 else 0.0
            load = sf[b, SLOT_WORK, k] if k == 0 else load + sf[b, SLOT_WORK, k]
        if not load > mf[b, CAPACITY, i] + 1e-12:
            continue
        for k in range(n_slots - 1, -1, -1):
            if not assign[b, k, i]:
                continue
            if _row_sum(sf, b, SLOT_WORK, n_slots) <= mf[b, CAPACITY, i] + 1e-12:
                break
            assign[b, k, i] = False
            sf[b, SLOT_WORK, k] = 0.0
            dropped += 1
    for k in range(n_slots):
        j = si[b, SLOT_JOB, k]
        limit = ji[b, PARALLELISM, j] if j >= 0 else m
        kept = 0
        for i in range(m):
            if assign[b, k, i]:
                kept += 1
                if kept > limit:
                    assign[b, k, i] = False
                    dropped += 1
    return dropped


@cached_njit
def _executed_dot_blas(executed, b, x, out, orow) -> None:
    """:func:`batch_begin`'s dot products where its loops do not follow OpenBLAS: M ≥ 2048 (``dgemv_t`` blocks
    the columns: BLAS itself) and a (1, M ≥ 16) matrix (``ddot``: 16 lanes i % 16 over the first M & -16 terms,
    reduced as ``ddot_microk_haswell-2.c``, then the other terms one by one)."""
    n_slots, m = executed.shape[1], executed.shape[2]
    if m >= 2048:
        as_float = executed[b].astype(np.float64)
        if n_slots == 1:
            out[b, orow, 0] = np.dot(as_float[0], x)
        else:
            out[b, orow] = np.dot(as_float, x)
        return
    n1 = m & -16
    lanes = np.zeros(16)
    for i in range(n1):
        lanes[i & 15] += executed[b, 0, i] * x[i]
    low = ((lanes[0] + lanes[2]) + (lanes[4] + lanes[6])) + ((lanes[8] + lanes[10]) + (lanes[12] + lanes[14]))
    high = ((lanes[1] + lanes[3]) + (lanes[5] + lanes[7])) + ((lanes[9] + lanes[11]) + (lanes[13] + lanes[15]))
    dot = low + high
    for i in range(n1, m):
        dot += executed[b, 0, i] * x[i]
    out[b, orow, 0] = dot


@cached_njit(inline="always")
def _occupant_slot(actions, b, rates, state, body, two_from, two_to):
    """:func:`batch_begin`'s decode, validity and budget checks and work and cost products for an occupant action
    (one slot per machine) on K ≥ 2 slots, in O(M + K): ``executed`` is cleared where the last slot set it (all of
    it after a reset or a matrix step) and set where this one runs; each slot's products add its machines' terms in
    increasing machine order into the lanes of batch_begin's loops (i % 4, or i % 2 in its block of two rows, and
    the last M % 4 terms as one group). Below M = 2048 that is the dense path bit for bit (the terms it skips are
    +0.0); from M = 2048, where the dense path calls BLAS, whose blocking it does not follow, the two agree to
    rounding. Marks the jobs that ran as scheduled; returns (n_invalid, n_blocked)."""
    executed, jf, ji, mf, mi, si, sf, c, p = (state.executed, state.jf, state.ji, state.mf, state.mi, state.si,
                                             state.sf, state.c, state.p)  # fmt: skip
    n_slots, m = executed.shape[1], executed.shape[2]
    if c[b, EXEC_SPARSE]:
        for i in range(m):
            if mi[b, EXEC_SLOT, i] >= 0:
                executed[b, mi[b, EXEC_SLOT, i], i] = 0
    else:
        for k in range(n_slots):
            for i in range(m):
                executed[b, k, i] = 0
        c[b, EXEC_SPARSE] = 1
    lanes = np.zeros((2, n_slots, 4))  # work and cost lanes per slot
    tails = np.zeros((2, n_slots))
    cumulative = np.zeros(n_slots)  # the budget check's running spend per slot
    for k in range(n_slots):
        si[b, EXHAUSTED_NOW, k] = 0
    n_invalid = n_blocked = 0
    for i in range(m):
        mi[b, NOW_JOB, i] = -1
        mi[b, EXEC_SLOT, i] = -1
        k = int(actions[b, i]) - 1
        if k < 0:
            continue
        j = si[b, SLOT_JOB, k]
        if j < 0:  # a proposal to an empty slot
            n_invalid += 1
            continue
        if p[P_HARD]:
            cumulative[k] += mf[b, PRICE, i]
            if not jf[b, SPENT, j] + cumulative[k] < jf[b, BUDGET, j]:
                n_blocked += 1
                si[b, EXHAUSTED_NOW, k] = 1
                continue
        executed[b, k, i] = 1
        mi[b, NOW_JOB, i] = j
        mi[b, EXEC_SLOT, i] = k
        ji[b, SCHEDULED, j] = 1
        if i < body:
            lane = i & 1 if two_from <= k < two_to else i & 3
            lanes[0, k, lane] += rates[i]
            lanes[1, k, lane] += mf[b, PRICE, i]
        else:
            tails[0, k] += rates[i]
            tails[1, k] += mf[b, PRICE, i]
    for k in range(n_slots):
        for q in range(2):
            w = lanes[q, k]
            total = 0.0
            if body:
                total = 0.0 + (w[0] + w[1]) if two_from <= k < two_to else 0.0 + ((w[0] + w[2]) + (w[1] + w[3]))
            if body < m:
                total = total + tails[q, k]
            sf[b, SLOT_WORK if q == 0 else SLOT_COST, k] = total
    return n_invalid, n_blocked


@cached_njit(inline="always")  # into the single env's step_begin / step_end: no call
def batch_begin(actions, mode, rates, stepping, state, power_in, offsets) -> int:
    """First half of slot t = c[b, T] + 1 of every stepping copy b (leading axis of the state arrays; the single
    env is a batch of one, :func:`step_begin`): decode the action (validated before, :func:`batch_validate`),
    drop proposals to empty slots, repair, budget-check, run the executed tasks and update work, spend, feedback
    and migrations. Copy b's rates are ``rates[t - c[b, RATES_FROM], b]`` (slot-major: copies in step read one
    block); its job arrays may be padded (it has ``c[b, N_JOBS]`` jobs). Writes copy b's utility arguments to
    ``power_in[offsets[b]:offsets[b + 1]]`` (the new work of the jobs whose work changed, by job id, then
    W_j/(t − a_j) of every active job); returns their count. ``stepping=None``: every copy steps;
    ``offsets=None`` (one copy): its arguments start at ``power_in[0]``.

    One loop with the whole slot inside, hence its length: an inlined helper taking arrays costs a reference
    count per array and call, more than the work here. The work and cost products ``executed @ rates`` and
    ``executed @ prices`` follow numpy's BLAS (OpenBLAS, Haswell kernels: the ones this suite's wheels select on
    x86-64 with AVX2) bit for bit: a (1, M) matrix is a ``ddot`` (M < 16: the terms one by one), a larger one a
    ``dgemv_t``, whose rows in blocks of 4 (and a last single row) sum the first M & -4 terms in 4 lanes i % 4,
    reduced as (l0 + l2) + (l1 + l3), a block of 2 rows in 2 lanes i % 2, then add the last M % 4 terms as one
    group.
    ``executed`` is 0/1, so every product is exact and only this order matters (FMA or not). ``while`` loops:
    numba compiles a stepped ``range`` into a much slower loop.
    """
    assign, executed, jf, ji, mf, mi = state.assign, state.executed, state.jf, state.ji, state.mf, state.mi
    si, sf, c, f, p = state.si, state.sf, state.c, state.f, state.p
    n_slots, m = assign.shape[1], assign.shape[2]
    body = m - (m & 3)
    two_from = n_slots & -4
    two_to = two_from + ((n_slots - two_from) & 2)
    looped = m < 2048 and (n_slots > 1 or m < 16)
    total = 0
    for b in range(c.shape[0]):
        if offsets is not None:
            offsets[b] = total
        if stepping is not None:
            if not stepping[b]:
                continue
        t = c[b, T] + 1
        row = t - c[b, RATES_FROM]
        sparse = mode == DECODE_OCCUPANT and n_slots > 1 and not p[P_GENERALIZED]
        if sparse:  # one slot per machine: O(M + K) instead of the (K, M) matrices' O(K·M)
            n_invalid, n_blocked = _occupant_slot(actions, b, rates[row, b], state, body, two_from, two_to)
            n_repaired = 0
        else:
            c[b, EXEC_SPARSE] = 0
            for k in range(n_slots):
                for i in range(m):
                    assign[b, k, i] = False
            if mode == DECODE_OCCUPANT:
                for i in range(m):
                    if actions[b, i] > 0:
                        assign[b, int(actions[b, i]) - 1, i] = True
            elif mode == DECODE_SINGLE:
                for i in range(m):
                    assign[b, 0, i] = actions[b, i] != 0
            else:
                for k in range(n_slots):
                    for i in range(m):
                        assign[b, k, i] = actions[b, k * m + i] != 0
            n_invalid = 0
            for k in range(n_slots):
                if si[b, SLOT_JOB, k] < 0:
                    for i in range(m):
                        n_invalid += assign[b, k, i]
                        assign[b, k, i] = False
            n_repaired = _repair(assign, b, si, jf, ji, mf, sf) if p[P_GENERALIZED] else 0
            n_blocked = 0
            for i in range(m):
                mi[b, NOW_JOB, i] = -1
            for k in range(n_slots):
                j = si[b, SLOT_JOB, k]
                spent = jf[b, SPENT, j] if j >= 0 else 0.0
                budget = jf[b, BUDGET, j] if j >= 0 else np.inf
                cumulative = 0.0
                si[b, EXHAUSTED_NOW, k] = 0
                for i in range(m):
                    run = assign[b, k, i]
                    if run and p[P_HARD]:
                        cumulative += mf[b, PRICE, i]
                        if not spent + cumulative < budget:
                            run = False
                            n_blocked += 1
                            si[b, EXHAUSTED_NOW, k] = 1
                    executed[b, k, i] = 1 if run else 0
                    if run:
                        mi[b, NOW_JOB, i] = j  # the last executed slot wins, as numpy's fancy assignment
            if not looped:
                _executed_dot_blas(executed, b, rates[row, b], sf, SLOT_WORK)
                _executed_dot_blas(executed, b, mf[b, PRICE], sf, SLOT_COST)
            for k in range(n_slots if looped else 0):
                work = cost = 0.0
                if n_slots == 1:
                    for i in range(m):
                        work += executed[b, 0, i] * rates[row, b, i]
                        cost += executed[b, 0, i] * mf[b, PRICE, i]
                else:
                    if body:
                        w0 = w1 = w2 = w3 = c0 = c1 = c2 = c3 = 0.0
                        i = 0
                        if two_from <= k < two_to:
                            while i < body:
                                w0 += executed[b, k, i] * rates[row, b, i]
                                w1 += executed[b, k, i + 1] * rates[row, b, i + 1]
                                c0 += executed[b, k, i] * mf[b, PRICE, i]
                                c1 += executed[b, k, i + 1] * mf[b, PRICE, i + 1]
                                i += 2
                            work, cost = 0.0 + (w0 + w1), 0.0 + (c0 + c1)
                        else:
                            while i < body:
                                w0 += executed[b, k, i] * rates[row, b, i]
                                w1 += executed[b, k, i + 1] * rates[row, b, i + 1]
                                w2 += executed[b, k, i + 2] * rates[row, b, i + 2]
                                w3 += executed[b, k, i + 3] * rates[row, b, i + 3]
                                c0 += executed[b, k, i] * mf[b, PRICE, i]
                                c1 += executed[b, k, i + 1] * mf[b, PRICE, i + 1]
                                c2 += executed[b, k, i + 2] * mf[b, PRICE, i + 2]
                                c3 += executed[b, k, i + 3] * mf[b, PRICE, i + 3]
                                i += 4
                            work, cost = 0.0 + ((w0 + w2) + (w1 + w3)), 0.0 + ((c0 + c2) + (c1 + c3))
                    if body < m:
                        work_tail = executed[b, k, body] * rates[row, b, body]
                        cost_tail = executed[b, k, body] * mf[b, PRICE, body]
                        i = body + 1
                        while i < m:
                            work_tail = work_tail + executed[b, k, i] * rates[row, b, i]
                            cost_tail = cost_tail + executed[b, k, i] * mf[b, PRICE, i]
                            i += 1
                        work, cost = work + work_tail, cost + cost_tail
                sf[b, SLOT_WORK, k] = work
                sf[b, SLOT_COST, k] = cost
        # migrations: machines whose previous, still-running occupant changed (before this slot's exhaustions)
        moved = 0
        for i in range(m):
            now = mi[b, NOW_JOB, i]
            prev = mi[b, LAST_JOB, i]
            if prev >= 0 and ji[b, ARRIVAL, prev] < t and t <= ji[b, DEADLINE, prev] and not ji[b, EXHAUSTED, prev]:
                moved += now != prev
            mi[b, LAST_JOB, i] = now
            ran = now >= 0
            mi[b, LAST_MASK, i] = ran
            mf[b, N_OBS, i] += ran
            mf[b, SUM_OBS, i] += rates[row, b, i] if ran else 0.0
            mf[b, LAST_RATE, i] = rates[row, b, i] if ran else 0.0
        f[b, MIGRATIONS] = moved / m
        if t >= 2:
            f[b, MIGRATION_SUM] += f[b, MIGRATIONS]
        n_changed = 0
        for k in range(n_slots):
            j = si[b, SLOT_JOB, k]
            if j < 0:
                continue
            old = jf[b, WORK, j]
            jf[b, WORK, j] = old + sf[b, SLOT_WORK, k]
            jf[b, SPENT, j] += sf[b, SLOT_COST, k]
            if si[b, EXHAUSTED_NOW, k]:
                ji[b, EXHAUSTED, j] = 1
            for i in range(0 if sparse else m):  # (the sparse slot has marked its jobs scheduled)
                if executed[b, k, i] > 0:
                    ji[b, SCHEDULED, j] = 1
                    break
            if jf[b, WORK, j] != old:  # insertion by job id, the order of numpy's flatnonzero
                pos = n_changed
                while pos > 0 and si[b, CHANGED, pos - 1] > j:
                    si[b, CHANGED, pos] = si[b, CHANGED, pos - 1]
                    pos -= 1
                si[b, CHANGED, pos] = j
                n_changed += 1
        for q in range(n_changed):
            power_in[total + q] = jf[b, WORK, si[b, CHANGED, q]]
        # active jobs a_j < t <= d_j, in job-id order (ids follow arrivals, so new ones append)
        n_active = 0
        for q in range(c[b, N_ACTIVE]):
            j = ji[b, ACTIVE, q]
            if t <= ji[b, DEADLINE, j]:
                ji[b, ACTIVE, n_active] = j
                n_active += 1
        while c[b, NEXT_ACTIVATE] < c[b, N_JOBS] and ji[b, ARRIVAL, c[b, NEXT_ACTIVATE]] < t:
            j = c[b, NEXT_ACTIVATE]
            if t <= ji[b, DEADLINE, j]:
                ji[b, ACTIVE, n_active] = j
                n_active += 1
            c[b, NEXT_ACTIVATE] += 1
        for q in range(n_active):
            j = ji[b, ACTIVE, q]
            power_in[total + n_changed + q] = jf[b, WORK, j] / float(t - ji[b, ARRIVAL, j])
        c[b, N_ACTIVE] = n_active
        c[b, N_CHANGED] = n_changed
        c[b, N_INVALID] = n_invalid
        c[b, N_BLOCKED] = n_blocked
        c[b, N_REPAIRED] = n_repaired
        total += n_changed + n_active
    if offsets is not None:
        offsets[c.shape[0]] = total
    return total


@cached_njit
def step_begin(action, mode, rates, state, power_in) -> int:
    """:func:`batch_begin` for one env after validating its action: the state arrays are a batch of one (leading
    axis of length 1, as :class:`~cluster_envs.approx.simulator.ApproxSimulator` keeps them), ``action`` (A,)
    and ``rates`` (M,) this slot's. The number of utility arguments written to ``power_in``, or an error code
    < 0 (state untouched)."""
    actions = action[None]
    code = _validate(actions, 0, mode, state.assign.shape[1])
    if code < 0:
        return code
    c = state.c
    c[0, RATES_FROM] = c[0, T] + 1
    return batch_begin(actions, mode, rates[None, None], None, state, power_in, None)


@cached_njit(inline="always")  # into the single env's step_begin / step_end: no call
def batch_end(power_out, offsets, stepping, state, beta, horizon, obs):
    """Second half of slot t of every stepping copy b (see :func:`batch_begin`; the single env is a batch of one,
    :func:`step_end`): rewards from the utility terms ``value * power_out[offsets[b]:]`` (g(x) of batch_begin's
    arguments: x^β, log(1 + x) or x), departures, freed slots and admissions. Then, unless ``obs`` is None, every
    copy's observation (the single env's ``observation_from``) written straight into the fresh batch arrays
    ``obs`` = (time, price, n_obs, sum_obs, last_rate, last_mask, jobs, last_occupant); a (B, 0)
    ``last_occupant`` is not written (single-job env). One loop with the slot inside, as in batch_begin, hence its
    length."""
    executed, jf, ji, mf, mi, si = state.executed, state.jf, state.ji, state.mf, state.mi, state.si
    c, f, p = state.c, state.f, state.p
    n_slots, m = executed.shape[1], executed.shape[2]
    for b in range(c.shape[0]):
        if stepping is None or stepping[b]:
            start, n = 0 if offsets is None else offsets[b], c[b, N_JOBS]
            t = c[b, T] + 1
            n_changed, n_active = c[b, N_CHANGED], c[b, N_ACTIVE]
            for q in range(n_changed):
                j = si[b, CHANGED, q]
                new = jf[b, VALUE, j] * power_out[start + q]
                jf[b, SCRATCH, q] = new - jf[b, FWORK, j]
                jf[b, FWORK, j] = new
            f[b, REWARD_TRUE] = _row_sum(jf, b, SCRATCH, n_changed)
            f[b, UTILITY_TRUE] += f[b, REWARD_TRUE]
            for q in range(n_active):
                j = ji[b, ACTIVE, q]
                length = float(t - ji[b, ARRIVAL, j])
                new = length * (jf[b, VALUE, j] * power_out[start + n_changed + q])
                jf[b, SCRATCH, q] = new - jf[b, SURROGATE, j]
                jf[b, SURROGATE, j] = new
            f[b, REWARD_APPROX] = _row_sum(jf, b, SCRATCH, n_active)
            f[b, UTILITY_APPROX] += f[b, REWARD_APPROX]
            if p[P_HAS_OPT]:
                for q in range(n_active):
                    jf[b, SCRATCH, q] = jf[b, OPT_RATE, ji[b, ACTIVE, q]]
                f[b, ORACLE_ACCRUED] += _row_sum(jf, b, SCRATCH, n_active)
            # departures (deadline order): Fit (Eq. 8) and the sparse reward
            first = c[b, NEXT_DEPARTURE]
            while c[b, NEXT_DEPARTURE] < n and ji[b, DEADLINE, ji[b, DEPARTURE_ORDER, c[b, NEXT_DEPARTURE]]] <= t:
                c[b, NEXT_DEPARTURE] += 1
            n_leaving = c[b, NEXT_DEPARTURE] - first
            for q in range(n_leaving):
                j = ji[b, DEPARTURE_ORDER, first + q]
                jf[b, SCRATCH, q] = jf[b, SPENT, j] - jf[b, BUDGET, j]
            f[b, FIT_SIGNED] += _row_sum(jf, b, SCRATCH, n_leaving)
            for q in range(n_leaving):
                jf[b, SCRATCH, q] = max(jf[b, SCRATCH, q], 0.0)
            f[b, FIT_POSITIVE] += _row_sum(jf, b, SCRATCH, n_leaving)
            for q in range(n_leaving):
                jf[b, SCRATCH, q] = jf[b, FWORK, ji[b, DEPARTURE_ORDER, first + q]]
            f[b, REWARD_SPARSE] = _row_sum(jf, b, SCRATCH, n_leaving)
            c[b, DEPARTURES_FROM] = first
            for k in range(n_slots):
                j = si[b, SLOT_JOB, k]
                if j >= 0 and (ji[b, DEADLINE, j] <= t or ji[b, EXHAUSTED, j]):
                    si[b, SLOT_JOB, k] = -1
                si[b, IS_NEW, k] = 0
            _admit(t, ji, b, n, si, c)
            c[b, T] = t
            c[b, TOTAL_INVALID] += c[b, N_INVALID]
            c[b, TOTAL_BLOCKED] += c[b, N_BLOCKED]
            c[b, TOTAL_REPAIRED] += c[b, N_REPAIRED]
        if obs is not None:
            time, price, n_obs, sum_obs, last_rate, last_mask, jobs, occupant = obs
            t = c[b, T]
            time[b, 0] = t / horizon
            time[b, 1] = (horizon - t) / horizon
            for i in range(m):
                price[b, i] = mf[b, PRICE, i]
                n_obs[b, i] = mf[b, N_OBS, i]
                sum_obs[b, i] = mf[b, SUM_OBS, i]
                last_rate[b, i] = mf[b, LAST_RATE, i]
                last_mask[b, i] = mi[b, LAST_MASK, i]
            _job_rows(jobs, b, beta, False, jf, ji, si, t)
            if occupant.shape[1] and c[b, EXEC_SPARSE]:
                for i in range(m):
                    occupant[b, i] = mi[b, EXEC_SLOT, i] + 1
            elif occupant.shape[1]:
                for i in range(m):
                    slot = 0
                    for k in range(n_slots):
                        if executed[b, k, i] > 0:
                            slot += k + 1
                    occupant[b, i] = slot


@cached_njit
def step_end(power_out, state) -> None:
    """:func:`batch_end` for one env (state arrays a batch of one, as for :func:`step_begin`), without the
    observation."""
    batch_end(power_out, None, None, state, 0.0, 1, None)


@cached_njit(inline="always")
def _admit(t, ji, b, n_jobs, si, c) -> None:
    """Copy b's jobs with a_j = t join the FIFO queue; queued jobs take the lowest free slots (spec §3.3)."""
    c[b, ARRIVALS_FROM] = c[b, NEXT_ARRIVAL]
    n_waiting = c[b, N_WAITING]
    while c[b, NEXT_ARRIVAL] < n_jobs and ji[b, ARRIVAL, c[b, NEXT_ARRIVAL]] <= t:
        ji[b, WAITING, n_waiting] = c[b, NEXT_ARRIVAL]
        n_waiting += 1
        c[b, NEXT_ARRIVAL] += 1
    kept = 0
    for q in range(n_waiting):
        j = ji[b, WAITING, q]
        if ji[b, DEADLINE, j] > t:
            ji[b, WAITING, kept] = j
            kept += 1
    placed = 0
    occupied = 0
    for k in range(si.shape[2]):
        if si[b, SLOT_JOB, k] < 0 and placed < kept:
            si[b, SLOT_JOB, k] = ji[b, WAITING, placed]
            si[b, IS_NEW, k] = 1
            placed += 1
        occupied += si[b, SLOT_JOB, k] >= 0
    c[b, N_WAITED] += kept - placed
    for q in range(kept - placed):
        ji[b, WAITING, q] = ji[b, WAITING, placed + q]
    c[b, N_WAITING] = kept - placed
    c[b, MAX_CONCURRENCY] = max(c[b, MAX_CONCURRENCY], occupied + c[b, N_WAITING])


@cached_njit
def admit(t, ji, si, c) -> None:
    """Jobs with a_j = t join the FIFO queue; queued jobs take the lowest free slots (spec §3.3)."""
    _admit(t, ji[None], 0, ji.shape[1], si[None], c[None])


@cached_njit(inline="always")
def _job_rows(rows, b, beta, generalized, jf, ji, si, t) -> None:
    """Copy b's ``jobs`` matrix (K, F) into ``rows[b]``: one row per visible job slot, zeros for an empty slot."""
    for k in range(rows.shape[1]):
        j = si[b, SLOT_JOB, k]
        if j < 0:
            for q in range(rows.shape[2]):
                rows[b, k, q] = 0.0
            continue
        rows[b, k, 0] = 1.0
        rows[b, k, 1] = si[b, IS_NEW, k]
        rows[b, k, 2] = jf[b, VALUE, j]
        rows[b, k, 3] = beta
        rows[b, k, 4] = jf[b, BUDGET, j]
        rows[b, k, 5] = jf[b, SPENT, j]
        rows[b, k, 6] = jf[b, BUDGET, j] - jf[b, SPENT, j]
        rows[b, k, 7] = jf[b, BUDGET, j] / jf[b, LIFETIME, j]
        rows[b, k, 8] = t - ji[b, ARRIVAL, j]
        rows[b, k, 9] = ji[b, DEADLINE, j] - t
        rows[b, k, 10] = jf[b, WORK, j]
        rows[b, k, 11] = jf[b, LIFETIME, j]
        if generalized:
            rows[b, k, 12] = jf[b, DEMAND, j]
            rows[b, k, 13] = ji[b, PARALLELISM, j]


@cached_njit
def write_job_rows(rows, beta, generalized, state, t) -> None:
    """The observation's ``jobs`` matrix (K, F) of one env (``state`` a batch of one): one row per visible job
    slot, zeros for an empty slot."""
    _job_rows(rows[None], 0, beta, generalized, state.jf, state.ji, state.si, t)


# The keys of the flat observation's layout (:func:`write_flat_observation`), in gymnasium's (sorted) Dict order.
FLAT_KEYS = ("job", "jobs", "last_assignment", "last_mask", "last_occupant", "last_rate", "n_obs", "price", "sum_obs",
             "time")  # fmt: skip


@cached_njit
def write_flat_observation(out, starts, scale, t, horizon, mf, mi, rows, executed) -> None:
    """One env's observation as ``gymnasium.spaces.flatten`` of its Dict gives it, each entry divided by ``scale``
    (ones: the flat observation; the public bounds: the scaled one), into ``out`` (float64 or float32): the
    Dict's parts written at ``starts`` (one per ``FLAT_KEYS`` entry, -1 where the env has no such key) straight
    from the state arrays, instead of building the Dict and flattening it part by part."""
    m, n_slots = mf.shape[1], executed.shape[0]
    values = np.zeros(out.size)
    if starts[0] >= 0:
        values[starts[0] : starts[0] + rows.shape[1]] = rows[0]
    if starts[1] >= 0:
        values[starts[1] : starts[1] + rows.size] = rows.ravel()
    if starts[2] >= 0:
        values[starts[2] : starts[2] + executed.size] = executed.ravel()
    for i in range(m):
        values[starts[3] + i] = mi[LAST_MASK, i]
        if starts[4] >= 0:  # one-hot of the occupant slot 1..K (0: idle) per machine
            occupant = 0
            for k in range(n_slots):
                if executed[k, i]:
                    occupant += k + 1
            values[starts[4] + i * (n_slots + 1) + occupant] = 1.0
        values[starts[5] + i] = mf[LAST_RATE, i]
        values[starts[6] + i] = mf[N_OBS, i]
        values[starts[7] + i] = mf[PRICE, i]
        values[starts[8] + i] = mf[SUM_OBS, i]
    values[starts[9]] = t / horizon
    values[starts[9] + 1] = (horizon - t) / horizon
    for q in range(out.size):
        out[q] = values[q] / scale[q]


@cached_njit
def occupants(assign):
    """Σ_k (k + 1) assign[k, i] per machine: the occupant slot 1..K of a one-job-per-machine assignment (0 idle)."""
    out = np.zeros(assign.shape[1], dtype=np.int64)
    for k in range(assign.shape[0]):
        for i in range(assign.shape[1]):
            if assign[k, i]:
                out[i] += k + 1
    return out


@cached_njit
def batch_validate(actions, mode, n_slots, stepping):
    """(first copy whose action is malformed, its error code), or (-1, 0): checked before any copy steps."""
    for b in range(actions.shape[0]):
        if stepping[b]:
            code = _validate(actions, b, mode, n_slots)
            if code < 0:
                return b, code
    return -1, 0
