"""The compiled slot transition of the approximation-job model (numba, no gymnasium).

:class:`~cluster_envs.approx.dynamics.ApproxSimulator` keeps its state in a few flat arrays (rows named
below) and steps them with :func:`step_begin` and :func:`step_end`. The utility's transcendental part
(``np.power`` / ``np.log1p``) runs between the two as one numpy call: numpy's SIMD maths differs from
libm in the last bit, and the trajectories must stay bit-for-bit those of the vectorized numpy model
(golden hashes). Sums use :func:`pairwise_sum`, numpy's summation order, and the matrix-vector products
:func:`executed_dot`, the summation order of the BLAS numpy uses, for the same reason.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Rows of the float job matrix ``jf`` (one column per job).
BUDGET, VALUE, LIFETIME, SPENT, WORK, SURROGATE, OPT_RATE, DEMAND, FWORK, SCRATCH = range(10)
JF_ROWS = 10
# Rows of the int job matrix ``ji``: data, flags, and three index buffers (FIFO queue, active jobs, departure order).
ARRIVAL, DEADLINE, EXHAUSTED, SCHEDULED, PARALLELISM, DEPARTURE_ORDER, WAITING, ACTIVE = range(8)
JI_ROWS = 8
# Rows of the float machine matrix ``mf`` and of the int machine matrix ``mi``.
PRICE, N_OBS, SUM_OBS, LAST_RATE, CAPACITY = range(5)
MF_ROWS = 5
LAST_MASK, LAST_JOB, NOW_JOB = range(3)
MI_ROWS = 3
# Rows of the int slot matrix ``si`` and of the float slot matrix ``sf``.
SLOT_JOB, IS_NEW, EXHAUSTED_NOW, CHANGED = range(4)
SI_ROWS = 4
SLOT_WORK, SLOT_COST = range(2)
SF_ROWS = 2
# Entries of the int counters ``c``.
(T, NEXT_ARRIVAL, NEXT_DEPARTURE, NEXT_ACTIVATE, N_WAITING, N_ACTIVE, N_CHANGED, TOTAL_INVALID, TOTAL_BLOCKED,
 TOTAL_REPAIRED, MAX_CONCURRENCY, N_WAITED, N_INVALID, N_BLOCKED, N_REPAIRED, ARRIVALS_FROM,
 DEPARTURES_FROM) = range(17)  # fmt: skip
C_SIZE = 17
# Entries of the float statistics ``f``.
(UTILITY_TRUE, UTILITY_APPROX, BENCHMARK_ACCRUED, FIT_SIGNED, FIT_POSITIVE, MIGRATION_SUM, MIGRATIONS, REWARD_TRUE,
 REWARD_APPROX, REWARD_SPARSE) = range(10)  # fmt: skip
F_SIZE = 10
# Entries of the int parameters ``p``.
P_HARD, P_GENERALIZED, P_HAS_OPT, P_HORIZON = range(4)
P_SIZE = 4
# How :func:`step_begin` reads an action: occupants 0..K per machine, a 0/1 row for job slot 1, a 0/1 (K, M) matrix.
DECODE_OCCUPANT, DECODE_SINGLE, DECODE_MATRIX = range(3)
BAD_VALUE, OUT_OF_RANGE = -1, -2  # step_begin's error codes (nothing has changed when it returns them)


@njit(cache=True)
def _block_sum(a, start, n):
    """numpy's pairwise summation of at most 128 terms (8 accumulators); see :func:`pairwise_sum`."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[start + i]
        return res
    r = a[start : start + 8].copy()
    i = 8
    while i < n - (n % 8):
        for q in range(8):
            r[q] += a[start + i + q]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@njit(cache=True)
def _half(n):
    half = n // 2
    return half - half % 8


@njit(cache=True)
def pairwise_sum(a, start, n):
    """numpy's ``a[start:start + n].sum()``, bit for bit: blocks of ≤ 128 terms, halved recursively above.

    The recursion runs on an explicit stack (numba's cache does not reload recursive functions reliably).
    """
    if n <= 128:
        return 0.0 + _block_sum(a, start, n)  # numpy adds to the identity 0.0 (so an empty or -0.0 sum is +0.0)
    starts, sizes = np.empty(64, np.int64), np.empty(64, np.int64)
    stage, left = np.zeros(64, np.int64), np.empty(64)
    top, starts[0], sizes[0] = 0, start, n
    while True:
        if sizes[top] > 128:  # descend into the left half
            stage[top] = 1
            starts[top + 1], sizes[top + 1], stage[top + 1] = starts[top], _half(sizes[top]), 0
            top += 1
            continue
        value = _block_sum(a, starts[top], sizes[top])
        top -= 1
        while top >= 0 and stage[top] == 2:  # both halves done: add them
            value = left[top] + value
            top -= 1
        if top < 0:
            return 0.0 + value
        left[top], stage[top] = value, 2  # left half done: do the right half
        half = _half(sizes[top])
        starts[top + 1], sizes[top + 1], stage[top + 1] = starts[top] + half, sizes[top] - half, 0
        top += 1


@njit(cache=True)
def _ddot(a, x) -> float:
    """OpenBLAS's Haswell ``ddot`` of (n,) vectors: 16 lanes over the first n & -16 terms (lane i % 16), reduced
    as its ``ddot_microk_haswell-2.c``, then the remaining terms one by one. Exact only where every product is."""
    n = a.shape[0]
    n1 = n & -16
    dot = 0.0
    if n1:
        lanes = np.zeros(16)
        for i in range(n1):
            lanes[i & 15] += a[i] * x[i]
        low = ((lanes[0] + lanes[2]) + (lanes[4] + lanes[6])) + ((lanes[8] + lanes[10]) + (lanes[12] + lanes[14]))
        high = ((lanes[1] + lanes[3]) + (lanes[5] + lanes[7])) + ((lanes[9] + lanes[11]) + (lanes[13] + lanes[15]))
        dot = low + high
    for i in range(n1, n):
        dot += a[i] * x[i]
    return dot


@njit(cache=True)
def executed_dot(executed, x, out) -> None:
    """``out = executed @ x`` bit for bit as numpy computes it with OpenBLAS (Haswell kernels, the ones this
    suite's wheels select on x86-64 with AVX2): a (1, M) matrix is a ``ddot``; larger ones a ``dgemv_t``, whose
    rows in blocks of 4 (and a last single row) sum the first M & -4 terms in 4 lanes i % 4, reduced as
    (l0 + l2) + (l1 + l3), a block of 2 rows in 2 lanes i % 2, then the last M % 4 terms as one group.
    Loops instead of BLAS calls: a call costs more than these few terms. ``executed`` is 0/1, so every product
    is exact and only the summation order matters (FMA or not). Written without helper calls or stepped
    ``range`` loops, which numba compiles into far slower code here."""
    n_rows, m = executed.shape
    if m >= 2048:  # dgemv_t blocks the columns beyond this: let BLAS do it
        if n_rows == 1:
            out[0] = np.dot(executed[0], x)
        else:
            out[:] = np.dot(executed, x)
        return
    if n_rows == 1:
        out[0] = _ddot(executed[0], x)
        return
    body = m - (m & 3)
    fours = n_rows & -4
    two_from, two_to = fours, fours + ((n_rows - fours) & 2)
    for k in range(n_rows):
        s = 0.0
        if body:
            l0 = l1 = l2 = l3 = 0.0
            i = 0
            if two_from <= k < two_to:
                while i < body:
                    l0 += executed[k, i] * x[i]
                    l1 += executed[k, i + 1] * x[i + 1]
                    i += 2
                s = 0.0 + (l0 + l1)
            else:
                while i < body:
                    l0 += executed[k, i] * x[i]
                    l1 += executed[k, i + 1] * x[i + 1]
                    l2 += executed[k, i + 2] * x[i + 2]
                    l3 += executed[k, i + 3] * x[i + 3]
                    i += 4
                s = 0.0 + ((l0 + l2) + (l1 + l3))
        if body < m:
            tail = executed[k, body] * x[body]
            i = body + 1
            while i < m:
                tail = tail + executed[k, i] * x[i]
                i += 1
            s = s + tail
        out[k] = s


@njit(cache=True)
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


@njit(cache=True)
def _validate(action, mode, n_slots) -> int:
    for i in range(action.size):
        v = action[i]
        if v != v or v - np.floor(v) != 0:  # NaN, inf (inf - inf is NaN) or a fraction
            return BAD_VALUE
    high = n_slots if mode == DECODE_OCCUPANT else 1
    for i in range(action.size):
        if action[i] < 0 or action[i] > high:
            return OUT_OF_RANGE
    return 0


@njit(cache=True)
def _decode(action, mode, assign) -> None:
    n_slots, m = assign.shape
    assign[:] = False
    if mode == DECODE_OCCUPANT:
        for i in range(m):
            if action[i] > 0:
                assign[int(action[i]) - 1, i] = True
    elif mode == DECODE_SINGLE:
        for i in range(m):
            assign[0, i] = action[i] != 0
    else:
        for k in range(n_slots):
            for i in range(m):
                assign[k, i] = action[k * m + i] != 0


@njit(cache=True)
def _repair(assign, si, jf, ji, mf, column) -> int:
    """Sec. V-C repair in place (spec §3.10): capacity by dropping the highest slots, then parallelism."""
    n_slots, m = assign.shape
    dropped = 0
    for i in range(m):
        load = 0.0
        for k in range(n_slots):
            j = si[SLOT_JOB, k]
            column[k] = jf[DEMAND, j] * assign[k, i] if j >= 0 else 0.0
            load = column[k] if k == 0 else load + column[k]
        if not load > mf[CAPACITY, i] + 1e-12:
            continue
        for k in range(n_slots - 1, -1, -1):
            if not assign[k, i]:
                continue
            if pairwise_sum(column, 0, n_slots) <= mf[CAPACITY, i] + 1e-12:
                break
            assign[k, i] = False
            column[k] = 0.0
            dropped += 1
    for k in range(n_slots):
        j = si[SLOT_JOB, k]
        limit = ji[PARALLELISM, j] if j >= 0 else m
        kept = 0
        for i in range(m):
            if assign[k, i]:
                kept += 1
                if kept > limit:
                    assign[k, i] = False
                    dropped += 1
    return dropped


@njit(cache=True)
def step_begin(action, mode, rates, assign, executed, jf, ji, mf, mi, si, sf, c, f, p, power_in) -> int:
    """First half of slot t = c[T] + 1: validate and decode the action, drop proposals to empty slots, repair,
    budget-check, run the executed tasks and update work, spend, feedback and migrations.

    Returns the number of utility arguments written to ``power_in`` (the new work of the jobs whose work
    changed, by job id, then W_j/(t − a_j) of every active job), or an error code < 0 (state untouched).
    """
    code = _validate(action, mode, assign.shape[0])
    if code < 0:
        return code
    _decode(action, mode, assign)
    t = c[T] + 1
    n_slots, m = assign.shape
    n_invalid = 0
    for k in range(n_slots):
        if si[SLOT_JOB, k] < 0:
            for i in range(m):
                n_invalid += assign[k, i]
                assign[k, i] = False
    # the repair's column scratch is the slot-work row, which is only filled further down
    n_repaired = _repair(assign, si, jf, ji, mf, sf[SLOT_WORK]) if p[P_GENERALIZED] else 0
    n_blocked = 0
    mi[NOW_JOB] = -1
    for k in range(n_slots):
        j = si[SLOT_JOB, k]
        spent = jf[SPENT, j] if j >= 0 else 0.0
        budget = jf[BUDGET, j] if j >= 0 else np.inf
        cumulative = 0.0
        si[EXHAUSTED_NOW, k] = 0
        for i in range(m):
            run = assign[k, i]
            if run and p[P_HARD]:
                cumulative += mf[PRICE, i]
                if not spent + cumulative < budget:
                    run = False
                    n_blocked += 1
                    si[EXHAUSTED_NOW, k] = 1
            executed[k, i] = 1.0 if run else 0.0
            if run:
                mi[NOW_JOB, i] = j  # the last executed slot wins, as numpy's fancy assignment
    executed_dot(executed, rates, sf[SLOT_WORK])
    executed_dot(executed, mf[PRICE], sf[SLOT_COST])
    # migrations: machines whose previous, still-running occupant changed (before this slot's exhaustions)
    moved = 0
    for i in range(m):
        now = mi[NOW_JOB, i]
        prev = mi[LAST_JOB, i]
        if prev >= 0 and ji[ARRIVAL, prev] < t and t <= ji[DEADLINE, prev] and not ji[EXHAUSTED, prev]:
            moved += now != prev
        mi[LAST_JOB, i] = now
        ran = now >= 0
        mi[LAST_MASK, i] = ran
        mf[N_OBS, i] += ran
        mf[SUM_OBS, i] += rates[i] if ran else 0.0
        mf[LAST_RATE, i] = rates[i] if ran else 0.0
    f[MIGRATIONS] = moved / m
    if t >= 2:
        f[MIGRATION_SUM] += f[MIGRATIONS]
    n_changed = 0
    for k in range(n_slots):
        j = si[SLOT_JOB, k]
        if j < 0:
            continue
        old = jf[WORK, j]
        jf[WORK, j] = old + sf[SLOT_WORK, k]
        jf[SPENT, j] += sf[SLOT_COST, k]
        if si[EXHAUSTED_NOW, k]:
            ji[EXHAUSTED, j] = 1
        for i in range(m):
            if executed[k, i] > 0:
                ji[SCHEDULED, j] = 1
                break
        if jf[WORK, j] != old:  # insertion by job id, the order of numpy's flatnonzero
            pos = n_changed
            while pos > 0 and si[CHANGED, pos - 1] > j:
                si[CHANGED, pos] = si[CHANGED, pos - 1]
                pos -= 1
            si[CHANGED, pos] = j
            n_changed += 1
    for q in range(n_changed):
        power_in[q] = jf[WORK, si[CHANGED, q]]
    # active jobs a_j < t <= d_j, in job-id order (ids follow arrivals, so new ones append)
    n_active = 0
    for q in range(c[N_ACTIVE]):
        j = ji[ACTIVE, q]
        if t <= ji[DEADLINE, j]:
            ji[ACTIVE, n_active] = j
            n_active += 1
    n_jobs = ji.shape[1]
    while c[NEXT_ACTIVATE] < n_jobs and ji[ARRIVAL, c[NEXT_ACTIVATE]] < t:
        j = c[NEXT_ACTIVATE]
        if t <= ji[DEADLINE, j]:
            ji[ACTIVE, n_active] = j
            n_active += 1
        c[NEXT_ACTIVATE] += 1
    for q in range(n_active):
        j = ji[ACTIVE, q]
        power_in[n_changed + q] = jf[WORK, j] / float(t - ji[ARRIVAL, j])
    c[N_ACTIVE] = n_active
    c[N_CHANGED] = n_changed
    c[N_INVALID] = n_invalid
    c[N_BLOCKED] = n_blocked
    c[N_REPAIRED] = n_repaired
    return n_changed + n_active


@njit(cache=True)
def step_end(power_out, executed, jf, ji, mf, mi, si, sf, c, f, p) -> None:
    """Second half of slot t: rewards from the utility terms ``value * power_out``, departures, freed slots
    and admissions. ``power_out`` holds g(x) of :func:`step_begin`'s arguments (x^β, log(1 + x) or x)."""
    t = c[T] + 1
    scratch = jf[SCRATCH]
    n_changed, n_active = c[N_CHANGED], c[N_ACTIVE]
    for q in range(n_changed):
        j = si[CHANGED, q]
        new = jf[VALUE, j] * power_out[q]
        scratch[q] = new - jf[FWORK, j]
        jf[FWORK, j] = new
    f[REWARD_TRUE] = pairwise_sum(scratch, 0, n_changed)
    f[UTILITY_TRUE] += f[REWARD_TRUE]
    for q in range(n_active):
        j = ji[ACTIVE, q]
        length = float(t - ji[ARRIVAL, j])
        new = length * (jf[VALUE, j] * power_out[n_changed + q])
        scratch[q] = new - jf[SURROGATE, j]
        jf[SURROGATE, j] = new
    f[REWARD_APPROX] = pairwise_sum(scratch, 0, n_active)
    f[UTILITY_APPROX] += f[REWARD_APPROX]
    if p[P_HAS_OPT]:
        for q in range(n_active):
            scratch[q] = jf[OPT_RATE, ji[ACTIVE, q]]
        f[BENCHMARK_ACCRUED] += pairwise_sum(scratch, 0, n_active)
    # departures (deadline order): Fit (Eq. 8) and the sparse reward
    first = c[NEXT_DEPARTURE]
    n_jobs = ji.shape[1]
    while c[NEXT_DEPARTURE] < n_jobs and ji[DEADLINE, ji[DEPARTURE_ORDER, c[NEXT_DEPARTURE]]] <= t:
        c[NEXT_DEPARTURE] += 1
    n_leaving = c[NEXT_DEPARTURE] - first
    for q in range(n_leaving):
        j = ji[DEPARTURE_ORDER, first + q]
        scratch[q] = jf[SPENT, j] - jf[BUDGET, j]
    f[FIT_SIGNED] += pairwise_sum(scratch, 0, n_leaving)
    for q in range(n_leaving):
        scratch[q] = max(scratch[q], 0.0)
    f[FIT_POSITIVE] += pairwise_sum(scratch, 0, n_leaving)
    for q in range(n_leaving):
        scratch[q] = jf[FWORK, ji[DEPARTURE_ORDER, first + q]]
    f[REWARD_SPARSE] = pairwise_sum(scratch, 0, n_leaving)
    c[DEPARTURES_FROM] = first
    for k in range(si.shape[1]):
        j = si[SLOT_JOB, k]
        if j >= 0 and (ji[DEADLINE, j] <= t or ji[EXHAUSTED, j]):
            si[SLOT_JOB, k] = -1
        si[IS_NEW, k] = 0
    admit(t, ji, si, c)
    c[T] = t
    c[TOTAL_INVALID] += c[N_INVALID]
    c[TOTAL_BLOCKED] += c[N_BLOCKED]
    c[TOTAL_REPAIRED] += c[N_REPAIRED]


@njit(cache=True)
def admit(t, ji, si, c) -> None:
    """Jobs with a_j = t join the FIFO queue; queued jobs take the lowest free slots (spec §3.3)."""
    n_jobs = ji.shape[1]
    c[ARRIVALS_FROM] = c[NEXT_ARRIVAL]
    n_waiting = c[N_WAITING]
    while c[NEXT_ARRIVAL] < n_jobs and ji[ARRIVAL, c[NEXT_ARRIVAL]] <= t:
        ji[WAITING, n_waiting] = c[NEXT_ARRIVAL]
        n_waiting += 1
        c[NEXT_ARRIVAL] += 1
    kept = 0
    for q in range(n_waiting):
        j = ji[WAITING, q]
        if ji[DEADLINE, j] > t:
            ji[WAITING, kept] = j
            kept += 1
    placed = 0
    occupied = 0
    for k in range(si.shape[1]):
        if si[SLOT_JOB, k] < 0 and placed < kept:
            si[SLOT_JOB, k] = ji[WAITING, placed]
            si[IS_NEW, k] = 1
            placed += 1
        occupied += si[SLOT_JOB, k] >= 0
    c[N_WAITED] += kept - placed
    for q in range(kept - placed):
        ji[WAITING, q] = ji[WAITING, placed + q]
    c[N_WAITING] = kept - placed
    c[MAX_CONCURRENCY] = max(c[MAX_CONCURRENCY], occupied + c[N_WAITING])


@njit(cache=True)
def write_job_rows(rows, beta, generalized, jf, ji, si, t) -> None:
    """The observation's ``jobs`` matrix (K, F): one row per visible job slot, zeros for an empty slot."""
    for k in range(rows.shape[0]):
        j = si[SLOT_JOB, k]
        if j < 0:
            rows[k] = 0.0
            continue
        rows[k, 0] = 1.0
        rows[k, 1] = si[IS_NEW, k]
        rows[k, 2] = jf[VALUE, j]
        rows[k, 3] = beta
        rows[k, 4] = jf[BUDGET, j]
        rows[k, 5] = jf[SPENT, j]
        rows[k, 6] = jf[BUDGET, j] - jf[SPENT, j]
        rows[k, 7] = jf[BUDGET, j] / jf[LIFETIME, j]
        rows[k, 8] = t - ji[ARRIVAL, j]
        rows[k, 9] = ji[DEADLINE, j] - t
        rows[k, 10] = jf[WORK, j]
        rows[k, 11] = jf[LIFETIME, j]
        if generalized:
            rows[k, 12] = jf[DEMAND, j]
            rows[k, 13] = ji[PARALLELISM, j]


@njit(cache=True)
def occupants(assign):
    """Σ_k (k + 1) assign[k, i] per machine: the occupant slot 1..K of a one-job-per-machine assignment (0 idle)."""
    out = np.zeros(assign.shape[1], dtype=np.int64)
    for k in range(assign.shape[0]):
        for i in range(assign.shape[1]):
            if assign[k, i]:
                out[i] += k + 1
    return out


@njit(cache=True)
def batch_validate(actions, mode, n_slots, stepping):
    """(first copy whose action is malformed, its error code), or (-1, 0): checked before any copy steps."""
    for b in range(actions.shape[0]):
        if stepping[b]:
            code = _validate(actions[b], mode, n_slots)
            if code < 0:
                return b, code
    return -1, 0


@njit(cache=True)
def batch_begin(actions, mode, rates, chunk_start, stepping, assign, executed, jf, ji, n_jobs, mf, mi, si, sf, c, f,
                p, power_in, offsets):  # fmt: skip
    """:func:`step_begin` for every stepping copy b of a batch (leading axis), with copy b's utility arguments
    at ``power_in[offsets[b]:offsets[b + 1]]``. Job arrays are padded: copy b uses ``[..., :n_jobs[b]]``."""
    total = 0
    for b in range(actions.shape[0]):
        offsets[b] = total
        if stepping[b]:
            n = n_jobs[b]
            row = c[b, T] + 1 - chunk_start[b]
            total += step_begin(actions[b], mode, rates[b, row], assign[b], executed[b], jf[b, :, :n], ji[b, :, :n],
                                mf[b], mi[b], si[b], sf[b], c[b], f[b], p, power_in[total:])  # fmt: skip
    offsets[actions.shape[0]] = total
    return total


@njit(cache=True)
def batch_end(power_out, offsets, stepping, executed, jf, ji, n_jobs, mf, mi, si, sf, c, f, p, beta, horizon, obs):
    """:func:`step_end` for every stepping copy, then every copy's observation (the single env's
    ``observation_from``) written straight into the fresh batch arrays ``obs`` = (time, price, n_obs, sum_obs,
    last_rate, last_mask, jobs, last_occupant); a (B, 0) ``last_occupant`` is not written (single-job env)."""
    time, price, n_obs, sum_obs, last_rate, last_mask, jobs, occupant = obs
    n_slots, m = executed.shape[1], executed.shape[2]
    for b in range(stepping.size):
        n = n_jobs[b]
        if stepping[b]:
            step_end(power_out[offsets[b] : offsets[b + 1]], executed[b], jf[b, :, :n], ji[b, :, :n], mf[b], mi[b],
                     si[b], sf[b], c[b], f[b], p)  # fmt: skip
        t = c[b, T]
        time[b, 0] = t / horizon
        time[b, 1] = (horizon - t) / horizon
        for i in range(m):
            price[b, i] = mf[b, PRICE, i]
            n_obs[b, i] = mf[b, N_OBS, i]
            sum_obs[b, i] = mf[b, SUM_OBS, i]
            last_rate[b, i] = mf[b, LAST_RATE, i]
            last_mask[b, i] = mi[b, LAST_MASK, i]
        write_job_rows(jobs[b], beta, False, jf[b, :, :n], ji[b, :, :n], si[b], t)
        if occupant.shape[1]:
            for i in range(m):
                slot = 0
                for k in range(n_slots):
                    if executed[b, k, i] > 0:
                        slot += k + 1
                occupant[b, i] = slot
