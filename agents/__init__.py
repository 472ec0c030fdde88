"""Reference agents from the papers, their heuristics, and offline oracles."""

from cluster_envs.common.numba_cache import register_package

register_package(__file__)  # first: our compiled functions' cache stamp covers cluster_envs and this package
from agents.base import Agent, BaseAgent  # noqa: E402
from agents.registry import agent_class, agent_names, make_agent  # noqa: E402

__all__ = ["Agent", "BaseAgent", "agent_class", "agent_names", "make_agent"]
