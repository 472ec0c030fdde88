"""The paper's baseline schedulers (Fair, Deadline-aware, L696-697) and two harness baselines (ours).

Fair and Deadline-aware follow spec §4.4: sticky machine choice (a job keeps the lowest-index free machine
it ran on in the last slot, else takes the lowest-index free machine), strict affordability
C_j + spent + p_i < B_j, and a job that cannot afford its next machine is exhausted for good. Neither looks
at rates. ``greedy_ucb`` and ``random`` are ours (spec §4.5), and so is ``random_paced``, the control of the RL
row's action reading.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.approx.common import COL, affordable, default_gamma, encode, encode_assignment, job_rows, ucb
from agents.base import BaseAgent
from cluster_envs.approx.actions import paced_occupants
from cluster_envs.approx.model import ApproxProblem, utility_derivative
from cluster_envs.approx.projection import occupant_to_assignment
from cluster_envs.common.config import check_number
from cluster_envs.common.numba_cache import cached_njit


@cached_njit
def fair_occupants(order, last, prices, spent, budget, exhausted):
    """Fair's round-robin (spec §4.4) as occupants (M,) in 0..K; marks ``exhausted`` the jobs that cannot pay.

    Turns go through ``order`` (slot indices) while machines are free: a job takes the lowest-index free machine
    it ran on last slot (``last``: occupants of the last slot), else the lowest-index free machine, if
    spent + Σ prices + p_i < B (sequential float sums, as the Python loop it replaced); a job that cannot pay
    leaves the rotation.
    """
    m, n_slots = last.size, spent.size
    first = np.zeros(n_slots + 2, dtype=np.int64)  # occupant v's machines: sticky[first[v]:first[v + 1]]
    for i in range(m):
        first[last[i] + 1] += 1
    for v in range(n_slots + 1):
        first[v + 1] += first[v]
    sticky = np.empty(m, dtype=np.int64)
    fill = first.copy()
    for i in range(m):
        sticky[fill[last[i]]] = i
        fill[last[i]] += 1
    head, end = first[1:-1].copy(), first[2:]  # job k's next sticky machine and the end of its list
    spend = spent.copy()
    free = np.ones(m, dtype=np.bool_)
    occupant = np.zeros(m, dtype=np.int64)
    queue = order.copy()
    n_queue, lowest = queue.size, 0
    while n_queue > 0 and lowest < m:
        n_next = 0
        for q in range(n_queue):
            k = queue[q]
            while head[k] < end[k] and not free[sticky[head[k]]]:
                head[k] += 1
            while lowest < m and not free[lowest]:
                lowest += 1
            if lowest >= m:
                break
            if head[k] < end[k]:
                i = sticky[head[k]]
                head[k] += 1
            else:
                i = lowest
            if spend[k] + prices[i] < budget[k]:
                spend[k] += prices[i]
                free[i] = False
                occupant[i] = k + 1
                queue[n_next] = k
                n_next += 1
            else:
                exhausted[k] = True
        n_queue = n_next
    return occupant


@cached_njit
def deadline_occupants(order, last, prices, spent, budget, exhausted):
    """Deadline-aware (spec §4.4) as occupants (M,): in ``order``, a job takes its last machines, then the other
    free ones by index, while spent + (cumulative sum of their prices) < B; one it cannot pay exhausts it."""
    m = last.size
    free = np.ones(m, dtype=np.bool_)
    occupant = np.zeros(m, dtype=np.int64)
    candidates = np.empty(m, dtype=np.int64)
    for k in order:
        n = 0
        for mine in (True, False):
            for i in range(m):
                if free[i] and (last[i] == k + 1) == mine:
                    candidates[n] = i
                    n += 1
        if n == 0:
            break
        cumulative, taken = 0.0, 0
        for c in range(n):
            cumulative += prices[candidates[c]]
            if spent[k] + cumulative < budget[k]:
                occupant[candidates[c]] = k + 1
                free[candidates[c]] = False
                taken += 1
        if taken < n:
            exhausted[k] = True
    return occupant


class _Scheduler(BaseAgent):
    """Common state: problem, RNG, per-slot exhaustion memory (cleared when a new job takes the slot)."""

    problem_type = ApproxProblem

    def reset(self, problem: ApproxProblem, seed: int | None = None) -> None:
        self.problem = problem
        self.rng = np.random.default_rng(seed)
        self.prices = problem.price_array
        self.exhausted = np.zeros(problem.max_visible_jobs, dtype=bool)

    def _active(self, rows: np.ndarray) -> np.ndarray:
        present = rows[:, COL["present"]] > 0
        self.exhausted[rows[:, COL["is_new"]] > 0] = False
        self.exhausted[~present] = False
        return present & ~self.exhausted

    def _last_occupant(self, observation: dict[str, Any]) -> np.ndarray:
        if "last_occupant" in observation:
            return observation["last_occupant"]
        if "last_assignment" in observation:  # Sec. V-C mode: a machine's first job counts
            assignment = np.asarray(observation["last_assignment"], dtype=bool)
            return np.where(assignment.any(axis=0), assignment.argmax(axis=0) + 1, 0)
        return observation["last_mask"].astype(np.int64)  # single job: slot 1 where it ran


class Fair(_Scheduler):
    """Fair scheduler (L696): round-robin over active jobs by (arrival, slot), one machine per turn."""

    name = "fair"

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        rows = job_rows(observation)
        active = np.flatnonzero(self._active(rows))
        order = active[np.lexsort((active, -rows[active, COL["elapsed"]]))]  # earliest arrival first, then slot
        occupant = fair_occupants(order, self._last_occupant(observation).astype(np.int64), self.prices,
                                  rows[:, COL["spent"]], rows[:, COL["budget"]], self.exhausted)  # fmt: skip
        return encode(occupant, self.problem)


class DeadlineAware(_Scheduler):
    """Deadline-aware (L697): earliest deadline first, each job takes every free machine it can pay for."""

    name = "deadline_aware"

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        rows = job_rows(observation)
        active = np.flatnonzero(self._active(rows))
        order = active[np.lexsort((active, -rows[active, COL["elapsed"]], rows[active, COL["remaining_slots"]]))]
        occupant = deadline_occupants(order, self._last_occupant(observation).astype(np.int64), self.prices,
                                      rows[:, COL["spent"]], rows[:, COL["budget"]], self.exhausted)  # fmt: skip
        return encode(occupant, self.problem)


class GreedyUCB(_Scheduler):
    """Ours: jobs by marginal utility f_j'(W_j/elapsed), machines by θ̂_i/p_i, within a paced per-slot budget.

    The job with the largest f_j' takes the best machines (by UCB rate per price) while its spend in the slot
    stays below (B_j − C_j)/(remaining slots), then the next job (unpaced greed spends budgets at once).
    """

    name = "greedy_ucb"

    def __init__(self, delta: float = 0.05, y_floor: float = 1e-3):
        check_number("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        check_number("y_floor", y_floor, low=0.0, low_open=True)
        self.delta, self.y_floor = delta, y_floor

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        rows = job_rows(observation)
        active = self._active(rows)
        theta = ucb(observation["n_obs"], observation["sum_obs"], default_gamma(self.problem, self.delta))
        machines = np.argsort(-theta / self.prices, kind="stable")
        elapsed = np.maximum(rows[:, COL["elapsed"]], 1.0)
        avg = np.maximum(rows[:, COL["work"]] / elapsed, self.y_floor)
        slope = utility_derivative(self.problem.utility, rows[:, COL["value"]], self.problem.beta, avg)
        occupant = np.zeros(self.problem.n_machines, dtype=np.int64)
        free = np.ones(self.problem.n_machines, dtype=bool)
        for k in sorted(np.flatnonzero(active), key=lambda k: (-slope[k], k)):
            left = rows[k, COL["remaining_budget"]]
            pace = left / max(rows[k, COL["remaining_slots"]], 1.0)
            candidates = machines[free[machines]]
            cost = np.cumsum(self.prices[candidates])
            take = candidates[(cost <= pace) & (cost < left)]
            occupant[take] = k + 1
            free[take] = False
        kept, _ = affordable(occupant_to_assignment(occupant, rows.shape[0]), rows, self.prices)
        return encode_assignment(kept, self.problem)


class RandomScheduler(_Scheduler):
    """Ours: each machine goes uniformly to idle or one of the present jobs (a valid random assignment)."""

    name = "random"

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        rows = job_rows(observation)
        choices = np.concatenate([[0], np.flatnonzero(rows[:, COL["present"]] > 0) + 1])
        occupant = choices[self.rng.integers(0, choices.size, size=self.problem.n_machines)]
        return encode(occupant, self.problem)


class RandomPacedScheduler(_Scheduler):
    """Ours: the control of ClusterApprox-v1's RL row. Uniformly random priorities in [-1, 1] per job slot and per
    machine, redrawn each slot, read as PPO's action is read (``action_mode="paced_priority"``: ``greedy_ucb``'s
    pacing, the slots and machines in priority order). It learns nothing, so PPO's score above it is what PPO
    learned and its score above the other agents' is the reading's."""

    name = "random_paced"

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        rows = job_rows(observation)
        slots = self.rng.uniform(-1.0, 1.0, (1, rows.shape[0]))
        machines = self.rng.uniform(-1.0, 1.0, (1, self.problem.n_machines))
        occupant = paced_occupants(slots, machines, np.asarray(observation["price"])[None], rows[None])[0]
        return encode(occupant, self.problem)
