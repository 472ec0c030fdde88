"""The online baselines of paper 003's experiments: Static, Proportional Online (PO) and OWM."""

from __future__ import annotations

import numpy as np

from agents.base import BaseAgent
from agents.sla.observation import active_users
from cluster_envs.common.config import check_choice
from cluster_envs.common.numba_cache import cached_njit
from cluster_envs.sla.model import SLAProblem
from cluster_envs.sla.runner import NO_HIDDEN_STATE


class _KernelAgent(BaseAgent):
    """An online agent whose decision rule is a compiled ``kernel(params, memory, active, queue, load)``."""

    problem_type = SLAProblem

    def act(self, observation: np.ndarray) -> np.ndarray:
        active = active_users(observation, self.params.size)
        return self.kernel(self.params, self.memory, active, NO_HIDDEN_STATE, NO_HIDDEN_STATE)


@cached_njit
def static_kernel(share, memory, active, queue, next_load):
    return share.copy()


class StaticSLA(_KernelAgent):
    """h_t = β / max(1, Σβ) for every t [L381]; capacity beyond Σβ is left idle (hence ``sub_simplex``)."""

    name = "static"
    env_kwargs = {"action_mode": "sub_simplex"}
    kernel = staticmethod(static_kernel)

    def reset(self, problem: SLAProblem, seed: int | None = None) -> None:
        self.params = problem.static_share
        self.memory = NO_HIDDEN_STATE


@cached_njit
def proportional_kernel(beta, memory, active, queue, next_load):
    """β(i)/Σ_{j active}β(j) for active users, 0 for the others; β if none is active (β/max β when a share
    exceeds 1, so that the action stays in the Box(0, 1): the same allocation under ``normalize``); uniform
    over the active users if they all have β = 0."""
    if active.sum() == 0:
        return beta / max(1.0, beta.max())
    weights = beta * active
    if weights.sum() <= 0.0:
        weights = active.copy()
    return weights / weights.sum()


class ProportionalOnline(_KernelAgent):
    """Algorithm 4, corrected (A14): active users get β(i)/Σ_{j active}β(j), the others 0; β if none is active
    (scaled by 1/max β if a share exceeds 1: the action space is Box(0, 1))."""

    name = "proportional"
    kernel = staticmethod(proportional_kernel)

    def reset(self, problem: SLAProblem, seed: int | None = None) -> None:
        self.params = problem.sla_array
        self.memory = NO_HIDDEN_STATE


@cached_njit
def owm_kernel(params, memory, active, queue, next_load):
    """``memory`` = [served (category A) flags, waiting (category B) flags]; ``params`` = [idle share] * N."""
    n = active.size
    served, waiting = memory[:n], memory[n:]
    for i in range(n):
        if active[i] < 0.5:  # A or B users that emptied go to I
            served[i] = 0.0
            waiting[i] = 0.0
        elif served[i] < 0.5:  # newly active users wait in B
            waiting[i] = 1.0
    if served.sum() == 0:  # A is empty: admit all of B
        served[:] = waiting
        waiting[:] = 0.0
    count = served.sum()
    return served / count if count > 0 else params.copy()


class OnlineWorkMaximizing(_KernelAgent):
    """OWM (Appendix C): serve the users of category A uniformly until all of them empty, then admit B.

    Categories: A (active, served), B (active, waiting), I (inactive); all start in I with h_1 = 1/N.
    ``idle`` is the allocation when A is empty: "uniform" (default, A15) or "none" (h = 0).
    """

    name = "owm"
    kernel = staticmethod(owm_kernel)

    def __init__(self, idle: str = "uniform"):
        check_choice("idle", idle, ("uniform", "none"))
        self.idle = idle

    @property
    def env_kwargs(self) -> dict:
        return {"action_mode": "sub_simplex"} if self.idle == "none" else {}

    def reset(self, problem: SLAProblem, seed: int | None = None) -> None:
        n = problem.n_users
        self.params = np.full(n, 1.0 / n if self.idle == "uniform" else 0.0)
        self.memory = np.zeros(2 * n)
