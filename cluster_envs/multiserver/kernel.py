"""B copies of a multiserver or gang slot in one compiled loop (the batched envs' step; no gymnasium).

Each copy runs the single env's own kernels (:func:`~cluster_envs.multiserver.model.first_fit_into`'s or
:func:`~cluster_envs.multiserver.gang.gang_repair_into`, then
:func:`~cluster_envs.multiserver.model.realize_into`) on exogenous draws taken in the slot, in stream order,
from that copy's own streams (their ``PCG64`` states as rows of one array, :mod:`~cluster_envs.common.pcg`),
so a copy sees exactly the normals and arrival uniforms its single env would draw. The observation is written
straight into the arrays the step returns.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from cluster_envs.common.pcg import fill_random, fill_standard_normal
from cluster_envs.multiserver.gang import gang_is_feasible, gang_repair_into
from cluster_envs.multiserver.model import first_fit_few_types, first_fit_many_types, is_feasible, realize_into

# Rows of the step's float outputs (the info values) and of its integer outputs.
UTILITY, RAW_UTILITY, EXPECTED, ORACLE, SLOT_REGRET, REALIZED_REGRET, REGRET = range(7)
VALUES = 7
DROPPED_ARRIVAL, DROPPED_CAPACITY, SLOT = range(3)
COUNTS = 3
# Rows of the running episode sums.
AOU, EXPECTED_AOU, ORACLE_AOU, RUN_REGRET, DROPPED = range(5)
SUMS = 5


@njit(cache=True)
def pattern_of(arrivals) -> int:
    """The arrival pattern as an integer (bit l = port l has a job)."""
    pattern = 0
    for port in range(arrivals.size):
        if arrivals[port]:
            pattern |= 1 << port
    return pattern


@njit(cache=True)
def check_actions(actions, stepping, binary, raise_mode, gang, arrivals, port_of_edge, A, c, arms, task_req,
                  server_cap, min_tasks) -> tuple[int, int]:  # fmt: skip
    """First problem of a stepping copy's action: (0, −1) if none, else (code, copy) with code 1 non-finite,
    2 not binary, 3 infeasible under ``raise_mode``. Nothing is changed. ``a − a`` is 0 for every finite value,
    integers included, and NaN for NaN and ±inf."""
    if not raise_mode:  # the common case, one branch-free (vectorised) pass over every action first
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
        if raise_mode:
            for e in range(n_edges):
                x[e] = actions[b, e] > 0.5
                usable[e] = arrivals[b, port_of_edge[e]]
            if gang:
                ok = gang_is_feasible(x, usable, arms, task_req, server_cap, min_tasks)
            else:
                ok = is_feasible(x, usable, A, c)
            if not ok:
                return 3, b
    return 0, -1


@njit(cache=True)
def step_batch(actions, stepping, scores, raise_mode, gang, t, arrivals, pattern, states, port_of_edge, rho, A,
               c, arms, task_req, server_cap, min_tasks, mu, sigma, cost, clips, lo, width, v_tilde, regret,
               oracle_values, missing, penalty, horizon, sums, obs_arrivals, obs_edge_mask, obs_time, obs_last_action,
               obs_last_utility, rewards, values, counts, used, wanted, free, placed, port_order, chosen, bucket, fill,
               first) -> int:  # fmt: skip
    """One slot of every stepping copy (actions already checked by :func:`check_actions`; ``used`` to ``first``
    are the repairs' scratch arrays). The copy state ``t``, ``arrivals`` (of the slot about to be decided),
    ``pattern`` (their :func:`pattern_of`, with ``regret``), ``sums`` and ``states`` (rows 2b and 2b + 1: copy
    b's utility and arrival streams) advance; the ``obs_*``, ``rewards``,
    ``values`` and ``counts`` rows of the stepping copies are written (``values``/``counts``: zero for the
    others, ``counts[SLOT]`` = t − 1 for all). With ``regret``, ``oracle_values`` holds the oracle's value per
    arrival pattern (NaN: not solved yet); ``missing[b]`` says whether copy b's next pattern is not solved
    yet, and the return value counts them."""
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
                                                         min_tasks, x, free, placed, port_order, chosen, bucket,
                                                         fill, first)  # fmt: skip
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
