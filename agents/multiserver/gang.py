"""Agents of ``ClusterGang-v0``: ESDP-gang (spec §4.5, ours) and a random all-or-nothing floor.

The paper only says gang scheduling "can be solved by a similar approach to ESDP" [001:L435]. ESDP-gang keeps
ESDP's statistics, scaling and selection rule (21), and replaces the DP by a MILP with budget skipping: the
solution ``x`` of P4-gang(s) has ``Υ̂ᵀx = s' ≥ s`` and is optimal for every budget in ``[s, s']``, so the
next MILP starts at ``s' + 1``, until the budget is infeasible or exceeds ``ξm``. Exact but slow: small
instances only.
"""

from __future__ import annotations

import math

import numpy as np

from agents.multiserver.common import SemiBanditAgent
from agents.multiserver.esdp import ESDP
from cluster_envs.multiserver.gang import gang_milp, gang_repair
from cluster_envs.multiserver.gang_env import GangProblem


class ESDPGang(ESDP):
    """ESDP on the gang structure; literal (optimise over Φ, then idle ports get nothing) by default.

    ``arrival_aware=True`` restricts the MILPs to the arrived ports. ``last_solves`` counts the MILPs of the
    last slot.
    """

    problem_type = GangProblem
    name = "esdp_gang"

    def _max_cardinality(self) -> int:
        x = gang_milp(np.ones(self.problem.n_edges), self.problem, np.ones(self.problem.n_ports))
        return int(x.sum())

    def act(self, observation: dict) -> np.ndarray:
        mask = self.observe(observation)
        xi, g = self.schedule(self.t)
        s_max = xi * self.m
        upsilon, sigma2, _ = self.integer_weights(xi, g)
        ports = np.asarray(observation["arrivals"], float) if self.arrival_aware else np.ones(self.problem.n_ports)
        best_score, best_x, s, solves = -np.inf, np.zeros(self.problem.n_edges, np.int8), 0, 0
        while s <= s_max:
            x = gang_milp(sigma2, self.problem, ports, budget_weights=upsilon, budget=s)
            solves += 1
            if x is None:
                break
            top = min(int(upsilon @ x), s_max)
            score = top + math.sqrt(float(sigma2 @ x))
            if score >= best_score:  # ties: the largest budget
                best_score, best_x = score, x
            s = top + 1
        self.last_solves, self.last_s_max = solves, s_max
        return (best_x * mask).astype(np.int8)


class GangRandom(SemiBanditAgent):
    """Random floor: all usable arms requested in a random priority, then the env's own repair rule."""

    problem_type = GangProblem
    name = "random"

    def reset(self, problem, seed: int | None = None) -> None:
        super().reset(problem, seed)
        self.rng = np.random.default_rng(seed)

    def act(self, observation: dict) -> np.ndarray:
        usable = self.observe(observation)
        x, _, _ = gang_repair(usable, self.problem, usable, self.rng.permutation(self.problem.n_edges))
        return x
