"""Offline oracles of paper 003: Proportional Greedy (PG, Algorithm 3 corrected) and restPG.

Both are privileged: they read the current queues and the load about to arrive, which no online
allocator may see. PG's cumulative work equals the offline optimum OPT_1(t) at every t.
"""

from __future__ import annotations

import numpy as np

from agents.base import BaseAgent
from cluster_envs.common.config import check_number
from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.sla.model import SLAProblem
from cluster_envs.sla.runner import NO_HIDDEN_STATE


@cached_njit
def water_fill(demand: np.ndarray, weights: np.ndarray, capacity: float) -> np.ndarray:
    """Serve ``min(demand, weights·θ)`` with θ chosen so that exactly ``capacity`` is used (or all demand).

    Users with zero weight are served uniformly from what the weighted users leave (A13 [ours]).
    """
    if demand.sum() <= capacity:
        return demand.copy()
    work = np.zeros_like(demand)
    weighted = (demand > 0) & (weights > 0)
    if demand[weighted].sum() <= capacity:
        work[weighted] = demand[weighted]
        rest = (demand > 0) & ~weighted
        work[rest] = _fill(demand[rest], np.ones(rest.sum()), capacity - work.sum())
    else:
        work[weighted] = _fill(demand[weighted], weights[weighted], capacity)
    return work


@cached_njit
def _fill(demand: np.ndarray, weights: np.ndarray, capacity: float) -> np.ndarray:
    """Weighted water-filling when Σ demand > capacity.

    With users sorted by d/w, the first k saturate and the rest share what is left in proportion to w:
    k is the first index whose level (C - Σ_{<k} d) / Σ_{≥k} w does not exceed its own d/w (compared
    without division, so that tiny weights cannot overflow).
    """
    n = demand.size
    order = np.argsort(demand / weights, kind="mergesort")  # a tiny weight gives inf: saturates last
    d, w = demand[order], weights[order]
    others = np.cumsum(w[::-1])[::-1]  # weight of the users from k on
    left = capacity  # capacity minus the demand of the k saturated users
    k = 0
    while k < n - 1 and left * w[k] > d[k] * others[k]:
        left -= d[k]
        k += 1
    out = np.empty(n)
    for r in range(n):
        out[order[r]] = d[r] if r < k else min(d[r], w[r] / others[k] * left)
    return out


@cached_njit
def greedy_kernel(params, memory, active, queue, next_load):
    """``params`` = [capacity, β_1..β_N]; serves the current demand Q_t + L_t by water-filling."""
    return water_fill(queue + next_load, params[1:], params[0])


class ProportionalGreedy(BaseAgent):
    """PG: the full-information optimal 1-allocation, β-weighted water-filling of capacity 1 over Q_t + L_t."""

    problem_type = SLAProblem
    name = "pg"
    privileged = True
    kernel = staticmethod(greedy_kernel)
    capacity = 1.0

    def reset(self, problem, seed: int | None = None) -> None:
        """``problem`` is the unwrapped env (or a simulator): anything with ``problem``, ``queue`` and ``next_load``."""
        self.state = problem
        self.params = np.concatenate([[self.capacity], problem.problem.sla_array])
        self.memory = NO_HIDDEN_STATE

    def act(self, observation: np.ndarray) -> np.ndarray:
        return greedy_kernel(self.params, self.memory, NO_HIDDEN_STATE, self.state.queue, self.state.next_load)


class RestrictedProportionalGreedy(ProportionalGreedy):
    """restPG: PG restricted to capacity 1 - ε (ε of Algorithm 2); attains OPT_{1-ε}(t). Idles the rest."""

    name = "rest_pg"
    env_kwargs = {"action_mode": "sub_simplex"}

    def __init__(self, eps: float = 0.02):
        check_number("eps", eps, low=0.0, high=1.0, low_open=True, high_open=True)
        self.capacity = 1.0 - eps
