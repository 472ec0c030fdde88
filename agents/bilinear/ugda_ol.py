"""UGDA-OL, the paper's baseline (based on Hsu, Xu, Lin, Bell, Oper. Res. 2022; ref. [12]).

RECONSTRUCTION (spec §4.5): paper 004 does not print UGDA-OL's rules, only that it learns mean rewards
independently per job without features and that its regret has a linear-in-T term. This is the spec's
reconstruction, not a verified re-implementation of [12]: per waiting job k and server class j, a UCB1
index r̃_kj = 1 if the job was never served by class j, else min(1, S_kj/h_kj + √(c ln max(h_k, 1)/h_kj)),
then problem (3) with one row per job and a_k = 1/V (SABR's objective with w = 1 written per job), the
same solver and the same even tie-break. It needs per-job feedback, so it runs with
``action_mode="job_allocation"``, whose observation carries the padded per-job counts and reward sums.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from agents.base import BaseAgent
from agents.bilinear.sabr import check_action_mode
from agents.bilinear.solver import solve_allocation
from cluster_envs.bilinear.model import BilinearProblem
from cluster_envs.common.config import check_number


class UGDAOL(BaseAgent):
    """Per-job UCB learning plus the proportional-fair allocation of (3) (spec §4.5 reconstruction)."""

    problem_type = BilinearProblem
    name: ClassVar[str] = "ugda_ol"
    # jobs beyond max_visible_jobs are invisible to a per-job agent; 128 exceeds every queue of the paper's setting
    env_kwargs: ClassVar[dict[str, Any]] = {"action_mode": "job_allocation", "max_visible_jobs": 128}

    def __init__(self, gamma_cost: float = 1.2, V: float | None = None, ucb_c: float = 2.0):
        check_number("gamma_cost", gamma_cost, low=1.0, low_open=True)
        if V is not None:
            check_number("V", V, low=0.0, low_open=True)
        check_number("ucb_c", ucb_c, low=0.0)
        self.gamma_cost, self.V, self.ucb_c = float(gamma_cost), V, float(ucb_c)

    def reset(self, problem: BilinearProblem, seed: int | None = None) -> None:
        check_action_mode(problem, "job_allocation", self.name)
        self.problem = problem
        self.v_param = float(np.sqrt(problem.n_job_classes * problem.horizon)) if self.V is None else float(self.V)

    def act(self, observation: np.ndarray) -> np.ndarray:
        parts = self.problem.split(observation)
        present = parts["job_class"] > 0
        h, sums = parts["job_counts"], parts["job_reward_sums"]
        total = np.maximum(h.sum(axis=1, keepdims=True), 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ucb = sums / h + np.sqrt(self.ucb_c * np.log(total) / h)
        rt = np.where(h > 0, np.minimum(ucb, 1.0), 1.0)
        a = np.where(present, 1.0 / self.v_param, 0.0)
        x = solve_allocation(rt, a, self.problem.caps, self.gamma_cost)
        return (x / self.problem.caps).ravel()
