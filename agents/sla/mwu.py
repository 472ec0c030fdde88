"""Algorithms 1 and 2 of paper 003: multiplicative weights with an SLA boost, KL-projected onto Δ_ε."""

from __future__ import annotations

import math
import warnings

import numpy as np

from agents.base import BaseAgent
from agents.sla.projection import kl_project
from cluster_envs.common.config import check_choice, check_number
from cluster_envs.sla.dynamics import SLAProblem


class MWU(BaseAgent):
    """Algorithm 1 [L180-198]: boost active users by e^η, those below their SLA by e^{η(1+λ)}, then project.

    Observation: [a_t, h_t, β̄] (the feedback of the step just played comes first). The agent keeps its own
    float64 allocation h_t and never reads it back from the float32 observation.

    Hyperparameters: ``eps`` ε ∈ (0, 0.1] (floor ε/N on every share), ``eta`` η ∈ (0, 1/3], ``initial``
    h_1 ("uniform" or "sla": π_Δε(β̄)), ``lambda_override`` (non-paper; default λ = ε²/(8N)).
    """

    name = "mwu"

    def __init__(
        self,
        eps: float = 0.02,
        eta: float = 1 / 3,
        initial: str = "uniform",
        lambda_override: float | None = None,
    ):
        check_number("eps", eps, low=0.0, high=0.1, low_open=True)
        check_number("eta", eta, low=0.0, high=1 / 3 + 1e-12, low_open=True)
        check_choice("initial", initial, ("uniform", "sla"))
        if lambda_override is not None:
            check_number("lambda_override", lambda_override, low=0.0)
        self.eps, self.eta, self.initial, self.lambda_override = eps, eta, initial, lambda_override

    def reset(self, problem: SLAProblem, seed: int | None = None) -> None:
        n = problem.n_users
        self.beta = problem.sla_array
        self.lam = self.eps**2 / (8 * n) if self.lambda_override is None else self.lambda_override
        if (self.beta < 2 * self.eps / n).any():
            warnings.warn(
                f"{self.name}: some SLA share is below 2ε/N = {2 * self.eps / n:.4g}; Theorem 1's SLA guarantee "
                "does not cover it (best effort)",
                stacklevel=2,
            )
        start = np.full(n, 1.0 / n) if self.initial == "uniform" else problem.static_share
        self.alloc = kl_project(start, self.eps)
        self.n = n

    def _below_sla(self, active: np.ndarray) -> np.ndarray:
        """A_t¹: active users whose share is below their SLA."""
        return active & (self.alloc < self.beta)

    def act(self, observation: np.ndarray) -> np.ndarray:
        active = np.asarray(observation[: self.n]) > 0.5
        gain = active.astype(np.float64)
        gain[self._below_sla(active)] += self.lam
        self.alloc = kl_project(self.alloc * np.exp(self.eta * gain), self.eps)
        return self.alloc.copy()


class ExtendedMWU(MWU):
    """Algorithm 2 [L323-332]: as Algorithm 1, but "below SLA" is relative to the active users' SLAs,
    h_t(i) < (1-ε) β(i) / Σ_{j active} β(j); valid under over-commitment (Σβ > 1)."""

    name = "mwu_extended"

    def _below_sla(self, active: np.ndarray) -> np.ndarray:
        total = float(self.beta[active].sum())
        if total <= 0.0:  # A12: no active user, or only zero-SLA users
            return np.zeros_like(active)
        return active & (self.alloc < (1.0 - self.eps) * self.beta / total)


def theorem3_bound(n_users: int, eps: float, eta: float) -> float:
    """8N/(ε²η)·ln(N/ε): Theorem 3/5's bound on OPT_{1-4ε}(t) - work(t)."""
    return 8 * n_users / (eps**2 * eta) * math.log(n_users / eps)
