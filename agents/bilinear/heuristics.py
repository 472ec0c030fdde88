"""Baselines that are not in the paper (spec §4.5): a work-conserving greedy LinUCB matcher and uniform PF."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from agents.base import BaseAgent
from agents.bilinear.estimator import RidgeUCB
from agents.bilinear.sabr import check_action_mode
from cluster_envs.bilinear.model import BilinearProblem
from cluster_envs.common.config import check_number


class Uniform(BaseAgent):
    """Work-conserving and reward-agnostic: y_ij = n_j Q_i / Σ_i' Q_i' (fractions Q_i/ΣQ)."""

    problem_type = BilinearProblem
    name: ClassVar[str] = "uniform"
    env_kwargs: ClassVar[dict[str, Any]] = {"action_mode": "allocation"}

    def reset(self, problem: BilinearProblem, seed: int | None = None) -> None:
        check_action_mode(problem, "allocation", self.name)
        self.problem = problem

    def act(self, observation: np.ndarray) -> np.ndarray:
        q = self.problem.split(observation)["queues"]
        share = q / q.sum() if q.sum() > 0 else q
        return np.repeat(share, self.problem.n_server_classes)


class GreedyLinUCB(BaseAgent):
    """Myopic matching on Alg. 1's indices: servers in random order each take the class with the largest r̃_ij
    among classes with unassigned jobs (at most Q_i servers per class), else idle. Submitted via
    ``action_mode="server_choice"``; ``beta_scale`` and ``noise_std`` as in SABR.
    """

    problem_type = BilinearProblem
    name: ClassVar[str] = "greedy"
    env_kwargs: ClassVar[dict[str, Any]] = {"action_mode": "server_choice"}

    def __init__(self, beta_scale: float = 1.0, noise_std: float | None = None):
        check_number("beta_scale", beta_scale, low=0.0)
        if noise_std is not None:
            check_number("noise_std", noise_std, low=0.0)
        self.beta_scale, self.noise_std = float(beta_scale), noise_std

    def reset(self, problem: BilinearProblem, seed: int | None = None) -> None:
        check_action_mode(problem, "server_choice", self.name)
        self.problem = problem
        self.estimator = RidgeUCB(problem.pair_features, problem.n_servers, problem.horizon, self.beta_scale,
                                  problem.noise_std if self.noise_std is None else self.noise_std)  # fmt: skip
        self.server_class = np.repeat(np.arange(problem.n_server_classes), problem.servers_per_class)
        self.rng = np.random.default_rng(seed)
        self.t = 0

    def act(self, observation: np.ndarray) -> np.ndarray:
        parts = self.problem.split(observation)
        self.estimator.update(parts["counts"], parts["reward_sums"])
        self.t += 1
        rt = self.estimator.indices(self.t)
        left = parts["queues"].astype(np.int64)
        idle = self.problem.n_job_classes
        choice = np.full(self.problem.n_servers, idle)
        for s in self.rng.permutation(self.problem.n_servers):
            if left.sum() == 0:
                break
            scores = np.where(left > 0, rt[:, self.server_class[s]], -np.inf)
            best = int(np.argmax(scores))
            choice[s], left[best] = best, left[best] - 1
        return choice
