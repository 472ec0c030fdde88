"""Reference agents from the papers, their heuristics, and offline oracles."""

from agents.base import Agent, BaseAgent
from agents.registry import agent_class, agent_names, make_agent

__all__ = ["Agent", "BaseAgent", "agent_class", "agent_names", "make_agent"]
