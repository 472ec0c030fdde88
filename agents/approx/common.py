"""Pieces the approximation-job agents share: the UCB estimator, the job-row view, the budget check.

Agents read only the observation and ``problem`` (spec §2.4): n_obs/sum_obs for Eq. 12, the job rows
revealed on arrival, prices, their own last action.
"""

from __future__ import annotations

import math

import numpy as np

from cluster_envs.approx.kernel import occupants
from cluster_envs.approx.model import JOB_FIELDS, ApproxProblem
from cluster_envs.approx.projection import occupant_to_assignment
from cluster_envs.approx.simulator import budget_check
from cluster_envs.common.config import check_choice, check_number
from cluster_envs.common.numba_cache import cached_njit

COL = {name: i for i, name in enumerate(JOB_FIELDS)}


def ucb(n_obs: np.ndarray, sum_obs: np.ndarray, gamma: float) -> np.ndarray:
    """θ̂_i = min{1, θ̄_i + 2 rad(θ̄_i, n_i + 1)}, θ̄_i = s_i/(n_i + 1), rad(ν, P) = √(γν/P) + γ/P (12-14)."""
    count = n_obs + 1.0
    mean = sum_obs / count
    radius = np.sqrt(gamma * mean / count) + gamma / count
    return np.minimum(1.0, mean + 2.0 * radius)


def default_gamma(problem: ApproxProblem, delta: float) -> float:
    """γ = ln(MT/δ) (Theorem 2, L239), with T the known horizon (A23)."""
    return math.log(problem.n_machines * problem.horizon / delta)


def job_rows(observation: dict) -> np.ndarray:
    """The (K, F) job matrix of either env (the single-job env has one row)."""
    return observation["jobs"] if "jobs" in observation else observation["job"][None, :]


def encode(occupant: np.ndarray, problem: ApproxProblem) -> np.ndarray:
    """Occupants (M,) in 0..K as the env's action (single job: MultiBinary (M,); Sec. V-C mode: the (K, M)
    assignment, one job per machine)."""
    if problem.single_job:
        return (occupant == 1).astype(np.int8)
    if problem.generalized:
        return occupant_to_assignment(occupant, problem.max_visible_jobs).astype(np.int8)
    return occupant.astype(np.int64)


def encode_assignment(assign: np.ndarray, problem: ApproxProblem) -> np.ndarray:
    """A (K, M) bool assignment as the env's action (single job: (M,); Sec. V-C mode: (K, M) binary)."""
    if problem.single_job:
        return assign[0].astype(np.int8)
    if problem.generalized:
        return assign.astype(np.int8)
    return occupants(np.ascontiguousarray(assign, dtype=bool))


def affordable(assign: np.ndarray, rows: np.ndarray, prices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 1's budget check (lines 7-12) on a (K, M) proposal: (kept assignment, which slots' jobs exhaust)."""
    kept = budget_check(assign, prices, rows[:, COL["spent"]], rows[:, COL["budget"]])
    return kept, (assign & ~kept).any(axis=1)


@cached_njit
def _budget_check_occupants(occupant, prices, spent, budget, kept, exhausted) -> None:
    """:func:`affordable` on occupants: per job slot, machines by index, the same sequential sums."""
    cumulative = np.zeros(spent.size)
    for i in range(occupant.size):
        k = occupant[i] - 1
        if k >= 0:
            cumulative[k] += prices[i]
            if not spent[k] + cumulative[k] < budget[k]:
                kept[i] = 0
                exhausted[k] = True


def affordable_occupants(occupant: np.ndarray, rows: np.ndarray, prices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`affordable` for occupants (M,) in 0..K: (kept occupants, which slots' jobs exhaust)."""
    kept, exhausted = occupant.copy(), np.zeros(rows.shape[0], dtype=bool)
    _budget_check_occupants(occupant, prices, rows[:, COL["spent"]], rows[:, COL["budget"]], kept, exhausted)
    return kept, exhausted


def check_common(alpha_semantics: str, grad_estimate: str, s_mode: str, y_floor: float, delta: float) -> None:
    check_choice("alpha_semantics", alpha_semantics, ("step", "reg_weight"))
    check_choice("grad_estimate", grad_estimate, ("lagged", "fresh"))
    check_choice("s_mode", s_mode, ("estimated", "realized"))
    check_number("y_floor", y_floor, low=0.0, low_open=True)
    check_number("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
