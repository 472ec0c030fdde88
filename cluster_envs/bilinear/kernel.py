"""The compiled slot of the bilinear queueing model: draws, server selection, payments, departures, arrival.

One implementation, stepped by :class:`~cluster_envs.bilinear.dynamics.BilinearSimulator` (the single env) and
by the batched env, which loops :func:`slot` over its copies. The state of a copy is a handful of flat arrays
(layout below); per-slot results are written into preallocated buffers, so a step allocates nothing. Sums are
taken in NumPy's order (:func:`pairwise_sum`), so results equal the former NumPy implementation bit for bit.

Layout of a copy's arrays (I job classes, J server classes, n servers, K job slots):
``jobs`` (2, K) int64: class, id of the waiting jobs in FIFO order; ``job_stats`` (2, K, J): each job's
selection counts and summed rewards per server class; ``counters`` (``COUNTERS``,) int64; ``rng`` (3, 6) uint64:
the PCG64 states of the ``assign``, ``service`` and ``noise`` streams; ``draws`` (``DRAW_ROWS``, n) float64 and
``servers`` (``SERVER_ROWS``, n) int64: the slot's per-server draws and outcomes; ``slot_stats`` (``SLOT_ROWS``,
I, J): y, N, Σξ and their episode totals; ``classes`` (``CLASS_ROWS``, I) int64: Q(t), D(t), A(t+1);
``stats`` (``STATS``,) float64: the slot's scalars and the episode totals; ``scratch`` (2, K + I) int64 and
``work`` (J + 4I + I·J,) float64: scratch space.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cluster_envs.bilinear.rng import next_double, permute, standard_normal

NOISE_CLIP = 10.0  # reward noise is truncated at ±10σ (probability 1.5e-23) so observations have finite bounds
TIE_EPS = 1e-9  # a column sum within this of its cap counts as feasible (spec §3.3)

# kinds of action a slot takes (see slot()), and what slot() returns
ALLOCATION, CLASSES, JOBS = range(3)
DONE, NOT_FINITE, FULL = range(3)
N_JOBS, T, NEXT_ID, N_PAID, COLLISIONS = range(5)
COUNTERS = 5
SELECT, PICK, SERVICE, NOISE, XI = range(5)
DRAW_ROWS = 5
ORDER, JOB, PAID_ID, PAID_CLASS = range(4)
SERVER_ROWS = 4
Y, COUNTS, SUMS, TOTAL_COUNTS, TOTAL_SUMS = range(5)
SLOT_ROWS = 5
QUEUE, DEPARTURES, ARRIVALS = range(3)
CLASS_ROWS = 3
# stats: the slot's scalars, then the episode totals (the env's info and episode summary)
STAT_NAMES = (
    "reward_noisy",
    "reward_mean",
    "reward_expected",
    "n_duplicates",
    "n_collisions",
    "holding_cost",
    "utilization",
    "queue_total",
    "queue_total_next",
    "regret_inc",
    "regret_inc_realized",
    "hidden_jobs",
    "reward",
    "total_regret",
    "total_regret_realized",
    "total_reward_noisy",
    "total_reward_mean",
    "total_reward_expected",
    "total_holding_cost",
    "total_queue_total",
    "total_utilization",
    "total_duplicates",
    "total_collisions",
    "total_hidden_jobs",
)
(
    REWARD_NOISY,
    REWARD_MEAN,
    REWARD_EXPECTED,
    N_DUPLICATES,
    N_COLLISIONS,
    HOLDING,
    UTILIZATION,
    QUEUE_TOTAL,
    QUEUE_TOTAL_NEXT,
    REGRET_INC,
    REGRET_INC_REALIZED,
    HIDDEN,
    REWARD,
    TOTALS,
) = range(14)
STATS = len(STAT_NAMES)
REWARD_MODES = ("noisy", "mean", "expected", "cost_adjusted")


@njit(cache=True)
def _block_sum(a, lo, n):
    """Σ a[lo : lo + n] for n ≤ 128 as NumPy adds it: sequentially below 8, else 8 interleaved accumulators."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3, r4, r5, r6, r7 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3], a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        k = lo + i
        r0, r1, r2, r3 = r0 + a[k], r1 + a[k + 1], r2 + a[k + 2], r3 + a[k + 3]
        r4, r5, r6, r7 = r4 + a[k + 4], r5 + a[k + 5], r6 + a[k + 6], r7 + a[k + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def pairwise_sum(a, lo, n):
    """Σ a[lo : lo + n] in NumPy's summation order (``pairwise_sum_DOUBLE``): blocks of at most 128 summed by
    :func:`_block_sum`, longer ranges split in two halves (a multiple of 8 first) and the halves' sums added.

    The split tree is walked with an explicit stack: numba cannot cache recursive functions.
    """
    if n <= 128:
        return _block_sum(a, lo, n)
    los, sizes, phase = np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64)
    values = np.empty(64)
    top, count = 0, 0
    los[0], sizes[0], phase[0] = lo, n, 0
    while top >= 0:
        size = sizes[top]
        if size <= 128:
            values[count] = _block_sum(a, los[top], size)
            count += 1
            top -= 1
            continue
        half = size // 2 - (size // 2) % 8
        if phase[top] < 2:  # visit the left, then the right half
            start, length = (los[top], half) if phase[top] == 0 else (los[top] + half, size - half)
            phase[top] += 1
            top += 1
            los[top], sizes[top], phase[top] = start, length, 0
        else:
            count -= 1
            values[count - 1] += values[count]
            top -= 1
    return values[0]


@njit(cache=True, inline="always")
def _maximum(a, b):
    return a if a >= b else b  # np.maximum's choice on ties (-0.0 vs 0.0)


@njit(cache=True)
def simplex_cap_into(x, radius, out, work):
    """``out`` = the Euclidean projection of finite x ≥ 0 onto {x ≥ 0, Σx ≤ radius} (Duchi et al. 2008).

    Computed on x / max(x) (the projection commutes with scaling) and around the mean of the kept entries, so
    entries up to the float maximum neither overflow nor cancel to an empty support. ``work``: scratch of
    twice x's size.
    """
    n = x.size
    fits = pairwise_sum(x, 0, n) <= radius + TIE_EPS  # a sum beyond the float max is inf, over any cap
    if fits or radius <= 0:
        for i in range(n):
            out[i] = x[i] if fits else 0.0
        return
    scale = x.max()
    r = radius / scale
    s = work[n : 2 * n]  # z = x / scale sorted in decreasing order (insertion sort: n is the number of classes)
    for i in range(n):
        work[i] = x[i] / scale
        k = i
        while k > 0 and s[k - 1] < work[i]:
            s[k] = s[k - 1]
            k -= 1
        s[k] = work[i]
    keep, acc, mean_k = 1, 0.0, s[0]
    for i in range(n):
        acc += s[i]
        mean = acc / (i + 1)
        if (s[i] - mean) + r / (i + 1) > 0:
            keep, mean_k = i + 1, mean
    for i in range(n):
        out[i] = scale * _maximum((work[i] - mean_k) + r / keep, 0.0)


@njit(cache=True)
def project_into(frac, active, cap_frac, out, work):
    """Column-capped projection (spec §3.3) of ``frac`` (rows × columns, flat row-major) into ``out`` (2-D):
    rows i with ``active[i]`` = 0 zeroed, each column onto Σ_i ≤ ``cap_frac``. ``work``: four times the rows."""
    n_rows, n_cols = out.shape
    column, projected = work[:n_rows], work[n_rows : 2 * n_rows]
    for j in range(n_cols):
        total = 0.0
        for i in range(n_rows):
            value = _maximum(frac[i * n_cols + j], 0.0) if active[i] > 0 else 0.0
            out[i, j] = column[i] = value
            total += value
        if total > cap_frac[j] + TIE_EPS:
            simplex_cap_into(column, cap_frac[j], projected, work[2 * n_rows :])
            for i in range(n_rows):
                out[i, j] = projected[i]


@njit(cache=True, inline="always")
def draw_slot(rng, noise_std, draws, order):
    """The slot's fixed draws: per server U(select), U(pick), a random order, U(service) and the noise."""
    n = order.size
    for k in range(n):
        draws[SELECT, k] = next_double(rng[0])
    for k in range(n):
        draws[PICK, k] = next_double(rng[0])
    permute(rng[0], order)
    for k in range(n):
        draws[SERVICE, k] = next_double(rng[1])
    for k in range(n):
        draws[NOISE, k] = noise_std * min(max(standard_normal(rng[2]), -NOISE_CLIP), NOISE_CLIP)


@njit(cache=True, inline="always")
def _selected(values, rows, n_cols, j, select, capf):
    """How many prefix sums of column j of ``values`` (flat, row-major), divided by n_j, are ≤ the uniform."""
    count, acc = 0, 0.0
    for i in range(rows):
        acc += values[i * n_cols + j]
        if acc / capf <= select:
            count += 1
    return count


@njit(cache=True)
def select_classes(y, caps_now, server_class, server_index, jobs, counters, draws, servers, classes, scratch):
    """Each available server picks class i w.p. y_ij/n_j, then a uniform waiting job of that class (Alg. 1)."""
    n_jobs = counters[N_JOBS]
    queue, by_class, starts = classes[QUEUE], scratch[0], scratch[1]
    acc = 0
    for i in range(queue.size):
        starts[i] = acc
        acc += queue[i]
    for k in range(n_jobs):  # stable order of the waiting jobs by class
        c = jobs[0, k]
        by_class[starts[c]] = k
        starts[c] += 1
    for i in range(queue.size):
        starts[i] -= queue[i]
    for s in range(server_class.size):
        j = server_class[s]
        cls = _selected(y.reshape(-1), y.shape[0], y.shape[1], j, draws[SELECT, s], float(max(caps_now[j], 1)))
        servers[JOB, s] = -1
        if cls < queue.size and server_index[s] < caps_now[j]:
            servers[JOB, s] = by_class[starts[cls] + int(np.floor(draws[PICK, s] * queue[cls]))]


@njit(cache=True)
def select_jobs(x, caps_now, server_class, server_index, jobs, counters, draws, servers, y):
    """Each available server picks waiting job k (FIFO order) w.p. x_kj/n_j (x flat, waiting jobs × J); y is x
    summed per class."""
    n_jobs, n_cols = counters[N_JOBS], y.shape[1]
    for s in range(server_class.size):
        j = server_class[s]
        k = _selected(x, n_jobs, n_cols, j, draws[SELECT, s], float(max(caps_now[j], 1)))
        servers[JOB, s] = k if k < n_jobs and server_index[s] < caps_now[j] else -1
    y[:] = 0.0
    for k in range(n_jobs):
        for j in range(n_cols):
            y[jobs[0, k], j] += x[k * n_cols + j]


@njit(cache=True)
def finish(
    r,
    mu,
    costs,
    arrivals,
    exclusive,
    server_class,
    caps_now,
    jobs,
    job_stats,
    counters,
    draws,
    servers,
    slot_stats,
    classes,
    stats,
    scratch,
    work,
    r_star,
    kappa,
    gamma_env,
    reward_mode,
    max_jobs,
):
    """Pay and serve the selections in ``servers[JOB]``, remove departed jobs, admit the arrival, update stats.

    ``"paper"`` service pays every selection (duplicates counted); ``"exclusive"`` keeps, per job, the first
    server in the slot's random order (the others collide). ``counters[COLLISIONS]`` carries collisions the
    selection already had (``server_choice``).
    """
    n, n_jobs = server_class.size, counters[N_JOBS]
    n_cls, n_cols = r.shape
    job, marker = servers[JOB], scratch[0]
    marker[:n_jobs] = 0
    selected, distinct = 0, 0
    for idx in range(n):  # in the random order: the first server on a job keeps it under "exclusive"
        s = servers[ORDER, idx]
        if job[s] >= 0:
            selected += 1
            if marker[job[s]] == 0:
                marker[job[s]] = 1
                distinct += 1
            elif exclusive:
                job[s] = -1
    collisions = counters[COLLISIONS] + (selected - distinct if exclusive else 0)
    duplicates = 0 if exclusive else selected - distinct
    y, counts, sums = slot_stats[Y], slot_stats[COUNTS], slot_stats[SUMS]
    counts[:] = 0.0
    sums[:] = 0.0
    done = scratch[1]
    done[:n_jobs] = 0
    paid = 0
    for s in range(n):
        k = job[s]
        servers[PAID_ID, s] = -1
        if k < 0:
            continue
        c, j = jobs[0, k], server_class[s]
        xi = r[c, j] + draws[NOISE, s]
        draws[XI, paid] = xi
        paid += 1
        counts[c, j] += 1.0
        sums[c, j] += xi
        job_stats[0, k, j] += 1.0
        job_stats[1, k, j] += xi
        servers[PAID_ID, s], servers[PAID_CLASS, s] = jobs[1, k], c
        if draws[SERVICE, s] < mu[c]:
            done[k] = 1
    queue, departures = classes[QUEUE], classes[DEPARTURES]
    departures[:] = 0
    kept = 0
    for k in range(n_jobs):  # remove the departed jobs, keeping FIFO order
        if done[k]:
            departures[jobs[0, k]] += 1
        else:
            if kept < k:
                jobs[0, kept], jobs[1, kept] = jobs[0, k], jobs[1, k]
                for j in range(n_cols):
                    job_stats[0, kept, j], job_stats[1, kept, j] = job_stats[0, k, j], job_stats[1, k, j]
            kept += 1
    t = counters[T] + 1
    classes[ARRIVALS] = 0
    if t < arrivals.size and arrivals[t] >= 0:
        jobs[0, kept], jobs[1, kept] = arrivals[t], counters[NEXT_ID]
        for j in range(n_cols):
            job_stats[0, kept, j] = job_stats[1, kept, j] = 0.0
        classes[ARRIVALS, arrivals[t]] = 1
        counters[NEXT_ID] += 1
        kept += 1
    counters[N_JOBS], counters[T], counters[N_PAID], counters[COLLISIONS] = kept, t, paid, 0
    for i in range(n_cls):
        for j in range(n_cols):
            slot_stats[TOTAL_COUNTS, i, j] += counts[i, j]
            slot_stats[TOTAL_SUMS, i, j] += sums[i, j]
    _slot_stats(
        r,
        costs,
        caps_now,
        y,
        counts,
        queue,
        draws[XI],
        paid,
        duplicates,
        collisions,
        kept,
        stats,
        r_star,
        kappa,
        gamma_env,
        reward_mode,
        max_jobs,
        work,
    )


@njit(cache=True, inline="always")
def _slot_stats(
    r,
    costs,
    caps_now,
    y,
    counts,
    queue,
    xi,
    paid,
    duplicates,
    collisions,
    queue_next,
    stats,
    r_star,
    kappa,
    gamma_env,
    reward_mode,
    max_jobs,
    work,
):
    n_cls, n_cols = r.shape
    size = r.size
    prod = work[:size]  # row-major, as NumPy sums a C-contiguous (I, J) array
    for i in range(n_cls):
        for j in range(n_cols):
            prod[i * n_cols + j] = r[i, j] * counts[i, j]
    reward_mean = pairwise_sum(prod, 0, size)
    for i in range(n_cls):
        for j in range(n_cols):
            prod[i * n_cols + j] = r[i, j] * y[i, j]
    reward_expected = pairwise_sum(prod, 0, size)
    for i in range(n_cls):
        for j in range(n_cols):
            prod[i * n_cols + j] = y[i, j]
    total_y = pairwise_sum(prod, 0, size)
    reward_noisy = pairwise_sum(xi, 0, paid)
    holding, queue_total = 0.0, 0
    for i in range(queue.size):
        holding += costs[i] * queue[i]
        queue_total += queue[i]
    hidden = max(0, queue_total - max_jobs) if max_jobs >= 0 else 0
    utilization = total_y / max(caps_now.sum(), 1)
    base = reward_noisy
    if reward_mode == 1:
        base = reward_mean
    elif reward_mode == 2:
        base = reward_expected
    elif reward_mode == 3:
        base = reward_noisy - gamma_env * paid
    values = (
        reward_noisy,
        reward_mean,
        reward_expected,
        float(duplicates),
        float(collisions),
        holding,
        utilization,
        float(queue_total),
        float(queue_next),
        r_star - reward_expected,
        r_star - reward_mean,
        float(hidden),
        base - kappa * holding,
    )
    for k in range(TOTALS):
        stats[k] = values[k]
    for k, src in enumerate(
        (
            REGRET_INC,
            REGRET_INC_REALIZED,
            REWARD_NOISY,
            REWARD_MEAN,
            REWARD_EXPECTED,
            HOLDING,
            QUEUE_TOTAL,
            UTILIZATION,
            N_DUPLICATES,
            N_COLLISIONS,
        )
    ):
        stats[TOTALS + k] += stats[src]
    stats[STATS - 1] = max(stats[STATS - 1], float(hidden))


@njit(cache=True, inline="always")
def count_queue(jobs, counters, queue):
    """Q_i: the waiting jobs per class."""
    queue[:] = 0
    for k in range(counters[N_JOBS]):
        queue[jobs[0, k]] += 1


@njit(cache=True)
def begin_slot(rng, noise_std, jobs, counters, draws, servers, classes):
    """Q(t) and the slot's draws, for a selection made outside (``server_choice``) before :func:`finish`."""
    count_queue(jobs, counters, classes[QUEUE])
    draw_slot(rng, noise_std, draws, servers[ORDER])


@njit(cache=True, inline="always")
def slot(
    kind,
    action,
    r,
    mu,
    costs,
    arrivals,
    exclusive,
    noise_std,
    caps_nominal,
    schedule,
    server_class,
    server_index,
    rng,
    jobs,
    job_stats,
    counters,
    draws,
    servers,
    slot_stats,
    classes,
    stats,
    scratch,
    work,
    r_star,
    kappa,
    gamma_env,
    reward_mode,
    max_jobs,
    obs,
):
    """One slot with the server counts ``schedule[min(t, len - 1)]``. ``kind`` ``ALLOCATION``: ``action`` holds
    fractions y_ij/n_j (I·J, row-major), projected; ``CLASSES``: y (I, J) is in ``slot_stats[Y]``; ``JOBS``:
    ``action`` is x (waiting jobs × J, flat). Selections by servers (``server_choice``) call :func:`begin_slot`
    and :func:`finish` around their NumPy selection instead.

    Returns ``DONE``, or changes nothing and returns ``NOT_FINITE`` (an allocation fraction is NaN or inf) or
    ``FULL`` (the job arrays have no room for an arrival: grow them and call again). On ``DONE`` the next
    observation is in ``obs`` (:func:`write_observation`).
    """
    n_cls, n_cols = r.shape
    if counters[N_JOBS] >= jobs.shape[1]:
        return FULL
    caps_now = schedule[min(counters[T], schedule.shape[0] - 1)]
    y = slot_stats[Y]
    count_queue(jobs, counters, classes[QUEUE])
    if kind == ALLOCATION:
        for v in action:
            if not np.isfinite(v):
                return NOT_FINITE
        cap_frac = work[:n_cols]
        for j in range(n_cols):
            cap_frac[j] = caps_now[j] / caps_nominal[j]
        project_into(action, classes[QUEUE], cap_frac, y, work[n_cols:])
        for i in range(n_cls):
            for j in range(n_cols):
                y[i, j] *= caps_nominal[j]
    draw_slot(rng, noise_std, draws, servers[ORDER])
    if kind == JOBS:
        select_jobs(action, caps_now, server_class, server_index, jobs, counters, draws, servers, y)
    else:
        select_classes(y, caps_now, server_class, server_index, jobs, counters, draws, servers, classes, scratch)
    finish(
        r,
        mu,
        costs,
        arrivals,
        exclusive,
        server_class,
        caps_now,
        jobs,
        job_stats,
        counters,
        draws,
        servers,
        slot_stats,
        classes,
        stats,
        scratch,
        work,
        r_star,
        kappa,
        gamma_env,
        reward_mode,
        max_jobs,
    )
    write_observation(jobs, counters, slot_stats, obs)
    return DONE


@njit(cache=True, inline="always")
def write_observation(jobs, counters, slot_stats, obs):
    """Q(t+1), then the slot's N_ij and Σξ_ij (row-major), as float32."""
    n_cls, n_cols = slot_stats.shape[1], slot_stats.shape[2]
    obs[:n_cls] = 0.0
    for k in range(counters[N_JOBS]):
        obs[jobs[0, k]] += 1.0
    base = n_cls
    for row in (COUNTS, SUMS):
        for i in range(n_cls):
            for j in range(n_cols):
                obs[base] = slot_stats[row, i, j]
                base += 1


@njit(cache=True)
def slot_batch(
    actions,
    stepping,
    r,
    mu,
    costs,
    arrivals,
    exclusive,
    noise_std,
    caps_nominal,
    schedule,
    server_class,
    server_index,
    rng,
    jobs,
    job_stats,
    counters,
    draws,
    servers,
    slot_stats,
    classes,
    stats,
    scratch,
    work,
    r_star,
    kappa,
    gamma_env,
    reward_mode,
    max_jobs,
    obs,
    rewards,
    status,
):
    """:func:`slot` (allocation fractions) for every copy b with ``stepping[b]``: its status into ``status[b]``,
    its observation into ``obs[b]`` and its reward into ``rewards[b]``."""
    for b in range(actions.shape[0]):
        if stepping[b]:
            status[b] = slot(
                ALLOCATION,
                actions[b],
                r[b],
                mu,
                costs,
                arrivals[b],
                exclusive,
                noise_std,
                caps_nominal,
                schedule,
                server_class,
                server_index,
                rng[b],
                jobs[b],
                job_stats[b],
                counters[b],
                draws[b],
                servers[b],
                slot_stats[b],
                classes[b],
                stats[b],
                scratch[b],
                work[b],
                r_star[b],
                kappa,
                gamma_env,
                reward_mode,
                max_jobs,
                obs[b],
            )
            if status[b] == DONE:
                rewards[b] = stats[b, REWARD]
