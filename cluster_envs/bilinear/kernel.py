"""The compiled slot of the bilinear queueing model: draws, server selection, payments, departures, arrival.

One implementation, stepped by :class:`~cluster_envs.bilinear.simulator.BilinearSimulator` (the single env, one
copy) and by the batched env, both through :func:`slot_batch`, which steps every copy. The state of the copies
is a handful of arrays whose first axis is the copy (layout below); every function takes the copy ``b`` and
indexes the arrays in place, so a step allocates nothing and creates no array views, and :func:`slot_batch`
passes its arrays on without their memory owners (numba's reference counting of arrays, atomic operations on
every view and call, cost more than the model). Sums are taken in NumPy's order
(:mod:`~cluster_envs.common.pairwise`), so results equal the former NumPy implementation bit for bit.

Layout (I job classes, J server classes, n servers, K job slots). Per copy b: ``jobs[b]`` (2, K) int64: class,
id of the waiting jobs in FIFO order; ``job_stats[b]`` (2, K, J): each job's selection counts and summed rewards
per server class; ``counters[b]`` (``COUNTERS``,) int64; ``rng[b]`` (3, 6) uint64: the PCG64 states of the
``assign``, ``service`` and ``noise`` streams; ``slot_stats[b, TOTAL_COUNTS]``, ``slot_stats[b, TOTAL_SUMS]``
(I, J): the episode's N and Σξ; ``stats[b]`` (``STATS``,) float64: the slot's scalars and the episode totals;
``obs[b]``: the observation (float32); ``r[b]`` (I, J) and ``arrivals[b]`` (T + 1,): the instance and arrivals.
The slot's scratch and per-slot results live in row 0 whatever the copy (a batch shares one row, so a step moves
fewer bytes per copy): ``draws[0]`` (``DRAW_ROWS``, n) float64 and ``servers[0]`` (``SERVER_ROWS``, n) int64:
the per-server draws and outcomes; ``slot_stats[0]``'s y, N and Σξ; ``classes[0]`` (``CLASS_ROWS``, I) int64:
Q(t), D(t), A(t+1); ``scratch[0]`` (2, K + I) int64 and ``work[0]`` (:func:`work_size`,) float64.

These arrays and the model's constants are one record, :class:`Batch` (fields :data:`BATCH_FIELDS`, by name,
made by :func:`batch_record`), which :func:`slot_batch`, :func:`begin_slot` and :func:`end_slot` take; inside, they
pass its fields on to their helpers as a :class:`Slot` namedtuple of arrays without memory owners
(:func:`~cluster_envs.common.record.unowned`).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from cluster_envs.bilinear import served
from cluster_envs.bilinear.rng import next_double, permute, standard_normal
from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.common.pairwise import SUM_STACK, pairwise_sum
from cluster_envs.common.record import declare_record, strip_owner, unowned
from cluster_envs.common.simplex import cap_simplex

NOISE_CLIP = 10.0  # reward noise is truncated at ±10σ (probability 1.5e-23) so observations have finite bounds
TIE_EPS = 1e-9  # a column sum within this of its cap counts as feasible (spec §3.3)

# kinds of action a slot takes, and the status of a copy after slot_batch (see there)
ALLOCATION, CLASSES, JOBS, SOFTMAX = range(4)
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
ASSIGN, SERVICE_STREAM, NOISE_STREAM = range(3)  # the streams of ``rng``
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
    "reward_served",
    "regret_inc_served",
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
    "total_regret_served",
    "total_reward_served",
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
    REWARD_SERVED,
    REGRET_INC_SERVED,
    HIDDEN,
    REWARD,
    TOTALS,
) = range(16)
STATS = len(STAT_NAMES)

# The slot's record: the model (per copy b the mean rewards ``r[b]`` (I, J) and the arrivals ``arrivals[b]``;
# the service rates ``mu``, holding ``costs``, ``exclusive`` service, ``noise_std``, the nominal server counts
# ``caps_nominal``, the server counts per slot ``schedule`` (rows: slots), ``server_ids`` (2, n): each server's
# class and index, the reward's ``kappa``, ``gamma_env``, ``reward_mode`` (index of REWARD_MODES) and
# ``max_visible_jobs`` (-1: no per-job view)), then the copies' state arrays of the layout above.
BATCH_FIELDS = (
    "r", "mu", "costs", "arrivals", "exclusive", "noise_std", "caps_nominal", "schedule", "server_ids", "kappa",
    "gamma_env", "reward_mode", "max_visible_jobs",
    "rng", "jobs", "job_stats", "counters", "draws", "servers", "slot_stats", "classes", "stats", "scratch", "work",
    "obs",
)  # fmt: skip
Slot = namedtuple("Slot", BATCH_FIELDS)  # the record's fields inside compiled code, arrays without owners


BatchType, Batch, batch_record = declare_record(
    __name__, "Batch", BATCH_FIELDS, "The copies' record (fields :data:`BATCH_FIELDS`); made by :func:`batch_record`."
)


def work_size(n_rows: int, n_cols: int, n_servers: int) -> int:
    """Length of a copy's float scratch: the projection's (:func:`project`) or the slot statistics' (the products
    r·N, r·y and y, then the paid rewards), whichever is longer, and the stack of :func:`pairwise_sum` for sums of
    over 128 terms."""
    size = max(n_cols + 3 * n_rows + n_rows * n_cols, n_rows * n_cols + n_servers)
    # (the n_rows + 1 terms: a softmax's exponentials, ``SOFTMAX``)
    return size + (SUM_STACK if max(n_rows * n_cols, n_servers, n_rows + 1) > 128 else 0)


@cached_njit(inline="always")
def _work_sum(work, lo, n):
    """NumPy's sum of ``work[0, lo : lo + n]`` (:func:`~cluster_envs.common.pairwise.pairwise_sum`), its split stack
    in the last ``SUM_STACK`` entries of the row (:func:`work_size` reserves them when a sum can exceed 128
    terms)."""
    return pairwise_sum(work, (0,), lo, n, work, (0,), work.shape[1] - SUM_STACK)


@cached_njit
def project_column(frac, work, b, n_rows, n_cols, j):
    """Column j of the column-capped projection (spec §3.3) of ``frac[b]`` (rows × columns, flat row-major): rows
    i with ``work[0, n_cols + i]`` ≤ 0 (inactive) zeroed, the column onto {Σ_i ≤ ``work[0, j]``}
    (:func:`~cluster_envs.common.simplex.cap_simplex`, the scaled form). The result, flat row-major, at
    ``work[0, n_cols + n_rows :]`` (:func:`work_size` with these rows and columns; two columns' worth of
    scratch follow it).
    """
    out = n_cols + n_rows
    col = out + n_rows * n_cols  # the column, projected in place
    radius, total = work[0, j], 0.0
    for i in range(n_rows):
        x, value = frac[b, i * n_cols + j], 0.0
        if work[0, n_cols + i] > 0:
            value = x if x >= 0.0 else 0.0  # np.maximum(x, 0.0), sign of zero included
        work[0, col + i] = value
        total += value
    # a sum beyond the float max is inf, over any cap
    if total > radius + TIE_EPS and _work_sum(work, col, n_rows) > radius + TIE_EPS:
        cap_simplex(work, 0, col, n_rows, radius, True)
    for i in range(n_rows):
        work[0, out + i * n_cols + j] = work[0, col + i]


@cached_njit
def project(frac, work, b, n_rows, n_cols):
    """Every column of the projection (:func:`project_column`)."""
    for j in range(n_cols):
        project_column(frac, work, b, n_rows, n_cols, j)


@cached_njit
def softmax_exponents(logits, queue, z, width, scale):
    """The exponents of one copy's ``simplex_logits`` softmax, ``scale · (l − max l)`` per server class j over the
    classes with waiting jobs (``queue[i]`` > 0: the observation's Q(t), :func:`write_observation`) and idle, −inf
    elsewhere: :func:`shifted_logits`' operations, from the (J·(I + 1),) ``logits`` (any real dtype, read as
    float64; ``width`` = I + 1 per server class) into the float64 ``z`` (1, J·(I + 1)). False, writing nothing,
    if a logit is NaN or inf. The caller takes the exponential with numpy (see :func:`shifted_logits`), then steps
    the slot with kind ``SOFTMAX``."""
    for q in range(logits.size):
        if not np.isfinite(logits[q]):
            return False
    n_cls = width - 1
    for j in range(z.shape[1] // width):
        top = -np.inf
        for i in range(width):
            value = np.float64(logits[j * width + i]) if i == n_cls or queue[i] > 0 else -np.inf
            z[0, j * width + i] = value
            top = max(top, value)
        for i in range(width):
            z[0, j * width + i] = scale * (z[0, j * width + i] - top)
    return True


@cached_njit(inline="always")
def softmax_into(weights, b, caps, slot_stats, work):
    """y_ij = n_j · w_ji / Σ_i' w_ji' into ``slot_stats[0, Y]`` from copy b's softmax exponentials ``weights[b]``
    (J·(I + 1), row-major, the idle entry last; :func:`softmax_exponents`) and the slot's server counts ``caps``:
    :func:`softmax_allocation` of their row sums (NumPy's, :func:`_work_sum`'s stack in ``work``)."""
    n_cls, n_cols = slot_stats.shape[2], slot_stats.shape[3]
    width = n_cls + 1
    for j in range(n_cols):
        total = pairwise_sum(weights, (b,), j * width, width, work, (0,), work.shape[1] - SUM_STACK)
        for i in range(n_cls):
            slot_stats[0, Y, i, j] = weights[b, j * width + i] / total * float(caps[j])


@cached_njit
def prepare(kind, actions, trow, slot, b):
    """Q(t) of copy b and, for ``kind`` ``ALLOCATION``, y = its projected allocation fractions ``actions[b]``
    (I·J, row-major, :func:`project_column`) times n_j; for ``CLASSES`` with a non-empty ``actions`` (a batch), y =
    ``actions[b]`` (I·J, row-major; a simulator sets y itself); for ``SOFTMAX``, y = n_j(t) times the softmax of
    the exponentials ``actions[b]`` (:func:`softmax_into`). False, changing nothing, if a fraction is NaN or inf.
    ``slot``: a :class:`Slot`."""
    schedule, caps_nominal, jobs, counters = slot.schedule, slot.caps_nominal, slot.jobs, slot.counters
    slot_stats, classes, work = slot.slot_stats, slot.classes, slot.work
    n_cls, n_cols = classes.shape[2], caps_nominal.size
    for i in range(n_cls):
        classes[0, QUEUE, i] = 0
    for k in range(counters[b, N_JOBS]):
        classes[0, QUEUE, jobs[b, 0, k]] += 1
    if kind == CLASSES and actions.shape[1] > 0:
        for i in range(n_cls):
            for j in range(n_cols):
                slot_stats[0, Y, i, j] = actions[b, i * n_cols + j]
    if kind == SOFTMAX:
        softmax_into(actions, b, schedule[trow], slot_stats, work)
    if kind != ALLOCATION:
        return True
    for k in range(n_cls * n_cols):
        if not np.isfinite(actions[b, k]):
            return False
    for j in range(n_cols):  # the projection's input: n_j(t)/n_j, then Q_i
        work[0, j] = schedule[trow, j] / caps_nominal[j]
    for i in range(n_cls):
        work[0, n_cols + i] = classes[0, QUEUE, i]
    for j in range(n_cols):
        project_column(actions, work, b, n_cls, n_cols, j)
    out = n_cols + n_cls
    for i in range(n_cls):
        for j in range(n_cols):
            slot_stats[0, Y, i, j] = work[0, out + i * n_cols + j] * caps_nominal[j]
    return True


@cached_njit
def settle(slot, trow, r_star, b):
    """The rest of copy b's slot (of the :class:`Slot` ``slot``) after the servers' selections in
    ``servers[0, JOB]`` (n_j(t) = ``schedule[trow]``): pay and serve them, remove the completed jobs, admit the
    arrival A(t+1), and the slot's statistics, reward and episode totals into ``stats[b]``. One function, not one
    per stage, hence its length: the stages share most of the slot's arrays and scalars (n, the job count, the
    paid count), and this function stays small enough for numba to drop the reference counts of its locals.

    ``"paper"`` service pays every selection (duplicates counted); ``"exclusive"`` keeps, per job, the first
    server in the slot's random order (the others collide). ``counters[b, COLLISIONS]`` carries collisions the
    selection already had (``server_choice``). The slot's reward on eq. 1's served allocation, Σ r_ij E[N_ij | Q, ·]
    (:mod:`~cluster_envs.bilinear.served`), is the selection's: its caller writes it into ``stats[b, REWARD_SERVED]``.
    Without an arrival the job slot after the queue is written all the same (nothing reads it).
    """
    r, mu, costs, arrivals, exclusive = slot.r, slot.mu, slot.costs, slot.arrivals, slot.exclusive
    server_ids, schedule, jobs, job_stats = slot.server_ids, slot.schedule, slot.jobs, slot.job_stats
    counters = slot.counters
    draws, servers, slot_stats, classes, stats = slot.draws, slot.servers, slot.slot_stats, slot.classes, slot.stats
    scratch, work, kappa, gamma_env = slot.scratch, slot.work, slot.kappa, slot.gamma_env
    reward_mode, max_visible_jobs = slot.reward_mode, slot.max_visible_jobs
    # pay: N, Σξ, each job's statistics, the paid rewards (also into work[0] after the I·J products below, for
    # their sum), the jobs that complete (scratch[0, 1]), the duplicates and collisions
    n, n_jobs = server_ids.shape[1], counters[b, N_JOBS]
    n_cls, n_cols = r.shape[1], r.shape[2]
    for k in range(n_jobs):  # scratch[0, 0]: whether a job was selected
        scratch[0, 0, k] = 0
    selected, distinct = 0, 0
    for idx in range(n):  # in the random order: the first server on a job keeps it under "exclusive"
        s = servers[0, ORDER, idx]
        k = servers[0, JOB, s]
        if k >= 0:
            selected += 1
            if scratch[0, 0, k] == 0:
                scratch[0, 0, k] = 1
                distinct += 1
            elif exclusive:
                servers[0, JOB, s] = -1
    stats[b, N_COLLISIONS] = counters[b, COLLISIONS] + (selected - distinct if exclusive else 0)
    stats[b, N_DUPLICATES] = 0 if exclusive else selected - distinct
    for i in range(n_cls):
        for j in range(n_cols):
            slot_stats[0, COUNTS, i, j] = slot_stats[0, SUMS, i, j] = 0.0
    for k in range(n_jobs):  # scratch[0, 1]: whether a job completed
        scratch[0, 1, k] = 0
    paid, xi_at = 0, n_cls * n_cols
    for s in range(n):
        k = servers[0, JOB, s]
        servers[0, PAID_ID, s] = -1
        if k < 0:
            continue
        c, j = jobs[b, 0, k], server_ids[0, s]
        xi = r[b, c, j] + draws[0, NOISE, s]
        draws[0, XI, paid] = work[0, xi_at + paid] = xi
        paid += 1
        slot_stats[0, COUNTS, c, j] += 1.0
        slot_stats[0, SUMS, c, j] += xi
        job_stats[b, 0, k, j] += 1.0
        job_stats[b, 1, k, j] += xi
        servers[0, PAID_ID, s], servers[0, PAID_CLASS, s] = jobs[b, 1, k], c
        if draws[0, SERVICE, s] < mu[c]:
            scratch[0, 1, k] = 1
    counters[b, N_PAID], counters[b, COLLISIONS] = paid, 0
    # depart: remove the completed jobs, keeping FIFO order; D(t)
    n_jobs, n_cols = counters[b, N_JOBS], job_stats.shape[3]
    for i in range(classes.shape[2]):
        classes[0, DEPARTURES, i] = 0
    kept = 0
    for k in range(n_jobs):
        if scratch[0, 1, k]:
            classes[0, DEPARTURES, jobs[b, 0, k]] += 1
        else:
            if kept < k:
                jobs[b, 0, kept], jobs[b, 1, kept] = jobs[b, 0, k], jobs[b, 1, k]
                for j in range(n_cols):
                    job_stats[b, 0, kept, j], job_stats[b, 1, kept, j] = job_stats[b, 0, k, j], job_stats[b, 1, k, j]
            kept += 1
    counters[b, N_JOBS] = kept
    # admit: A(t+1) joins the queue, t advances, the slot's N and Σξ join the episode's
    n_cls, n_cols = slot_stats.shape[2], slot_stats.shape[3]
    t, kept = counters[b, T] + 1, counters[b, N_JOBS]
    c = arrivals[b, min(t, arrivals.shape[1] - 1)]
    if t >= arrivals.shape[1]:
        c = -1
    arrived = 1 if c >= 0 else 0
    for i in range(n_cls):
        classes[0, ARRIVALS, i] = 0
    classes[0, ARRIVALS, max(c, 0)] = arrived
    jobs[b, 0, kept], jobs[b, 1, kept] = c, counters[b, NEXT_ID]
    for j in range(n_cols):
        job_stats[b, 0, kept, j] = job_stats[b, 1, kept, j] = 0.0
    counters[b, NEXT_ID] += arrived
    counters[b, N_JOBS], counters[b, T] = kept + arrived, t
    for i in range(n_cls):
        for j in range(n_cols):
            slot_stats[b, TOTAL_COUNTS, i, j] += slot_stats[0, COUNTS, i, j]
            slot_stats[b, TOTAL_SUMS, i, j] += slot_stats[0, SUMS, i, j]
    # the statistics: the three sums over (i, j) are of products written row-major into work[0], as NumPy sums a
    # C-contiguous (I, J) array; the paid rewards follow them
    n_cls, n_cols = r.shape[1], r.shape[2]
    size, paid = n_cls * n_cols, counters[b, N_PAID]
    sums = (0.0, 0.0, 0.0, 0.0)  # Σ r·N, Σ r·y, Σ y, Σ ξ
    for q in range(4):  # one inlined sum in a loop keeps this function small enough to drop reference counts
        if q < 3:
            for i in range(n_cls):
                for j in range(n_cols):
                    x = slot_stats[0, COUNTS if q == 0 else Y, i, j]
                    work[0, i * n_cols + j] = x if q == 2 else r[b, i, j] * x
        total = _work_sum(work, 0 if q < 3 else size, size if q < 3 else paid)
        sums = (total, sums[0], sums[1], sums[2])
    reward_noisy, total_y, reward_expected, reward_mean = sums
    holding, queue_total = 0.0, 0
    for i in range(n_cls):
        holding += costs[i] * classes[0, QUEUE, i]
        queue_total += classes[0, QUEUE, i]
    hidden = max(0, queue_total - max_visible_jobs) if max_visible_jobs >= 0 else 0
    servers_now = 0
    for j in range(n_cols):
        servers_now += schedule[trow, j]
    base = reward_noisy
    if reward_mode == 1:
        base = reward_mean
    elif reward_mode == 2:
        base = reward_expected
    elif reward_mode == 3:
        base = reward_noisy - gamma_env * paid
    stats[b, REWARD_NOISY], stats[b, REWARD_MEAN] = reward_noisy, reward_mean
    stats[b, REWARD_EXPECTED] = reward_expected
    stats[b, HOLDING], stats[b, UTILIZATION] = holding, total_y / max(servers_now, 1)
    stats[b, QUEUE_TOTAL], stats[b, QUEUE_TOTAL_NEXT] = float(queue_total), float(counters[b, N_JOBS])
    stats[b, REGRET_INC], stats[b, REGRET_INC_REALIZED] = r_star - reward_expected, r_star - reward_mean
    stats[b, REGRET_INC_SERVED] = r_star - stats[b, REWARD_SERVED]  # REWARD_SERVED: set with the selection
    stats[b, HIDDEN], stats[b, REWARD] = float(hidden), base - kappa * holding
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
            REGRET_INC_SERVED,
            REWARD_SERVED,
        )
    ):
        stats[b, TOTALS + k] += stats[b, src]
    stats[b, STATS - 1] = max(stats[b, STATS - 1], float(hidden))


@cached_njit
def draw_slot(rng, noise_std, draws, servers, b):
    """The slot's fixed draws: per server U(select), U(pick), a random order, U(service) and the noise."""
    n = draws.shape[2]
    for k in range(n):
        draws[0, SELECT, k] = next_double(rng, b, ASSIGN)
    for k in range(n):
        draws[0, PICK, k] = next_double(rng, b, ASSIGN)
    permute(rng, b, ASSIGN, servers, 0, ORDER)
    for k in range(n):
        draws[0, SERVICE, k] = next_double(rng, b, SERVICE_STREAM)
    for k in range(n):
        draws[0, NOISE, k] = noise_std * min(max(standard_normal(rng, b, NOISE_STREAM), -NOISE_CLIP), NOISE_CLIP)


@cached_njit
def select_classes(trow, slot, b):
    """Each available server picks class i w.p. y_ij/n_j, then a uniform waiting job of that class (Alg. 1).
    ``slot``: a :class:`Slot`."""
    schedule, server_ids, jobs, counters, draws = slot.schedule, slot.server_ids, slot.jobs, slot.counters, slot.draws
    servers, slot_stats, classes, scratch, work = slot.servers, slot.slot_stats, slot.classes, slot.scratch, slot.work
    n_jobs, n_cls = counters[b, N_JOBS], slot_stats.shape[2]
    acc = 0
    for i in range(n_cls):  # scratch[0, 1]: where each class starts in scratch[0, 0], the jobs ordered by class
        scratch[0, 1, i] = acc
        acc += classes[0, QUEUE, i]
    for k in range(n_jobs):  # stable order of the waiting jobs by class
        c = jobs[b, 0, k]
        scratch[0, 0, scratch[0, 1, c]] = k
        scratch[0, 1, c] += 1
    for i in range(n_cls):
        scratch[0, 1, i] -= classes[0, QUEUE, i]
    n_cols = slot_stats.shape[3]
    for j in range(n_cols):  # the prefix sums of each column of y divided by n_j, into work[0] (row-major)
        capf, total = float(max(schedule[trow, j], 1)), 0.0
        for i in range(n_cls):
            total += slot_stats[0, Y, i, j]
            work[0, i * n_cols + j] = total / capf
    for s in range(server_ids.shape[1]):
        j, select = server_ids[0, s], draws[0, SELECT, s]
        cls = 0  # how many of column j's are ≤ the uniform
        for i in range(n_cls):
            if work[0, i * n_cols + j] <= select:
                cls += 1
        servers[0, JOB, s] = -1
        if cls < n_cls and server_ids[1, s] < schedule[trow, j]:
            pick = int(np.floor(draws[0, PICK, s] * classes[0, QUEUE, cls]))
            servers[0, JOB, s] = scratch[0, 0, scratch[0, 1, cls] + pick]


@cached_njit
def select_jobs(actions, b, trow, slot):
    """Each available server picks waiting job k (FIFO order) w.p. x_kj/n_j (x flat, waiting jobs × J, in
    ``actions[b]``); y is x summed per class. ``slot``: a :class:`Slot`."""
    schedule, server_ids, jobs, counters = slot.schedule, slot.server_ids, slot.jobs, slot.counters
    draws, servers, slot_stats = slot.draws, slot.servers, slot.slot_stats
    n_jobs, n_cls, n_cols = counters[b, N_JOBS], slot_stats.shape[2], slot_stats.shape[3]
    for s in range(server_ids.shape[1]):
        j, select = server_ids[0, s], draws[0, SELECT, s]
        cap = schedule[trow, j]
        capf = float(max(cap, 1))
        k, total = 0, 0.0
        for i in range(n_jobs):
            total += actions[b, i * n_cols + j]
            if total / capf <= select:
                k += 1
        servers[0, JOB, s] = k if k < n_jobs and server_ids[1, s] < cap else -1
    for i in range(n_cls):
        for j in range(n_cols):
            slot_stats[0, Y, i, j] = 0.0
    for k in range(n_jobs):
        for j in range(n_cols):
            slot_stats[0, Y, jobs[b, 0, k], j] += actions[b, k * n_cols + j]


@cached_njit
def begin_slot(actions, record, b):
    """Q(t) and the slot's draws of copy b of ``record``, for a selection made outside (``server_choice``) before
    :func:`end_slot`."""
    slot = unowned(record, Slot)
    trow = min(slot.counters[b, T], slot.schedule.shape[0] - 1)
    prepare(CLASSES, actions, trow, slot, b)
    draw_slot(slot.rng, slot.noise_std, slot.draws, slot.servers, b)


@cached_njit
def end_slot(record, r_star, b):
    """The rest of :func:`slot_batch` after :func:`begin_slot` and a selection made outside."""
    slot = unowned(record, Slot)
    trow = min(slot.counters[b, T], slot.schedule.shape[0] - 1)
    settle(slot, trow, r_star, b)
    write_observation(slot.jobs, slot.counters, slot.slot_stats, slot.obs, b)


@cached_njit
def write_observation(jobs, counters, slot_stats, obs, b):
    """Q(t+1), then the slot's N_ij and Σξ_ij (row-major), as float32, into ``obs[b]``."""
    n_cls, n_cols = slot_stats.shape[2], slot_stats.shape[3]
    for i in range(n_cls):
        obs[b, i] = 0.0
    for k in range(counters[b, N_JOBS]):
        obs[b, jobs[b, 0, k]] += 1.0
    base = n_cls
    for row in (COUNTS, SUMS):
        for i in range(n_cls):
            for j in range(n_cols):
                obs[b, base] = slot_stats[0, row, i, j]
                base += 1


@cached_njit
def shifted_logits(logits, active, scale):
    """``scale · (z − max z)`` per row of (n, J, I + 1) logits, with ``z`` the logits of the active classes (n, I)
    and the idle one, −inf elsewhere: the exponent of ``simulator.logits_to_allocation``'s softmax, as a fresh
    array (the exponential stays numpy's, whose SIMD result libm's can differ from in the last bit)."""
    z = np.empty(logits.shape)
    n_cls = active.shape[1]
    for b in range(logits.shape[0]):
        for j in range(logits.shape[1]):
            top = -np.inf
            for i in range(n_cls + 1):
                z[b, j, i] = logits[b, j, i] if i == n_cls or active[b, i] else -np.inf
                top = max(top, z[b, j, i])
            for i in range(n_cls + 1):
                z[b, j, i] = scale * (z[b, j, i] - top)
    return z


@cached_njit
def softmax_allocation(weights, totals, caps):
    """y (n, I, J) with y_ij = n_j · weights[j, i] / totals[j] from the softmax's (n, J, I + 1) exponentials and
    their (n, J) row sums (the last, idle entry dropped)."""
    n_rows, n_cols, width = weights.shape
    y = np.empty((n_rows, width - 1, n_cols))
    for b in range(n_rows):
        for j in range(n_cols):
            for i in range(width - 1):
                y[b, i, j] = weights[b, j, i] / totals[b, j] * caps[j]
    return y


@cached_njit
def stats_observation(obs, t, horizon, total_counts, log_counts, total_sums, features):
    """The ``queues_stats`` / ``full`` observation as float64: the kernel's ``obs`` (Q, N, Σξ), t/T, log1p of the
    episode's selections (``log_counts``, numpy's), the empirical means Σξ/N (0 where N = 0), then ``features``
    (u and v; empty for ``queues_stats``)."""
    counts, sums = total_counts.ravel(), total_sums.ravel()
    out = np.empty(obs.size + 1 + 2 * counts.size + features.size)
    out[: obs.size] = obs
    at = obs.size
    out[at] = t / horizon
    out[at + 1 : at + 1 + counts.size] = log_counts.ravel()
    at += 1 + counts.size
    for q in range(counts.size):
        out[at + q] = sums[q] / counts[q] if counts[q] > 0 else 0.0
    out[at + counts.size :] = features
    return out


@cached_njit(inline="always")
def _stats_into(out, obs, t, horizon, total_counts, total_sums, features, log_counts, log_table):
    """:func:`stats_observation` as float32 into ``out`` (each entry the float64 one rounded, as ``astype``
    rounds). log1p of a count N_ij (an integer) is ``log_table[N_ij]`` when ``log_table`` is not empty (numpy's
    ``log1p`` of each integer up to the largest possible count, the same bits as numpy's of N_ij), else
    ``log_counts[i, j]`` (numpy's, computed by the caller)."""
    n = obs.size
    for q in range(n):
        out[q] = obs[q]
    out[n] = np.float32(t / horizon)
    n_cls, n_cols = total_counts.shape[-2], total_counts.shape[-1]
    size = n_cls * n_cols
    for i in range(n_cls):
        for j in range(n_cols):
            q, count = i * n_cols + j, total_counts[i, j]
            if log_table.size == 0:
                log = log_counts[i, j]
            else:
                at = int(count)
                log = log_table[at] if at < log_table.size else np.log1p(count)  # (beyond the table: never)
            out[n + 1 + q] = np.float32(log)
            out[n + 1 + size + q] = np.float32(total_sums[i, j] / count if count > 0 else 0.0)
    at = n + 1 + 2 * size
    for q in range(features.size):
        out[at + q] = np.float32(features[q])


@cached_njit
def stats_observation_into(out, obs, t, horizon, total_counts, log_counts, total_sums, features):
    """:func:`stats_observation` as float32 into ``out``, with numpy's ``log_counts`` (:func:`_stats_into`)."""
    _stats_into(out, obs, t, horizon, total_counts, total_sums, features, log_counts, np.zeros(0))


@cached_njit
def write_stats_observation(record, out, log_table, horizon, features):
    """Copy 0's :func:`stats_observation` of ``record`` (a :class:`Batch`) as float32 into ``out``, log1p from the
    non-empty ``log_table`` (:func:`_stats_into`)."""
    slot = unowned(record, Slot)
    slot_stats = slot.slot_stats
    _stats_into(out, slot.obs[0], slot.counters[0, T], horizon, slot_stats[0, TOTAL_COUNTS], slot_stats[0, TOTAL_SUMS],
                features, slot_stats[0, TOTAL_COUNTS], log_table)  # fmt: skip


@cached_njit
def slot_observed(kind, actions, r_star, record, out, log_table, features, horizon):
    """:func:`slot_batch` of a simulator's one copy (``r_star`` a float), then, when it is done, its
    :func:`write_stats_observation` (the ``queues_stats`` and ``full`` observations in the same call). Returns the
    copy's status."""
    stepping, rewards, status = np.ones(1, dtype=np.bool_), np.zeros(1), np.zeros(1, dtype=np.int64)
    slot_batch(kind, actions, stepping, np.full(1, r_star), rewards, status, record)
    if status[0] == DONE:
        write_stats_observation(record, out, log_table, horizon, features)
    return status[0]


@cached_njit
def slot_batch(kind, actions, stepping, r_star, rewards, status, record):
    """One slot of every copy b of ``record`` (a :class:`Batch`) with ``stepping[b]`` (server counts
    ``schedule[min(t, len - 1)]``): its status into ``status[b]`` and, when done, its reward into ``rewards[b]``
    and its next observation into ``obs[b]`` (:func:`write_observation`). The single env steps its one copy with it.

    ``kind`` ``ALLOCATION``: ``actions[b]`` holds fractions y_ij/n_j (I·J, row-major), projected; ``CLASSES``:
    y (I, J) is ``actions[b]`` (row-major) or, with an empty ``actions`` (a simulator), already in
    ``slot_stats[0, Y]``; ``SOFTMAX``: ``actions[b]`` holds a ``simplex_logits`` softmax's exponentials
    (:func:`softmax_exponents`), y = n_j(t) times the softmax; ``JOBS``: ``actions[b]`` is x (waiting jobs × J,
    flat). Selections by servers (``server_choice``) call :func:`begin_slot` and :func:`end_slot` around their NumPy
    selection instead. The status is ``DONE``, or the copy is unchanged and it is ``NOT_FINITE`` (an allocation
    fraction is NaN or inf) or ``FULL`` (the job arrays have no room for an arrival: grow them and step it again).

    The arrays are passed on without their memory owners (:func:`~cluster_envs.common.record.unowned`): numba's
    reference counting of arrays passed to a function or an inlined helper, atomic operations, cost more than the
    model itself.
    """
    actions, stepping, r_star = strip_owner(actions), strip_owner(stepping), strip_owner(r_star)
    rewards, status, slot = strip_owner(rewards), strip_owner(status), unowned(record, Slot)
    jobs, counters, schedule, stats = slot.jobs, slot.counters, slot.schedule, slot.stats
    for b in range(stepping.size):
        if not stepping[b]:
            continue
        if counters[b, N_JOBS] >= jobs.shape[2]:
            status[b] = FULL
            continue
        trow = min(counters[b, T], schedule.shape[0] - 1)
        if not prepare(kind, actions, trow, slot, b):
            status[b] = NOT_FINITE
            continue
        draw_slot(slot.rng, slot.noise_std, slot.draws, slot.servers, b)
        if kind == JOBS:
            select_jobs(actions, b, trow, slot)
            stats[b, REWARD_SERVED] = served.job_reward(slot.r[b], actions[b], jobs[b, 0], counters[b, N_JOBS],
                                                        schedule[trow], slot.exclusive, slot.work[0])  # fmt: skip
        else:
            select_classes(trow, slot, b)
            stats[b, REWARD_SERVED] = served.class_reward(slot.r[b], slot.slot_stats[0, Y], slot.classes[0, QUEUE],
                                                          schedule[trow], slot.exclusive, slot.work[0])  # fmt: skip
        settle(slot, trow, r_star[b], b)
        write_observation(jobs, counters, slot.slot_stats, slot.obs, b)
        status[b], rewards[b] = DONE, stats[b, REWARD]
