"""OPM-GC (Sec. V-C, L647-669): OPM with machine capacities C_i, task demands r_j and parallelism caps u_j.

Projection P5 (min ‖z − y‖² s.t. Σ_j r_j z_j^i ≤ C_i, Σ_i z_j^i ≤ u_j, 0 ≤ z ≤ 1) by Dykstra's alternating
projections; rounding by bipartite dependent rounding (Gandhi, Khuller, Parthasarathy, Srinivasan, JACM
2006), which keeps E[x̃] = x and every machine's and job's task count within ⌊·⌋..⌈·⌉ of its fractional
degree, hence within C_i (unit demands) and u_j. With non-unit demands a machine may still be over
capacity: its tasks with the smallest gradient are dropped (spec §4.3; a small bias).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.approx.common import COL
from agents.approx.primal_dual import OPM

FRACTIONAL = 1e-9


def capped_weighted_projection(y: np.ndarray, w: np.ndarray, cap: np.ndarray, iterations: int = 60) -> np.ndarray:
    """Project each column v of ``y`` onto {0 ≤ z ≤ 1, w_v·z ≤ cap_v}: z = clip(y − η w, 0, 1), η by bisection."""
    z = np.clip(y, 0.0, 1.0)
    over = (w * z).sum(axis=0) > cap
    if not over.any():
        return z
    yo, wo, co = y[:, over], w[:, over], cap[over]
    low, high = np.zeros(co.size), np.full(co.size, (np.abs(yo).max(axis=0) + 1.0) / wo.min(axis=0))
    for _ in range(iterations):
        mid = (low + high) / 2
        too_much = (wo * np.clip(yo - mid * wo, 0.0, 1.0)).sum(axis=0) > co
        low, high = np.where(too_much, mid, low), np.where(too_much, high, mid)
    z[:, over] = np.clip(yo - high * wo, 0.0, 1.0)
    return z


def project_p5(y, demand, parallelism, capacity, tol: float = 1e-7, max_iter: int = 500) -> np.ndarray:
    """Dykstra's algorithm over the machine sets (columns) and the job sets (rows) of P5."""
    k, m = y.shape
    machine_w = np.repeat(demand[:, None], m, axis=1)
    x, p, q = y.copy(), np.zeros_like(y), np.zeros_like(y)
    for _ in range(max_iter):
        a = capped_weighted_projection(x + p, machine_w, capacity)
        p = x + p - a
        b = capped_weighted_projection((a + q).T, np.ones((m, k)), parallelism).T
        q = a + q - b
        done = np.abs(b - x).max() < tol
        x = b
        if done:
            break
    return x


def dependent_rounding(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """GKPS bipartite dependent rounding of a (K, M) fractional matrix (rows = jobs, columns = machines)."""
    x = x.copy()
    x[x < FRACTIONAL] = 0.0
    x[x > 1 - FRACTIONAL] = 1.0
    while True:
        frac = (x > 0) & (x < 1)
        if not frac.any():
            return x > 0.5
        edges = _path_or_cycle(frac)
        first, second = edges[0::2], edges[1::2]
        v1 = np.array([x[e] for e in first])
        v2 = np.array([x[e] for e in second]) if second else np.array([])
        up = min((1 - v1).min(), v2.min() if v2.size else np.inf)
        down = min(v1.min(), (1 - v2).min() if v2.size else np.inf)
        step = up if rng.random() < down / (up + down) else -down
        for e in first:
            x[e] = float(np.clip(x[e] + step, 0.0, 1.0))
        for e in second:
            x[e] = float(np.clip(x[e] - step, 0.0, 1.0))
        x[(x > 0) & (x < FRACTIONAL)] = 0.0
        x[(x < 1) & (x > 1 - FRACTIONAL)] = 1.0


def _path_or_cycle(frac: np.ndarray) -> list[tuple[int, int]]:
    """A cycle or a maximal path of fractional edges, as (job, machine) pairs in walking order."""
    job_deg, machine_deg = frac.sum(axis=1), frac.sum(axis=0)
    ends = [("j", j) for j in np.flatnonzero(job_deg == 1)] + [("m", i) for i in np.flatnonzero(machine_deg == 1)]
    node = ends[0] if ends else ("j", int(np.flatnonzero(job_deg)[0]))
    used: set[tuple[int, int]] = set()
    seen = {node: 0}
    walk: list[tuple[int, int]] = []
    while True:
        side, v = node
        options = np.flatnonzero(frac[v] if side == "j" else frac[:, v])
        nxt = next((int(o) for o in options if ((v, int(o)) if side == "j" else (int(o), v)) not in used), None)
        if nxt is None:
            return walk
        edge = (v, nxt) if side == "j" else (nxt, v)
        used.add(edge)
        walk.append(edge)
        node = ("m", nxt) if side == "j" else ("j", nxt)
        if node in seen:
            return walk[seen[node] :]
        seen[node] = len(walk)


class OPMGC(OPM):
    """OPM for the Sec. V-C model (needs ``capacity`` set on ``ClusterApprox-v1``)."""

    name = "opm_gc"
    env_kwargs = {"capacity": 2, "parallelism": 4}
    categorical = False  # dependent rounding (``_round``)

    def reset(self, problem: Any, seed: int | None = None) -> None:
        if not problem.generalized:
            raise ValueError("opm_gc needs the Sec. V-C mode of ClusterApprox-v1: pass capacity=...")
        super().reset(problem, seed)
        self.capacity = np.asarray(problem.capacity, dtype=np.float64)

    def _limits(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        present = rows[:, COL["present"]] > 0
        demand = np.where(present, rows[:, len(COL)], 1.0)
        parallelism = np.where(present, rows[:, len(COL) + 1], 0.0)
        return demand, parallelism

    def _project(self, y: np.ndarray, rows: np.ndarray) -> np.ndarray:
        demand, parallelism = self._limits(rows)
        return project_p5(y, demand, parallelism, self.capacity)

    def _round(self, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        assign = dependent_rounding(x, self.rng)
        demand, _ = self._limits(rows)
        load = demand @ assign
        for i in np.flatnonzero(load > self.capacity + 1e-9):
            tasks = np.flatnonzero(assign[:, i])
            for k in tasks[np.argsort(self.grad[tasks, i])]:  # grad: the active slots' rows
                if demand @ assign[:, i] <= self.capacity[i] + 1e-9:
                    break
                assign[k, i] = False
        return assign
