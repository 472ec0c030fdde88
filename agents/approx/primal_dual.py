"""OPS (Alg. 1, Sec. IV) and OPM (Sec. V) of paper 000: online primal-dual with UCB rates and sampling.

One engine serves both: with a single job, the projection P4 onto {z ≥ 0, Σ_j z_j ≤ 1} is the clip of
Eq. 19 and the categorical rounding is the Bernoulli draw of Eq. 21, so OPS is OPM with K = 1 and the
theory hyperparameters of Theorem 2. Per job slot the agent keeps x_j, λ_j, g_j(x(t−1)), g_j(x(t−2)) and
the estimated running work S_j (spec §4.1-4.2):

    λ_j ← max{0, λ_j + 2μ g_j(x(t−1)) − μ g_j(x(t−2))}                           (Eqs. 20/73)
    y_j ← x_j + α (f_j'(max(S_j/(t−1−a_j), y_floor)) θ̂ − λ_j p)                  (Eqs. 18/69)
    x ← P4(y) per machine;  S_j += θ̂·x_j;  x̃ ~ categorical(x);  budget check     (P4, Eqs. 21/72)
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from agents.approx.common import (
    COL,
    affordable,
    affordable_occupants,
    check_common,
    default_gamma,
    encode,
    encode_assignment,
    job_rows,
    ucb,
)
from agents.base import BaseAgent
from cluster_envs.approx.model import ApproxProblem, utility_derivative
from cluster_envs.approx.projection import categorical_round, coupled_round, project_columns
from cluster_envs.common.config import check_choice, check_number
from cluster_envs.common.numba_cache import cached_njit

ROUNDINGS = ("independent", "coupled")


@cached_njit
def primal_step(x, rows, slope, theta, lam, prices, step_size):
    """grad = f'(S/t) θ̂ − λ p and y = x + α grad (Eqs. 18/69) for the job slots ``rows`` only, in numpy's
    operation order: (len(rows), M) arrays, row r for slot rows[r]."""
    grad, y = np.empty((rows.size, x.shape[1])), np.empty((rows.size, x.shape[1]))
    for r in range(rows.size):
        k = rows[r]
        for i in range(x.shape[1]):
            grad[r, i] = slope[k] * theta[i] - lam[k] * prices[i]
            y[r, i] = x[k, i] + step_size * grad[r, i]
    return grad, y


class PrimalDualAgent(BaseAgent):
    """The shared engine; ``OPS``, ``OPM`` and ``OPMNoEstimation`` fix its defaults.

    ``alpha``/``mu``/``gamma`` = None take the theory values 1/(2√T), √T/M, ln(MT/δ).
    ``alpha_semantics="step"`` uses α as the primal step (Eq. 18); ``"reg_weight"`` uses 1/α (A2).
    ``eps`` is the budget slack ε (a number, or ``"theory"`` = 8/(ρ²T) clipped at 0.5, A8).
    ``rate_constant`` = None estimates rates with UCB; a number c replaces θ̂ by c everywhere (B1).
    ``rounding="independent"`` draws each slot's occupants afresh (Eq. 72 read literally); ``"coupled"`` keeps a
    machine's occupant with probability min(1, x_new/x_old) and redraws it from the grown categories otherwise
    (:func:`~cluster_envs.approx.projection.coupled_round`): the same E[x̃] = x, far fewer migrations.
    """

    problem_type = ApproxProblem
    name = "primal_dual"
    # one occupant per machine, job j with probability x_j^i (Eq. 72); a subclass with another rounding sets it
    # False and defines ``_round(x, rows)``: the (rows, M) assignment of the active slots' rows
    categorical = True

    def __init__(
        self,
        alpha: float | None = None,
        mu: float | None = None,
        gamma: float | None = None,
        eps: float | str = 0.0,
        delta: float = 0.05,
        alpha_semantics: str = "step",
        y_floor: float = 1e-3,
        grad_estimate: str = "lagged",
        s_mode: str = "estimated",
        rate_constant: float | str | None = None,
        rounding: str = "independent",
    ):
        check_common(alpha_semantics, grad_estimate, s_mode, y_floor, delta)
        check_choice("rounding", rounding, ROUNDINGS)
        for label, value in (("alpha", alpha), ("mu", mu), ("gamma", gamma)):
            if value is not None:
                check_number(label, value, low=0.0, low_open=True)
        if eps != "theory":
            check_number("eps", eps, low=0.0, high=1.0, high_open=True)
        if rate_constant not in (None, "prior"):
            check_number("rate_constant", rate_constant, low=0.0, high=1.0, low_open=True)
        self.alpha, self.mu, self.gamma, self.eps, self.delta = alpha, mu, gamma, eps, delta
        self.alpha_semantics, self.y_floor = alpha_semantics, y_floor
        self.grad_estimate, self.s_mode, self.rate_constant = grad_estimate, s_mode, rate_constant
        self.rounding = rounding

    def reset(self, problem: ApproxProblem, seed: int | None = None) -> None:
        self.problem = problem
        self.rng = np.random.default_rng(seed)
        m, k, horizon = problem.n_machines, problem.max_visible_jobs, problem.horizon
        self.prices = problem.price_array
        alpha = self.alpha if self.alpha is not None else 1.0 / (2.0 * math.sqrt(horizon))
        self.step_size = alpha if self.alpha_semantics == "step" else 1.0 / alpha
        self.dual_step = self.mu if self.mu is not None else math.sqrt(horizon) / m
        self.conf = self.gamma if self.gamma is not None else default_gamma(problem, self.delta)
        if self.rate_constant == "prior":
            self.constant = problem.rate_prior_mean
        else:
            self.constant = self.rate_constant
        self.x = np.zeros((k, m))
        self.held = np.zeros(0, dtype=np.int64)  # the job slots whose rows of x may be non-zero
        self.lam = np.zeros(k)
        self.g1 = np.zeros(k)
        self.g2 = np.zeros(k)
        self.est_work = np.zeros(k)
        self.slack = np.zeros(k)
        self.exhausted = np.zeros(k, dtype=bool)
        self.theta_prev = np.ones(m) if self.constant is None else np.full(m, self.constant)
        self.eps_used: float | None = None
        self.x_drawn = np.zeros((k, m))  # coupled rounding: the x of the last draw and its occupants (0 idle, k+1)
        self.drawn = np.zeros(m, dtype=np.int64)

    def _slack(self, rows: np.ndarray) -> float:
        """1 − ε for the job of a row (ε of Theorem 2 needs ρ = B/(MT) of that job)."""
        if self.eps != "theory":
            return 1.0 - float(self.eps)
        rho = rows[COL["budget"]] / (self.problem.n_machines * rows[COL["lifetime"]])
        eps = 8.0 / (rho**2 * rows[COL["lifetime"]])
        if eps > 0.5:
            warnings.warn(f"theory eps = 8/(rho^2 T) = {eps:.3g} > 0.5; clipped to 0.5 (spec A8)", stacklevel=3)
            eps = 0.5
        self.eps_used = eps
        return 1.0 - eps

    def estimate(self, observation: dict[str, Any]) -> np.ndarray:
        if self.constant is not None:
            return np.full(self.problem.n_machines, float(self.constant))
        return ucb(observation["n_obs"], observation["sum_obs"], self.conf)

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        rows = job_rows(observation)
        present = rows[:, COL["present"]] > 0
        for k in np.flatnonzero(present & (rows[:, COL["is_new"]] > 0)):
            self.slack[k] = self._slack(rows[k])
            self.x[k] = 0.0
            self.lam[k] = 0.0
            self.g1[k] = self.g2[k] = -self.slack[k] * rows[k, COL["budget_per_slot"]]
            self.est_work[k] = 0.0
            self.exhausted[k] = False
        active = present & ~self.exhausted
        theta = self.estimate(observation)
        self.lam = np.where(active, np.maximum(0.0, self.lam + self.dual_step * (2.0 * self.g1 - self.g2)), 0.0)
        elapsed = rows[:, COL["elapsed"]]
        work = self.est_work if self.s_mode == "estimated" else rows[:, COL["work"]]
        avg = np.where(elapsed > 0, np.maximum(work / np.maximum(elapsed, 1.0), self.y_floor), self.y_floor)
        slope = utility_derivative(self.problem.utility, rows[:, COL["value"]], self.problem.beta, avg)
        theta_grad = self.theta_prev if self.grad_estimate == "lagged" else theta
        # only the active slots' rows move; the others hold no machines (rows of x stay 0 once cleared)
        rows_active = np.flatnonzero(active)
        self.x[self.held[~active[self.held]]] = 0.0
        self.held = rows_active
        self.grad, y = primal_step(self.x, rows_active, slope, theta_grad, self.lam, self.prices, self.step_size)
        if rows_active.size:
            self.x[rows_active] = self._project(y, rows[rows_active])
        self.est_work += self.x @ theta  # over every row, as BLAS sums them (a row's order depends on its index)
        self.g2 = self.g1
        self.g1 = self.x @ self.prices - self.slack * rows[:, COL["budget_per_slot"]]
        self.theta_prev = theta
        if self.categorical:
            occupant = np.zeros(self.problem.n_machines, dtype=np.int64)
            if self.rounding == "coupled":  # every row (inactive rows of x are 0), chained to the last draw
                renewed = present & (rows[:, COL["is_new"]] > 0)
                occupant = coupled_round(self.x, self.x_drawn, self.drawn, renewed, self.rng)
                self.x_drawn, self.drawn = self.x.copy(), occupant
            elif rows_active.size:
                drawn = categorical_round(self.x[rows_active], self.rng)
                occupant = np.where(drawn > 0, rows_active[drawn - 1] + 1, 0)
            if self.problem.budget_mode == "hard":
                occupant, exhausted = affordable_occupants(occupant, rows, self.prices)
                self.exhausted |= exhausted
            return encode(occupant, self.problem)
        assign = np.zeros(self.x.shape, dtype=bool)
        if rows_active.size:
            assign[rows_active] = self._round(self.x[rows_active], rows[rows_active])
        if self.problem.budget_mode == "hard":
            assign, exhausted = affordable(assign, rows, self.prices)
            self.exhausted |= exhausted
        return encode_assignment(assign, self.problem)

    def _project(self, y: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """P4: each machine's column onto {z ≥ 0, Σ_j z_j ≤ 1}."""
        return project_columns(y)


class OPS(PrimalDualAgent):
    """OPS (Alg. 1) with Theorem 2's hyperparameters: α = 1/(2√T), μ = √T/M, γ = ln(MT/δ), ε = 8/(ρ²T)."""

    name = "ops"

    def __init__(self, eps: float | str = "theory", **kwargs: Any):
        super().__init__(eps=eps, **kwargs)


class OPM(PrimalDualAgent):
    """OPM (Sec. V) with the experiments' α = 6 read as a regularisation weight (step 1/6, A2) and ε = 0."""

    name = "opm"

    def __init__(self, alpha: float | None = 6.0, alpha_semantics: str = "reg_weight", **kwargs: Any):
        super().__init__(alpha=alpha, alpha_semantics=alpha_semantics, **kwargs)


class OPMNoEstimation(OPM):
    """OPM without machine estimation (L695): θ̂ ≡ c, by default the model's population mean rate (A12)."""

    name = "opm_no_estimation"

    def __init__(self, rate_constant: float | str = "prior", **kwargs: Any):
        super().__init__(rate_constant=rate_constant, **kwargs)
