"""The compiled slot of the multiserver and gang models (numba; no gymnasium).

The single env's kernels: the action check (:func:`action_problem`), the first-fit repair
(:func:`first_fit_into`), the feasibility test and the utilities (:func:`realize_into`). The batched envs' step
(:func:`step_batch`) runs B copies of a slot in one compiled loop, each copy through those same kernels (or
:func:`~cluster_envs.multiserver.gang.gang_repair_into`) on exogenous draws taken in the slot, in stream order,
from that copy's own streams (their ``PCG64`` states as rows of one array, :mod:`~cluster_envs.common.pcg`),
so a copy sees exactly the normals and arrival uniforms its single env would draw. The observation is written
straight into the arrays the step returns.

The batch's state is one record, :class:`Batch` (fields :data:`BATCH_FIELDS`, by name): the configuration, the
instance, the copies' state and the repairs' scratch. A step's fresh outputs are one tuple in the order of
:data:`OUTPUTS`.
"""

from __future__ import annotations

import math

import numpy as np

from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.common.pcg import fill_random, fill_standard_normal
from cluster_envs.common.record import declare_record
from cluster_envs.multiserver.gang import gang_is_feasible, gang_repair_into

# Rows of the step's float outputs (the info values) and of its integer outputs.
UTILITY, RAW_UTILITY, EXPECTED, ORACLE, SLOT_REGRET, REALIZED_REGRET, REGRET = range(7)
VALUES = 7
DROPPED_ARRIVAL, DROPPED_CAPACITY, SLOT = range(3)
COUNTS = 3
# Rows of the running episode sums.
AOU, EXPECTED_AOU, ORACLE_AOU, RUN_REGRET, DROPPED = range(5)
SUMS = 5
# A step's outputs, in this order: the observation's arrays (B, ...), rewards (B,), values (VALUES, B) and
# counts (COUNTS, B) int64.
OBS_KEYS = ("arrivals", "edge_mask", "time", "last_action", "last_utility")
OUTPUTS = (*OBS_KEYS, "rewards", "values", "counts")

# The batch record: configuration (``binary``/``scores``: the action mode; ``raise_mode``: invalid actions
# raise; ``regret``: compute_regret; ``penalty``: infeasible_penalty; ``horizon``), instance (``gang``: repair
# by the gang structure ``arms`` .. ``min_tasks``, else by ``A``, ``c``; the utility model ``mu`` .. ``v_tilde``),
# copies (``t``, ``arrivals`` of the slot about to be decided, ``pattern`` their :func:`pattern_of`, ``states``
# rows 2b and 2b + 1: copy b's utility and arrival streams, ``sums`` (SUMS, B), the oracle's ``oracle_values``
# per arrival pattern (NaN: not solved yet) and ``missing``: copy b's next pattern is not solved yet) and scratch
# (``used``, ``wanted``: the first-fit's; ``gang_work``: :func:`~cluster_envs.multiserver.gang.gang_workspace`).
BATCH_FIELDS = (
    "binary", "scores", "raise_mode", "regret", "penalty", "horizon",
    "gang", "port_of_edge", "rho", "A", "c", "arms", "task_req", "server_cap", "min_tasks",
    "mu", "sigma", "cost", "clips", "lo", "width", "v_tilde",
    "t", "arrivals", "pattern", "states", "sums", "oracle_values", "missing",
    "used", "wanted", "gang_work",
)  # fmt: skip


BatchType, Batch, batch_record = declare_record(
    __name__,
    "Batch",
    BATCH_FIELDS,
    "The batched env's state record (fields :data:`BATCH_FIELDS`); made by :func:`batch_record`.",
)


@cached_njit
def action_problem(action: np.ndarray, binary: bool) -> int:
    """0 if the float64 action is well-formed, 1 if it has NaN or inf, 2 if ``binary`` and not all 0/1."""
    for a in action:
        if not math.isfinite(a):
            return 1
        if binary and a != 0.0 and a != 1.0:
            return 2
    return 0


@cached_njit
def score_request(action, n_edges, requested, priority) -> bool:
    """``action_mode="scores"`` with repair, read in one call: False if an entry of the (real-valued) ``action``
    is NaN or inf; else, over its first ``n_edges`` entries (the instance's: padding is ignored), the requested
    edges (score > 0.5) into the bool ``requested`` and the priority, the stable argsort of the negated scores
    (highest score first, ties by index: numpy's ``argsort(-a, kind="stable")``), into the int64 ``priority``."""
    for a in action:
        if not np.isfinite(np.float64(a)):
            return False
    keys = np.empty(n_edges)
    for e in range(n_edges):
        score = np.float64(action[e])
        requested[e] = score > 0.5
        keys[e] = -score
    priority[:] = np.argsort(keys, kind="mergesort")  # stable: the one permutation a stable sort gives
    return True


@cached_njit
def first_fit_into(requested, usable, order, A, c, x, used, wanted) -> tuple[int, int]:
    """Spec §3.6 into ``x`` (``used``: int64[K], ``wanted``: int64[|E|] scratch): drop requested bits outside
    ``usable`` (idle ports), then keep the rest along ``order`` (a permutation of the edges) while ``Ax ≤ c``
    holds. Returns (dropped for arrivals, for capacity). Without branches on the bits (they are random: a
    branch would mispredict): the wanted edges are listed first, then each is kept iff no type's slack
    ``c − used − A[:, e]`` is negative. Two kernels by the number of types (the batched step calls the one it
    needs: one kernel for both would not be inlined there, and the call costs tens of ns per copy)."""
    if A.shape[0] <= 4:
        return first_fit_few_types(requested, usable, order, A, c, x, wanted)
    return first_fit_many_types(requested, usable, order, A, c, x, used, wanted)


@cached_njit
def _wanted_edges(requested, usable, order, x, wanted) -> tuple[int, int]:
    """Zero ``x`` and list the requested usable edges in ``order`` into ``wanted``: (how many, dropped for
    arrivals)."""
    n_wanted = n_arrival = 0
    for i in range(order.size):  # ``order`` is a permutation: every x[e] is written
        e = np.uint64(order[i])  # unsigned: no negative-index wraparound
        x[e] = 0
        r = np.int64(requested[e])
        w = r & np.int64(usable[e] != 0)
        n_arrival += r - w
        wanted[n_wanted] = e
        n_wanted += w
    return n_wanted, n_arrival


@cached_njit
def first_fit_few_types(requested, usable, order, A, c, x, wanted) -> tuple[int, int]:
    """:func:`first_fit_into` for up to four device types (the presets have 1 or 3): the running use in
    registers (types beyond K repeat the last)."""
    n_types = A.shape[0]
    n_wanted, n_arrival = _wanted_edges(requested, usable, order, x, wanted)
    k1, k2, k3 = min(1, n_types - 1), min(2, n_types - 1), min(3, n_types - 1)
    c0, c1, c2, c3 = c[0], c[k1], c[k2], c[k3]
    u0 = u1 = u2 = u3 = n_taken = 0
    for i in range(n_wanted):
        e = np.uint64(wanted[i])
        a0, a1, a2, a3 = A[0, e], A[k1, e], A[k2, e], A[k3, e]
        take = ~(((c0 - u0 - a0) | (c1 - u1 - a1) | (c2 - u2 - a2) | (c3 - u3 - a3)) >> 63)  # −1 if it fits, else 0
        x[e] = take & 1
        n_taken -= take
        u0 += a0 & take
        u1 += a1 & take
        u2 += a2 & take
        u3 += a3 & take
    return n_arrival, n_wanted - n_taken


@cached_njit
def first_fit_many_types(requested, usable, order, A, c, x, used, wanted) -> tuple[int, int]:
    """:func:`first_fit_into` for any number of device types (the running use in ``used``)."""
    n_types = A.shape[0]
    n_wanted, n_arrival = _wanted_edges(requested, usable, order, x, wanted)
    for k in range(n_types):
        used[k] = 0
    n_taken = 0
    for i in range(n_wanted):
        e = np.uint64(wanted[i])
        short = 0
        for k in range(n_types):
            short |= c[k] - used[k] - A[k, e]
        take = ~(short >> 63)
        x[e] = take & 1
        n_taken -= take
        for k in range(n_types):
            used[k] += A[k, e] & take
    return n_arrival, n_wanted - n_taken


@cached_njit
def is_feasible(x, usable, A, c) -> bool:
    """``x ∈ Ω(t)``: no edge of an idle port and ``Ax ≤ c``."""
    for k in range(A.shape[0]):
        total = 0
        for e in range(x.size):
            if x[e]:
                if not usable[e]:
                    return False
                total += A[k, e]
        if total > c[k]:
            return False
    return True


@cached_njit
def realize_into(x, normals, mu, sigma, cost, clips, lo, width, v_tilde, z_tilde, raw, feedback):
    """One slot's utilities from standard normals: ``Z = μ + σ·N``, ``Z − C`` into ``raw``, ``Z̃`` into
    ``z_tilde`` and the observed ``x·Z̃`` (float32) into ``feedback``. Returns ``(Σ x Z̃, Σ x (Z − C), ṽᵀx)``
    (branch-free: an unused edge adds ±0.0, which leaves a sum that starts at +0.0 unchanged bit for bit; the
    values are finite)."""
    utility = raw_utility = expected = 0.0
    for e in range(x.size):
        r = (mu[e] + sigma[e] * normals[e]) - cost[e]
        y = min(max((r - lo) / width, 0.0), 1.0) if clips else r
        raw[e] = r
        z_tilde[e] = y
        feedback[e] = np.float32(x[e] * y)
        utility += x[e] * y
        raw_utility += x[e] * r
        expected += x[e] * v_tilde[e]
    return utility, raw_utility, expected


@cached_njit
def pattern_of(arrivals) -> int:
    """The arrival pattern as an integer (bit l = port l has a job)."""
    pattern = 0
    for port in range(arrivals.size):
        if arrivals[port]:
            pattern |= 1 << port
    return pattern


@cached_njit
def check_actions(actions, stepping, batch) -> tuple[int, int]:
    """First problem of a stepping copy's action: (0, −1) if none, else (code, copy) with code 1 non-finite,
    2 not binary, 3 infeasible under ``batch.raise_mode``. Nothing is changed. ``a − a`` is 0 for every finite
    value, integers included, and NaN for NaN and ±inf."""
    binary, arrivals, port_of_edge = batch.binary, batch.arrivals, batch.port_of_edge
    if not batch.raise_mode:  # the common case, one branch-free (vectorised) pass over every action first
        flat = actions.ravel()
        bad = 0
        if binary:
            for i in range(flat.size):
                bad += (flat[i] != 0) & (flat[i] != 1)
        else:
            for i in range(flat.size):
                bad += (flat[i] - flat[i]) != 0
        if bad == 0:
            return 0, -1
    n_edges = actions.shape[1]
    x = np.empty(n_edges, np.int8)
    usable = np.empty(n_edges, np.int8)
    for b in range(actions.shape[0]):
        if not stepping[b]:
            continue
        for a in actions[b]:
            if not (a - a) == 0:
                return 1, b
            if binary and a != 0 and a != 1:
                return 2, b
        if batch.raise_mode:
            for e in range(n_edges):
                x[e] = actions[b, e] > 0.5
                usable[e] = arrivals[b, port_of_edge[e]]
            if batch.gang:
                ok = gang_is_feasible(x, usable, batch.arms, batch.task_req, batch.server_cap, batch.min_tasks)
            else:
                ok = is_feasible(x, usable, batch.A, batch.c)
            if not ok:
                return 3, b
    return 0, -1


@cached_njit
def step_batch(actions, stepping, batch, out) -> int:
    """One slot of every stepping copy (actions already checked by :func:`check_actions`). The copies' state in
    ``batch`` (``t``, ``arrivals``, ``pattern``, ``sums``, ``states``) advances; the rows of the stepping copies
    of the outputs ``out`` (:data:`OUTPUTS`) are written (``values``/``counts``: zero for the others,
    ``counts[SLOT]`` = t − 1 for all). With ``batch.regret``, ``batch.missing[b]`` says whether copy b's next
    arrival pattern is not solved yet, and the return value counts them.

    One function with the whole slot inside (repair, utilities, observation and sums), hence its length: it runs
    once per copy in the batch's inner loop, where a call to a compiled helper passing these arrays costs a
    reference count per array, more than a copy's slot (the repair kernels it does call are those the single env
    calls too). The record's fields are read once, before the loop."""
    scores, raise_mode, gang, regret = batch.scores, batch.raise_mode, batch.gang, batch.regret
    penalty, horizon, port_of_edge, rho, A, c = (
        batch.penalty,
        batch.horizon,
        batch.port_of_edge,
        batch.rho,
        batch.A,
        batch.c,
    )
    arms, task_req, server_cap, min_tasks = batch.arms, batch.task_req, batch.server_cap, batch.min_tasks
    mu, sigma, cost, clips, lo, width = batch.mu, batch.sigma, batch.cost, batch.clips, batch.lo, batch.width
    v_tilde, t, arrivals, pattern, states = batch.v_tilde, batch.t, batch.arrivals, batch.pattern, batch.states
    sums, oracle_values, missing = batch.sums, batch.oracle_values, batch.missing
    used, wanted, gang_work = batch.used, batch.wanted, batch.gang_work
    obs_arrivals, obs_edge_mask, obs_time, obs_last_action, obs_last_utility, rewards, values, counts = out
    n_copies, n_edges = actions.shape
    n_ports = arrivals.shape[1]
    few_types = A.shape[0] <= 4
    index_order = np.arange(n_edges)
    requested = np.empty(n_edges, np.bool_)
    usable = np.empty(n_edges, np.bool_)
    x = np.empty(n_edges, np.int8)
    normals, z_tilde, raw = np.empty(n_edges), np.empty(n_edges), np.empty(n_edges)
    feedback, uniforms = np.empty(n_edges, np.float32), np.empty(n_ports)
    n_missing = 0
    for b in range(n_copies):
        if not stepping[b]:
            for row in range(values.shape[0]):
                values[row, b] = 0.0
            counts[DROPPED_ARRIVAL, b] = counts[DROPPED_CAPACITY, b] = 0
            counts[SLOT, b] = t[b] - 1
            continue
        for e in range(n_edges):
            requested[e] = actions[b, e] > 0.5
            usable[e] = arrivals[b, np.uint64(port_of_edge[e])] != 0  # unsigned: no wraparound
        n_arrival = n_capacity = 0
        if raise_mode:
            for e in range(n_edges):
                x[e] = requested[e]
        else:
            order = np.argsort(-actions[b], kind="mergesort") if scores else index_order  # stable, as the single env
            if gang:
                n_arrival, n_capacity = gang_repair_into(requested, usable, order, arms, task_req, server_cap,
                                                         min_tasks, x, gang_work)  # fmt: skip
            elif few_types:  # first_fit_into's two kernels, called directly (see there)
                n_arrival, n_capacity = first_fit_few_types(requested, usable, order, A, c, x, wanted)
            else:
                n_arrival, n_capacity = first_fit_many_types(requested, usable, order, A, c, x, used, wanted)
        fill_standard_normal(states, 2 * b, normals)
        utility, raw_utility, expected = realize_into(x, normals, mu, sigma, cost, clips, lo, width, v_tilde,
                                                      z_tilde, raw, feedback)  # fmt: skip
        for e in range(n_edges):
            obs_last_action[b, e] = x[e]
            obs_last_utility[b, e] = feedback[e]
        oracle = oracle_values[pattern[b]] if regret else 0.0
        n_dropped = n_arrival + n_capacity
        sums[AOU, b] += utility
        sums[DROPPED, b] += n_dropped
        sums[EXPECTED_AOU, b] += expected
        sums[ORACLE_AOU, b] += oracle
        sums[RUN_REGRET, b] += oracle - expected
        values[UTILITY, b], values[RAW_UTILITY, b], values[EXPECTED, b] = utility, raw_utility, expected
        values[ORACLE, b], values[SLOT_REGRET, b], values[REALIZED_REGRET, b] = (
            oracle,
            oracle - expected,
            oracle - utility,
        )
        values[REGRET, b] = sums[RUN_REGRET, b]
        counts[DROPPED_ARRIVAL, b], counts[DROPPED_CAPACITY, b], counts[SLOT, b] = n_arrival, n_capacity, t[b]
        rewards[b] = utility - penalty * n_dropped
        # The next slot: its arrivals, as the single simulator draws them after executing.
        t[b] += 1
        fill_random(states, 2 * b + 1, uniforms)
        next_pattern = 0
        for port in range(n_ports):
            arrived = uniforms[port] < rho[port]
            arrivals[b, port] = obs_arrivals[b, port] = arrived
            if regret and arrived:
                next_pattern |= 1 << port
        for e in range(n_edges):
            obs_edge_mask[b, e] = arrivals[b, np.uint64(port_of_edge[e])]
        obs_time[b, 0] = np.float32(min(1.0, (t[b] - 1) / horizon))
        pattern[b] = next_pattern
        missing[b] = regret and math.isnan(oracle_values[next_pattern])
        n_missing += missing[b]
    return n_missing
