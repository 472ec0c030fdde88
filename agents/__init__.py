"""Reference agents from the papers, their heuristics, and offline oracles."""

import cluster_envs  # noqa: F401  (first: the package-wide numba cache stamp, cluster_envs.common.numba_cache)
from agents.base import Agent, BaseAgent
from agents.registry import agent_class, agent_names, make_agent

__all__ = ["Agent", "BaseAgent", "agent_class", "agent_names", "make_agent"]
