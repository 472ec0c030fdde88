"""Offline benchmarks of paper 003: Proportional Greedy (PG, Algorithm 3 corrected) and restPG.

Both are privileged: they read the current queues and the load about to arrive, which no online
allocator may see. PG's cumulative work equals the offline optimum OPT_1(t) at every t.
"""

from __future__ import annotations

import numpy as np

from agents.base import BaseAgent
from cluster_envs.common.config import check_number


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


def _fill(demand: np.ndarray, weights: np.ndarray, capacity: float) -> np.ndarray:
    """Weighted water-filling when Σ demand > capacity.

    With users sorted by d/w, the first k saturate and the rest share what is left in proportion to w:
    k is the first index whose level (C - Σ_{<k} d) / Σ_{≥k} w does not exceed its own d/w (compared
    without division, so that tiny weights cannot overflow).
    """
    with np.errstate(over="ignore", divide="ignore"):
        order = np.argsort(demand / weights, kind="stable")
    d, w = demand[order], weights[order]
    left = capacity - np.concatenate([[0.0], np.cumsum(d)[:-1]])
    others = np.cumsum(w[::-1])[::-1]
    k = int(np.argmax(left * w <= d * others))
    work = np.empty_like(d)
    work[:k] = d[:k]
    work[k:] = np.minimum(d[k:], w[k:] / others[k] * left[k])
    out = np.empty_like(work)
    out[order] = work
    return out


class ProportionalGreedy(BaseAgent):
    """PG: the full-information optimal 1-allocation, β-weighted water-filling of capacity 1 over Q_t + L_t."""

    name = "pg"
    privileged = True

    capacity = 1.0

    def reset(self, problem, seed: int | None = None) -> None:
        """``problem`` is the unwrapped env (or a simulator): anything with ``problem``, ``queue`` and ``next_load``."""
        self.state = problem
        self.beta = problem.problem.sla_array

    def act(self, observation: np.ndarray) -> np.ndarray:
        demand = self.state.queue + self.state.next_load
        return water_fill(demand, self.beta, self.capacity)


class RestrictedProportionalGreedy(ProportionalGreedy):
    """restPG: PG restricted to capacity 1 - ε (ε of Algorithm 2); attains OPT_{1-ε}(t). Idles the rest."""

    name = "rest_pg"
    env_kwargs = {"action_mode": "sub_simplex"}

    def __init__(self, eps: float = 0.02):
        check_number("eps", eps, low=0.0, high=1.0, low_open=True, high_open=True)
        self.capacity = 1.0 - eps
