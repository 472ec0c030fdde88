"""B copies of a multiserver or gang slot in one compiled loop (the batched envs' step; no gymnasium).

Each copy runs the single env's own kernels (:func:`~cluster_envs.multiserver.dynamics.first_fit_into` or
:func:`~cluster_envs.multiserver.gang.gang_repair_into`, then
:func:`~cluster_envs.multiserver.dynamics.realize_into`), on exogenous draws taken in advance, per copy and in
stream order, from that copy's own generators (:func:`draw_block`), so a copy sees exactly the normals and
arrival uniforms its single env would draw. The draws are stored slot-major, ``(block, B, ·)``, so that one
step of the batch reads contiguous memory.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from cluster_envs.multiserver.dynamics import first_fit_into, is_feasible, realize_into
from cluster_envs.multiserver.gang import gang_is_feasible, gang_repair_into

# Columns of the per-copy scalars of the last slot and of the running episode sums.
UTILITY, RAW_UTILITY, DROPPED_ARRIVAL, DROPPED_CAPACITY, EXPECTED, ORACLE, SLOT_REGRET, REALIZED_REGRET = range(8)
SCALARS = 8
AOU, EXPECTED_AOU, ORACLE_AOU, REGRET, DROPPED = range(5)
SUMS = 5


@njit(cache=True)
def draw_block(rng_utility, rng_arrivals, normals, uniforms, b) -> None:
    """Copy b's standard normals and arrival uniforms of the next ``len(normals)`` slots, into
    ``normals[:, b]`` and ``uniforms[:, b]`` (numba's Generator methods give NumPy's values, in the same
    stream order)."""
    block, n_edges = normals.shape[0], normals.shape[2]
    draws = rng_utility.standard_normal(block * n_edges)
    for k in range(block):
        normals[k, b] = draws[k * n_edges : (k + 1) * n_edges]
    n_ports = uniforms.shape[2]
    draws = rng_arrivals.random(block * n_ports)
    for k in range(block):
        uniforms[k, b] = draws[k * n_ports : (k + 1) * n_ports]


@njit(cache=True)
def pattern_of(arrivals) -> int:
    """The arrival pattern as an integer (bit l = port l has a job)."""
    pattern = 0
    for port in range(arrivals.size):
        if arrivals[port]:
            pattern |= 1 << port
    return pattern


@njit(cache=True)
def check_actions(actions, stepping, binary, raise_mode, gang, edge_mask, A, c, arms, task_req, server_cap,
                  min_tasks) -> tuple[int, int]:  # fmt: skip
    """First problem of a stepping copy's action: (0, −1) if none, else (code, copy) with code 1 non-finite,
    2 not binary, 3 infeasible under ``raise_mode``. Nothing is changed."""
    if not raise_mode:  # the common case, one branch-free pass over every action first
        ok = True
        for a in actions.ravel():
            ok &= (a == 0.0 or a == 1.0) if binary else math.isfinite(a)
        if ok:
            return 0, -1
    x = np.empty(actions.shape[1], np.int8)
    for b in range(actions.shape[0]):
        if not stepping[b]:
            continue
        for a in actions[b]:
            if not math.isfinite(a):
                return 1, b
            if binary and a != 0.0 and a != 1.0:
                return 2, b
        if raise_mode:
            for e in range(x.size):
                x[e] = actions[b, e] > 0.5
            if gang:
                ok = gang_is_feasible(x, edge_mask[b], arms, task_req, server_cap, min_tasks)
            else:
                ok = is_feasible(x, edge_mask[b], A, c)
            if not ok:
                return 3, b
    return 0, -1


@njit(cache=True)
def step_batch(actions, stepping, scores, raise_mode, gang, t, position, arrivals, edge_mask, normals, uniforms,
               port_of_edge, rho, A, c, arms, task_req, server_cap, min_tasks, mu, sigma, cost, clips, lo, width,
               v_tilde, regret, oracle_values, missing, penalty, horizon, last_action, feedback, time, rewards, scalars,
               sums, used, free, placed, seen, port_order, chosen) -> int:  # fmt: skip
    """One slot of every stepping copy (actions already checked by :func:`check_actions`; the last six
    arguments are the repairs' scratch arrays). With ``regret``,
    ``oracle_values`` holds the oracle's value per arrival pattern (NaN: not solved yet); ``missing[b]`` says
    whether copy b's next pattern is not solved yet, and the return value counts them."""
    n_copies, n_edges = actions.shape
    index_order = np.arange(n_edges)
    requested = np.empty(n_edges, np.bool_)
    z_tilde, raw = np.empty(n_edges), np.empty(n_edges)
    n_missing = 0
    for b in range(n_copies):
        if not stepping[b]:
            continue
        a = actions[b]
        x = last_action[b]
        for e in range(n_edges):
            requested[e] = a[e] > 0.5
        n_arrival = n_capacity = 0
        if raise_mode:
            for e in range(n_edges):
                x[e] = requested[e]
        else:
            order = np.argsort(-a, kind="mergesort") if scores else index_order  # stable, as the single env
            if gang:
                n_arrival, n_capacity = gang_repair_into(requested, edge_mask[b], order, arms, task_req,
                                                         server_cap, min_tasks, x, free, placed, seen, port_order,
                                                         chosen)  # fmt: skip
            else:
                n_arrival, n_capacity = first_fit_into(requested, edge_mask[b], order, A, c, x, used)
        k = position[b]
        utility, raw_utility, expected = realize_into(x, normals[k, b], mu, sigma, cost, clips, lo, width, v_tilde,
                                                      z_tilde, raw, feedback[b])  # fmt: skip
        oracle = oracle_values[pattern_of(arrivals[b])] if regret else 0.0
        s, run = scalars[b], sums[b]
        s[UTILITY], s[RAW_UTILITY], s[EXPECTED], s[ORACLE] = utility, raw_utility, expected, oracle
        s[DROPPED_ARRIVAL], s[DROPPED_CAPACITY] = n_arrival, n_capacity
        s[SLOT_REGRET], s[REALIZED_REGRET] = oracle - expected, oracle - utility
        run[AOU] += utility
        run[DROPPED] += n_arrival + n_capacity
        run[EXPECTED_AOU] += expected
        run[ORACLE_AOU] += oracle
        run[REGRET] += oracle - expected
        rewards[b] = utility - penalty * (n_arrival + n_capacity)
        # The next slot: its arrivals, as the single simulator draws them after executing.
        t[b] += 1
        for port in range(arrivals.shape[1]):
            arrivals[b, port] = uniforms[k, b, port] < rho[port]
        for e in range(n_edges):
            edge_mask[b, e] = arrivals[b, port_of_edge[e]]
        position[b] = k + 1
        time[b, 0] = np.float32(min(1.0, (t[b] - 1) / horizon))
        missing[b] = regret and math.isnan(oracle_values[pattern_of(arrivals[b])])
        n_missing += missing[b]
    return n_missing
