"""Gang scheduling (Section 3.4 of paper 001, completed in spec §3.12) in numpy, scipy and numba.

A type-``l`` job has tasks ``q ∈ Q_l``; an arm is a placement ``(l, q, r)`` with ``r ∈ R_l``. Constraints:
(G1) a task is placed at most once; (G2) nothing for an idle port; (G3) all-or-nothing: a port places 0 or
at least ``m_l`` of its tasks; (G4) per-server capacity ``Σ a^l_{(q,k)} x ≤ c_{(k,r)}``. Utilities are
drawn per arm exactly like a channel of the main env (:class:`UtilityModel`), with semi-bandit feedback.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_array, hstack

from cluster_envs.common.guards import Estimate
from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.multiserver.model import PatternCache, UtilityModel, draw_utility


@dataclass(frozen=True)
class GangParams:
    n_ports: int = 4
    n_servers: int = 10
    n_device_types: int = 3
    edge_prob: float = 0.3
    arrival_prob: float | tuple[float, ...] = 0.9
    tasks_low: int = 2
    tasks_high: int = 4
    min_tasks: str = "all"
    req_low: int = 1
    req_high: int = 2
    c_low: int = 1
    c_high: int = 2
    capacity_scale: float = 1.0  # each server's capacity × this, floored (the trace's binding preset: 0.2)
    mu_low: float = 0.1
    mu_high: float = 1.0
    sigma_ratio: float = 0.5
    cost_mean: float = 0.5
    cost_std: float = 0.1
    normalization: str = "affine_clip"


@dataclass(frozen=True, eq=False)
class GangStructure:
    """The public structure: arms ``(l, q, r)`` in lexicographic order (the action index), tasks, requests
    and server capacities. Schedulers (ESDP-gang) solve their MILPs on it."""

    n_ports: int
    n_servers: int
    arms: np.ndarray  # (n_arms, 3) rows (port, global task id, server)
    task_port: np.ndarray  # (n_tasks,)
    min_tasks: np.ndarray  # (|L|,) m_l
    task_req: np.ndarray  # (K, n_tasks)
    server_cap: np.ndarray  # (K, |R|)
    constraints: tuple = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "constraints", _constraint_matrices(self))

    @property
    def n_edges(self) -> int:  # the arms play the role of the main env's edges
        return self.arms.shape[0]

    @property
    def n_device_types(self) -> int:
        return self.task_req.shape[0]

    @property
    def port_of_edge(self) -> np.ndarray:
        return self.arms[:, 0]

    @property
    def n_tasks_of_port(self) -> np.ndarray:
        return np.bincount(self.task_port, minlength=self.n_ports)

    def edge_mask(self, arrivals: np.ndarray) -> np.ndarray:
        return np.asarray(arrivals, dtype=bool)[self.port_of_edge]

    def server_load(self, x: np.ndarray) -> np.ndarray:
        """``(K, |R|)`` capacity used by the placement ``x``."""
        load = np.zeros((self.n_device_types, self.n_servers), dtype=np.int64)
        used = np.flatnonzero(x)
        np.add.at(load, (slice(None), self.arms[used, 2]), self.task_req[:, self.arms[used, 1]])
        return load


@dataclass(frozen=True, eq=False)
class GangInstance(GangStructure):
    """A gang instance: the structure plus the hidden utility model and the arrival probabilities."""

    utility: UtilityModel = None  # type: ignore[assignment]
    rho: np.ndarray = None  # type: ignore[assignment]
    schedule: np.ndarray | None = None  # (T, |L|) int8 arrivals replayed from a trace instead of Bernoulli(ρ) draws

    @property
    def v_tilde(self) -> np.ndarray:
        return self.utility.v_tilde


def generate_gang_instance(p: GangParams, rng: np.random.Generator) -> GangInstance:
    """Draw order (ours, after the main env's): adjacency (+ one server per empty port), tasks per port,
    task requests, server capacities, ``μ`` per arm, costs ``F`` per (k, arm), ``ρ``."""
    adj = rng.random((p.n_ports, p.n_servers)) < p.edge_prob
    for port in range(p.n_ports):
        if not adj[port].any():
            adj[port, rng.integers(p.n_servers)] = True
    n_tasks = rng.integers(p.tasks_low, p.tasks_high + 1, size=p.n_ports)
    task_port = np.repeat(np.arange(p.n_ports), n_tasks)
    task_req = rng.integers(p.req_low, p.req_high + 1, size=(p.n_device_types, task_port.size))
    server_cap = scaled_capacity(rng.integers(p.c_low, p.c_high + 1, size=(p.n_device_types, p.n_servers)), p)
    arms = arms_of(task_port, adj)
    utility = draw_utility(p, p.n_device_types, len(arms), rng)
    rho = np.broadcast_to(np.asarray(p.arrival_prob, dtype=float), (p.n_ports,)).copy()
    return GangInstance(
        p.n_ports,
        p.n_servers,
        arms,
        task_port,
        min_task_counts(n_tasks, p.min_tasks),
        task_req,
        server_cap,
        utility=utility,
        rho=rho,
    )


def scaled_capacity(server_cap: np.ndarray, p: GangParams) -> np.ndarray:
    """Per-server capacities (K, |R|) in units × ``capacity_scale``, floored (1: unchanged)."""
    if p.capacity_scale == 1.0:
        return server_cap
    return np.floor(server_cap * p.capacity_scale + 1e-9).astype(np.int64)


def binding_share(inst: GangInstance) -> float:
    """The share of slots in which capacity binds: no feasible placement runs every task of the arrived jobs that
    could each run alone (the most tasks a placement runs, ``gang_milp`` with unit values, falls short of their
    count). A job that fits nowhere even alone is not contention and is not counted. One MILP per port and per
    distinct arrival pattern of ``inst.schedule``."""
    if inst.schedule is None:
        raise ValueError("binding_share needs replayed arrivals (a trace preset's instance.schedule)")
    ones = np.ones(inst.n_edges)

    def most_tasks(ports: np.ndarray) -> int:
        x = gang_milp(ones, inst, ports.astype(bool))
        return 0 if x is None else int(x.sum())

    tasks = inst.n_tasks_of_port
    alone = np.array([most_tasks(np.eye(inst.n_ports)[l]) == tasks[l] for l in range(inst.n_ports)])
    patterns, slot_pattern = np.unique(inst.schedule, axis=0, return_inverse=True)
    binds = np.array([most_tasks(p) < tasks @ (p * alone) for p in patterns])
    return float(binds[slot_pattern.ravel()].mean())


def arms_of(task_port: np.ndarray, adj: np.ndarray) -> np.ndarray:
    """The arms ``(l, q, r)`` in lexicographic order: each task ``q`` of port ``l`` on each server adjacent to ``l``."""
    return np.array(
        [(task_port[q], q, r) for q in range(task_port.size) for r in np.flatnonzero(adj[task_port[q]])],
        dtype=np.int64,
    )


def min_task_counts(n_tasks: np.ndarray, rule: str) -> np.ndarray:
    """``m_l``: all of a port's tasks, or half of them rounded up."""
    return n_tasks if rule == "all" else np.ceil(n_tasks / 2).astype(np.int64)


def _constraint_matrices(inst: GangStructure) -> tuple:
    """Sparse rows of (G1) per task, (G4) per (k, r) and the port sums used by (G3)."""
    n_arms = inst.arms.shape[0]
    cols = np.arange(n_arms)
    per_task = csr_array((np.ones(n_arms), (inst.arms[:, 1], cols)), shape=(inst.task_port.size, n_arms))
    k_count = inst.task_req.shape[0]
    rows = (np.arange(k_count)[:, None] * inst.n_servers + inst.arms[:, 2]).ravel()
    data = inst.task_req[:, inst.arms[:, 1]].ravel()
    per_server = csr_array((data, (rows, np.tile(cols, k_count))), shape=(k_count * inst.n_servers, n_arms))
    per_port = csr_array((np.ones(n_arms), (inst.arms[:, 0], cols)), shape=(inst.n_ports, n_arms))
    return per_task, per_server, per_port


def gang_milp(
    values: np.ndarray,
    inst: GangStructure,
    usable_ports: np.ndarray,
    budget_weights: np.ndarray | None = None,
    budget: float = 0.0,
) -> np.ndarray | None:
    """``argmax valuesᵀx`` s.t. (G1)–(G4) with ports outside ``usable_ports`` idle and, if given,
    ``budget_weightsᵀx ≥ budget``; None if infeasible. Variables: the arms, then one ``y_l`` per port."""
    per_task, per_server, per_port = inst.constraints
    n_arms, n_ports = inst.n_edges, inst.n_ports
    zeros_p = csr_array((per_task.shape[0], n_ports))
    rows = [
        LinearConstraint(_hstack(per_task, zeros_p), -np.inf, 1.0),
        LinearConstraint(
            _hstack(per_server, csr_array((per_server.shape[0], n_ports))), -np.inf, inst.server_cap.ravel()
        ),
        # m_l y_l ≤ Σ_l x ≤ |Q_l| y_l
        LinearConstraint(_hstack(per_port, csr_array(-np.diag(inst.min_tasks.astype(float)))), 0.0, np.inf),
        LinearConstraint(_hstack(per_port, csr_array(-np.diag(inst.n_tasks_of_port.astype(float)))), -np.inf, 0.0),
    ]
    if budget_weights is not None:
        row = np.concatenate([np.asarray(budget_weights, float), np.zeros(n_ports)])[None, :]
        rows.append(LinearConstraint(row, budget, np.inf))
    upper = np.concatenate([np.ones(n_arms), np.asarray(usable_ports, float)])
    res = milp(
        -np.concatenate([np.asarray(values, float), np.zeros(n_ports)]),
        constraints=rows,
        integrality=np.ones(n_arms + n_ports),
        bounds=Bounds(0.0, upper),
        options={"mip_rel_gap": 0.0},
    )
    if res.x is None:
        return None
    return np.round(res.x[:n_arms]).astype(np.int8)


# HiGHS on this MILP, fitted on gang instances of 188 to 127 240 nonzeros and 11 to 202 tasks on a loaded 2-core
# machine (docs/robustness.md, estimated vs measured): time grows like nonzeros x tasks (the branching works on the
# tasks' placements), memory like the nonzeros. Branch and bound can take longer than any size model says.
MILP_SECONDS_PER_NONZERO_TASK = 1.5e-6
MILP_BYTES_PER_NONZERO = 2048
MILP_BASE_BYTES = 4 * 2**20


def milp_estimate(inst: GangStructure) -> Estimate:
    """The peak allocation and run time of :func:`gang_milp` on ``inst`` with every port arrived (the largest
    problem: presolve removes the arms of idle ports), from the constraint matrix's nonzeros and the tasks."""
    per_task, per_server, per_port = inst.constraints
    nnz = per_task.nnz + per_server.nnz + 2 * per_port.nnz + 2 * inst.n_ports
    n_tasks = inst.task_port.size
    return Estimate(MILP_BASE_BYTES + MILP_BYTES_PER_NONZERO * nnz, MILP_SECONDS_PER_NONZERO_TASK * nnz * n_tasks,
                    f"{inst.n_edges} arms, {n_tasks} tasks, {nnz} nonzeros")  # fmt: skip


def _hstack(left, right):
    return hstack([left, right], format="csr")


class GangOracle(PatternCache):
    """``argmax ṽᵀx`` over the feasible placements of the arrived ports, cached per arrival pattern."""

    def __init__(self, inst: GangInstance):
        super().__init__()
        self.inst, self.values = inst, inst.v_tilde

    def _solve(self, arrivals: np.ndarray) -> np.ndarray:
        return gang_milp(self.values, self.inst, arrivals)


def gang_violation(x: np.ndarray, inst: GangStructure, arrivals: np.ndarray) -> str | None:
    """The first violated constraint among (G1)–(G4), as a sentence, or None."""
    x = np.asarray(x, dtype=np.int64)
    idle = np.flatnonzero(x.astype(bool) & ~inst.edge_mask(arrivals))
    if idle.size:
        return f"arrival gating (G2): arms {idle.tolist()} belong to ports without a job this slot"
    per_task, _, per_port = inst.constraints
    twice = np.flatnonzero(per_task @ x > 1)
    if twice.size:
        return f"single placement (G1): tasks {twice.tolist()} are placed on more than one server"
    placed = per_port @ x
    partial = np.flatnonzero((placed > 0) & (placed < inst.min_tasks))
    if partial.size:
        l = int(partial[0])
        return f"all-or-nothing (G3): port {l} places {int(placed[l])} tasks, needs 0 or ≥ m_l={int(inst.min_tasks[l])}"
    load = inst.server_load(x)
    over = np.argwhere(load > inst.server_cap)
    if over.size:
        k, r = (int(v) for v in over[0])
        return (
            f"per-server capacity (G4): device type k={k} on server r={r} uses {load[k, r]} > {inst.server_cap[k, r]}"
        )
    return None


def gang_repair(
    requested: np.ndarray, inst: GangStructure, usable: np.ndarray, priority: np.ndarray, workspace: tuple = ()
) -> tuple[np.ndarray, int, int]:
    """Spec §3.12: drop the bits outside ``usable`` (idle ports); visit ports by their best requested arm in
    ``priority``; place each requested task on its highest-priority requested server with room; roll back
    a port that placed fewer than ``m_l`` tasks. Returns (x, dropped for arrivals, dropped for capacity).
    ``workspace``: :func:`gang_workspace` arrays to reuse (made here if empty)."""
    priority = np.asarray(priority, np.int64)
    x = np.empty(priority.size, dtype=np.int8)
    n_arrival, n_capacity = gang_repair_into(
        np.asarray(requested, bool), np.asarray(usable, bool), priority, inst.arms,
        inst.task_req, inst.server_cap, inst.min_tasks, x, workspace or gang_workspace(inst),
    )  # fmt: skip
    return x, n_arrival, n_capacity


def gang_workspace(inst: GangStructure) -> tuple[np.ndarray, ...]:
    """Scratch arrays of :func:`gang_repair_into` (free capacity, placed tasks, port order, chosen arms, arms bucketed
    by port, bucket sizes) and where each port's bucket starts (one spare slot per port and in the port order: see
    the repair)."""
    first = np.zeros(inst.n_ports + 1, np.int64)
    first[1:] = np.cumsum(np.bincount(inst.port_of_edge, minlength=inst.n_ports) + 1)
    return (np.empty_like(inst.server_cap), np.empty(inst.task_port.size, np.bool_),
            np.empty(inst.n_ports + 1, np.int64), np.empty(inst.n_edges, np.int64), np.empty(first[-1], np.int64),
            np.empty(inst.n_ports, np.int64), first)  # fmt: skip


@cached_njit
def gang_repair_into(requested, usable, priority, arms, task_req, server_cap, min_tasks, x, work) -> tuple[int, int]:
    """:func:`gang_repair` into ``x``, with ``work`` the scratch arrays of :func:`gang_workspace`. No branches on
    the (random) bits and fits, which would mispredict: every arm writes its bucket's next slot and the next slot
    of the port order, and only a gated arm (a port's first) advances them (hence the spare slots); a task is
    placed iff no slack ``free − request`` is negative."""
    free, placed, port_order, chosen, bucket, fill, first = work
    n_types = task_req.shape[0]
    for e in range(x.size):  # loops, not slice assignments: numba's cost tens of ns each
        x[e] = 0
    for port in range(fill.size):
        fill[port] = 0
    # One pass along the priority: each port's gated arms, in priority order, into its bucket; ports in the
    # order of their best gated arm (first appearance).
    n_arrival = n_seen = 0
    for i in range(priority.size):
        e = np.uint64(priority[i])  # unsigned indices: no negative-index wraparound
        r = np.int64(requested[e])
        gated = r & np.int64(usable[e] != 0)
        n_arrival += r - gated
        port = np.uint64(arms[e, 0])
        port_order[n_seen] = port
        n_seen += gated & np.int64(fill[port] == 0)
        bucket[first[port] + fill[port]] = e
        fill[port] += gated
    for k in range(n_types):
        for server in range(free.shape[1]):
            free[k, server] = server_cap[k, server]
    for task in range(placed.size):
        placed[task] = False
    n_capacity = 0
    few_types = n_types <= 4  # (the presets have 1 or 3)
    k1, k2, k3 = min(1, n_types - 1), min(2, n_types - 1), min(3, n_types - 1)
    for j in range(n_seen):
        port = np.uint64(port_order[j])
        n_mine, n_chosen = fill[port], 0
        for i in range(first[port], first[port] + n_mine):
            e = np.uint64(bucket[i])
            task, server = np.uint64(arms[e, 1]), np.uint64(arms[e, 2])
            if few_types:  # unrolled (types beyond K repeat the last; stored last to first, so each once)
                f0, f1, f2, f3 = free[0, server], free[k1, server], free[k2, server], free[k3, server]
                q0, q1, q2, q3 = task_req[0, task], task_req[k1, task], task_req[k2, task], task_req[k3, task]
                take = ~((-np.int64(placed[task]) | (f0 - q0) | (f1 - q1) | (f2 - q2) | (f3 - q3)) >> 63)
                free[k3, server], free[k2, server] = f3 - (q3 & take), f2 - (q2 & take)
                free[k1, server], free[0, server] = f1 - (q1 & take), f0 - (q0 & take)
            else:
                short = -np.int64(placed[task])
                for k in range(n_types):
                    short |= free[k, server] - task_req[k, task]
                take = ~(short >> 63)  # −1 if the task is still unplaced and fits the server, else 0
                for k in range(n_types):
                    free[k, server] -= task_req[k, task] & take
            placed[task] |= take != 0
            chosen[n_chosen] = e
            n_chosen -= take
        if n_chosen >= min_tasks[port]:  # each chosen arm placed a distinct task
            for i in range(n_chosen):
                x[chosen[i]] = 1
            n_capacity += n_mine - n_chosen
        else:  # roll the port back
            for i in range(n_chosen):
                for k in range(n_types):
                    free[k, arms[chosen[i], 2]] += task_req[k, arms[chosen[i], 1]]
            n_capacity += n_mine
    return n_arrival, n_capacity


@cached_njit
def gang_is_feasible(x, usable, arms, task_req, server_cap, min_tasks) -> bool:
    """(G1)–(G4) hold for ``x`` with the ports outside ``usable`` idle (what :func:`gang_violation` checks)."""
    n_types = task_req.shape[0]
    placed = np.zeros(task_req.shape[1], np.int64)
    per_port = np.zeros(min_tasks.size, np.int64)
    load = np.zeros(server_cap.shape, np.int64)
    for e in range(arms.shape[0]):
        if x[e]:
            if not usable[e]:
                return False
            placed[arms[e, 1]] += 1
            per_port[arms[e, 0]] += 1
            for k in range(n_types):
                load[k, arms[e, 2]] += task_req[k, arms[e, 1]]
    if (placed > 1).any() or (load > server_cap).any():
        return False
    for port in range(min_tasks.size):
        if 0 < per_port[port] < min_tasks[port]:
            return False
    return True
