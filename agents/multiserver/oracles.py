"""The omniscient oracle of (6)–(7): knows ``ṽ`` (not ``Z``) and solves each slot's knapsack exactly."""

from __future__ import annotations

import numpy as np

from agents.base import BaseAgent
from cluster_envs.multiserver.gang_env import GangProblem
from cluster_envs.multiserver.model import MultiServerProblem


class KnapsackOracleAgent(BaseAgent):
    """Privileged: plays the env's oracle ``x*(t) = argmax_{x ∈ Ω(t)} ṽᵀx`` (its regret is 0)."""

    problem_type = (MultiServerProblem, GangProblem)
    name = "oracle"
    privileged = True
    env_kwargs = {"invalid_action": "raise"}

    def reset(self, env, seed: int | None = None) -> None:
        self.oracle = env.oracle

    def act(self, observation: dict) -> np.ndarray:
        x, _ = self.oracle(np.asarray(observation["arrivals"]))
        return x
