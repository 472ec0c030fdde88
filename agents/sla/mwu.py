"""Algorithms 1 and 2 of paper 003: multiplicative weights with an SLA boost, KL-projected onto Δ_ε."""

from __future__ import annotations

import math
import warnings

import numpy as np

from agents.base import BaseAgent
from agents.sla.observation import active_users
from agents.sla.projection import kl_project
from cluster_envs.common.config import check_choice, check_number
from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.sla.model import SLAProblem
from cluster_envs.sla.runner import NO_HIDDEN_STATE


@cached_njit
def mwu_kernel(params: np.ndarray, alloc: np.ndarray, active: np.ndarray, queue: np.ndarray, next_load: np.ndarray):
    """One update h_t → h_{t+1} from the feedback a_t; ``params`` = [ε, η, λ, extended?, β_1..β_N].

    Gains: 0 inactive, 1 active, 1 + λ active and below SLA, where "below SLA" is h(i) < β(i) (Algorithm 1)
    or h(i) < (1-ε) β(i) / Σ_{j active} β(j) (Algorithm 2; nobody if that sum is 0, A12).
    """
    eps, eta, lam, extended = params[0], params[1], params[2], params[3] > 0.5
    beta = params[4:]
    active_sla = 0.0
    for i in range(alloc.size):
        active_sla += beta[i] * active[i]
    boosted = np.empty(alloc.size)
    for i in range(alloc.size):
        gain = active[i]
        if active[i] > 0.5:
            threshold = beta[i] if not extended else ((1.0 - eps) * beta[i] / active_sla if active_sla > 0 else 0.0)
            if alloc[i] < threshold:
                gain += lam
        boosted[i] = alloc[i] * math.exp(eta * gain)
    alloc[:] = kl_project(boosted, eps)
    return alloc.copy()


class MWU(BaseAgent):
    """Algorithm 1 [L180-198]: boost active users by e^η, those below their SLA by e^{η(1+λ)}, then project.

    Observation: [a_t, h_t, β̄] (the feedback of the step just played comes first). The agent keeps its own
    float64 allocation h_t and never reads it back from the float32 observation.

    Hyperparameters: ``eps`` ε ∈ (0, 0.1] (floor ε/N on every share), ``eta`` η ∈ (0, 1/3], ``initial``
    h_1 ("uniform" or "sla": π_Δε(β̄)), ``lambda_override`` (non-paper; default λ = ε²/(8N)).
    """

    problem_type = SLAProblem
    name = "mwu"
    kernel = staticmethod(mwu_kernel)
    extended = False

    def __init__(
        self, eps: float = 0.02, eta: float = 1 / 3, initial: str = "uniform", lambda_override: float | None = None
    ):
        check_number("eps", eps, low=0.0, high=0.1, low_open=True)
        check_number("eta", eta, low=0.0, high=1 / 3 + 1e-12, low_open=True)
        check_choice("initial", initial, ("uniform", "sla"))
        if lambda_override is not None:
            check_number("lambda_override", lambda_override, low=0.0)
        self.eps, self.eta, self.initial, self.lambda_override = eps, eta, initial, lambda_override

    def reset(self, problem: SLAProblem, seed: int | None = None) -> None:
        n = problem.n_users
        beta = problem.sla_array
        lam = self.eps**2 / (8 * n) if self.lambda_override is None else self.lambda_override
        if (beta < 2 * self.eps / n).any():
            warnings.warn(
                f"{self.name}: some SLA share is below 2ε/N = {2 * self.eps / n:.4g}; Theorem 1's SLA guarantee "
                "does not cover it (best effort)",
                stacklevel=2,
            )
        self.params = np.concatenate([[self.eps, self.eta, lam, float(self.extended)], beta])
        start = np.full(n, 1.0 / n) if self.initial == "uniform" else problem.static_share
        self.memory = kl_project(start, self.eps)  # h_1

    @property
    def alloc(self) -> np.ndarray:
        """The allocation the agent last played (float64)."""
        return self.memory

    def act(self, observation: np.ndarray) -> np.ndarray:
        active = active_users(observation, self.memory.size)
        return mwu_kernel(self.params, self.memory, active, NO_HIDDEN_STATE, NO_HIDDEN_STATE)


class ExtendedMWU(MWU):
    """Algorithm 2 [L323-332]: as Algorithm 1, but "below SLA" is relative to the active users' SLAs,
    h_t(i) < (1-ε) β(i) / Σ_{j active} β(j); valid under over-commitment (Σβ > 1)."""

    name = "mwu_extended"
    extended = True
