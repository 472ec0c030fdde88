"""The benchmark's anchors of ClusterBilinear-v0 (not in the paper): a random matching (naive, score 0) and a
clairvoyant matching that knows the mean rewards r (Θ-bilinear) and serves every job (score 1).

Both submit integer assignments (``action_mode="server_choice"``, one job per server), so the allocation y
that eq. 1's pseudo-regret charges is exactly the service executed. The clairvoyant one is privileged (reads
``env.true_mean_rewards``) and never learns: each slot it assigns the waiting jobs to the servers by a
maximum-weight matching on r (``scipy.optimize.linear_sum_assignment``), at most one job per server, so no job
waits while a server with a positive mean reward for it is idle and no queue is held back (SABR's V term,
Thm III.1).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.optimize import linear_sum_assignment

from agents.base import BaseAgent
from agents.bilinear.sabr import check_action_mode
from cluster_envs.bilinear.model import BilinearProblem


class RandomMatching(BaseAgent):
    """Reward-agnostic and work-conserving: each waiting job (up to the number of servers), in random order,
    takes a distinct uniformly random server."""

    name: ClassVar[str] = "random"
    env_kwargs: ClassVar[dict[str, Any]] = {"action_mode": "server_choice"}
    problem_type = BilinearProblem

    def reset(self, problem: BilinearProblem, seed: int | None = None) -> None:
        check_action_mode(problem, "server_choice", self.name)
        self.problem = problem
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray) -> np.ndarray:
        n_servers, idle = self.problem.n_servers, self.problem.n_job_classes
        jobs = np.repeat(np.arange(idle), self.problem.split(observation)["queues"].astype(np.int64))
        jobs = self.rng.permutation(jobs)[:n_servers]
        choice = np.full(n_servers, idle)
        choice[self.rng.permutation(n_servers)[: jobs.size]] = jobs
        return choice


class ClairvoyantMatching(BaseAgent):
    """Privileged: each slot, a maximum-weight matching of waiting jobs to servers on the true r_ij."""

    name: ClassVar[str] = "clairvoyant"
    privileged: ClassVar[bool] = True
    env_kwargs: ClassVar[dict[str, Any]] = {"action_mode": "server_choice"}
    problem_type = BilinearProblem

    def reset(self, env: Any, seed: int | None = None) -> None:
        problem = env.problem
        check_action_mode(problem, "server_choice", self.name)
        self.problem = problem
        self.r = np.asarray(env.true_mean_rewards, dtype=np.float64)
        self.server_class = np.repeat(np.arange(problem.n_server_classes), problem.servers_per_class)

    def act(self, observation: np.ndarray) -> np.ndarray:
        n_servers, idle = self.problem.n_servers, self.problem.n_job_classes
        queues = self.problem.split(observation)["queues"].astype(np.int64)
        # one column per waiting job (a class never needs more columns than there are servers)
        job_class = np.repeat(np.arange(idle), np.minimum(queues, n_servers))
        choice = np.full(n_servers, idle)
        if job_class.size:
            weight = self.r[job_class][:, self.server_class].T  # (servers, jobs)
            rows, cols = linear_sum_assignment(np.maximum(weight, 0.0), maximize=True)
            useful = weight[rows, cols] > 0
            choice[rows[useful]] = job_class[cols[useful]]
        return choice
