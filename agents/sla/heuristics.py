"""The online baselines of paper 003's experiments: Static, Proportional Online (PO) and OWM."""

from __future__ import annotations

import numpy as np

from agents.base import BaseAgent
from cluster_envs.common.config import check_choice
from cluster_envs.sla.dynamics import SLAProblem


class StaticSLA(BaseAgent):
    """h_t = β / max(1, Σβ) for every t [L381]; capacity beyond Σβ is left idle (hence ``sub_simplex``)."""

    name = "static"
    env_kwargs = {"action_mode": "sub_simplex"}

    def reset(self, problem: SLAProblem, seed: int | None = None) -> None:
        self.share = problem.static_share

    def act(self, observation: np.ndarray) -> np.ndarray:
        return self.share.copy()


class ProportionalOnline(BaseAgent):
    """Algorithm 4, corrected (A14): active users get β(i)/Σ_{j active}β(j), the others 0; β if none is active."""

    name = "proportional"

    def reset(self, problem: SLAProblem, seed: int | None = None) -> None:
        self.beta = problem.sla_array
        self.n = problem.n_users

    def act(self, observation: np.ndarray) -> np.ndarray:
        active = np.asarray(observation[: self.n]) > 0.5
        if not active.any():
            return self.beta.copy()
        weights = np.where(active, self.beta, 0.0)
        if weights.sum() <= 0.0:  # only zero-SLA users are active
            weights = active.astype(np.float64)
        return weights / weights.sum()


class OnlineWorkMaximizing(BaseAgent):
    """OWM (Appendix C): serve the users of category A uniformly until all of them empty, then admit B.

    Categories: A (active, served), B (active, waiting), I (inactive); all start in I with h_1 = 1/N.
    ``idle`` is the allocation when A is empty: "uniform" (default, A15) or "none" (h = 0).
    """

    name = "owm"

    def __init__(self, idle: str = "uniform"):
        check_choice("idle", idle, ("uniform", "none"))
        self.idle = idle

    @property
    def env_kwargs(self) -> dict:
        return {"action_mode": "sub_simplex"} if self.idle == "none" else {}

    def reset(self, problem: SLAProblem, seed: int | None = None) -> None:
        self.n = problem.n_users
        self.served = np.zeros(self.n, dtype=bool)  # category A
        self.waiting = np.zeros(self.n, dtype=bool)  # category B

    def act(self, observation: np.ndarray) -> np.ndarray:
        active = np.asarray(observation[: self.n]) > 0.5
        self.served &= active
        self.waiting = (self.waiting & active) | (active & ~self.served)
        if not self.served.any():
            self.served, self.waiting = self.waiting, np.zeros(self.n, dtype=bool)
        if self.served.any():
            return self.served / self.served.sum()
        return np.full(self.n, 1.0 / self.n if self.idle == "uniform" else 0.0)
