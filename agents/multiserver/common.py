"""What every ``ClusterMultiServer-v0`` learner shares: the semi-bandit statistics and greedy filling.

Feedback comes from the observation only: ``last_action`` (the executed, repaired action of the previous
slot) and ``last_utility`` (``Z̃_e`` on its edges). The statistics of slot ``t`` use slots ``< t`` (spec
§7 A8): ``n_e`` (8) and the running sum behind ``v̂_e`` (9).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.base import BaseAgent
from cluster_envs.common.config import check_choice
from cluster_envs.multiserver.model import MultiServerProblem

STOP_RULES = ("first_fail", "skip")


class SemiBanditAgent(BaseAgent):
    """Keeps ``t``, ``n_e`` and ``Σ x_e Z̃_e`` from the feedback in each observation."""

    problem_type = MultiServerProblem
    env_kwargs = {"invalid_action": "raise"}  # a reference agent's infeasible action is a bug, not repaired

    def reset(self, problem: Any, seed: int | None = None) -> None:
        self.problem = problem
        if hasattr(problem, "A"):  # ClusterMultiServer-v0: one cluster-wide knapsack (the gang env has none)
            self.A = np.asarray(problem.A, dtype=np.int64)
            self.c = np.asarray(problem.c, dtype=np.int64)
        self.port_of_edge = np.asarray(problem.port_of_edge)
        self.n = np.zeros(problem.n_edges, dtype=np.int64)
        self.sums = np.zeros(problem.n_edges)
        self.t = 0

    def observe(self, observation: dict) -> np.ndarray:
        """Absorb the previous slot's feedback, advance ``t`` and return this slot's edge mask (bool)."""
        x = np.asarray(observation["last_action"], dtype=np.int64)
        self.n += x
        self.sums += x * np.asarray(observation["last_utility"], dtype=np.float64)
        self.t += 1
        return np.asarray(observation["edge_mask"], dtype=bool)

    @property
    def v_hat(self) -> np.ndarray:
        """(9), clipped to [0, 1] (only matters with ``normalization="none"``), 0 for unplayed edges."""
        mean = np.divide(self.sums, self.n, out=np.zeros_like(self.sums), where=self.n > 0)
        return np.clip(mean, 0.0, 1.0)


def greedy_fill(order: np.ndarray, A: np.ndarray, c: np.ndarray, stop_rule: str) -> np.ndarray:
    """Add edges along ``order`` while ``Ax ≤ c``; at the first misfit stop (``first_fail``) or skip it."""
    x = np.zeros(A.shape[1], dtype=np.int8)
    used = np.zeros_like(c)
    for e in order:
        if (used + A[:, e] <= c).all():
            x[e] = 1
            used += A[:, e]
        elif stop_rule == "first_fail":
            break
    return x


def check_stop_rule(stop_rule: str) -> None:
    check_choice("stop_rule", stop_rule, STOP_RULES)
