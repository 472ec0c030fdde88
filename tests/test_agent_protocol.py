"""Every registered agent of every id reports a protocol mistake as an error saying what to call
(``agents/base.py``): ``act()`` before ``reset()``, the env where the problem is due or the reverse, and another
setting's problem."""

from __future__ import annotations

import functools

import gymnasium as gym
import pytest

import cluster_envs
from agents import agent_names, make_agent

CASES = [(env_id, name) for env_id in cluster_envs.env_ids() for name in agent_names(env_id)]


def setting(env_id: str) -> str:
    return gym.spec(env_id).entry_point.split(".")[1]  # cluster_envs.<setting>.<module>:<class>


@functools.cache
def _unwrapped(env_id: str, kwargs: tuple) -> gym.Env:
    env = gym.make(env_id, **dict(kwargs)).unwrapped
    env.reset(seed=0)
    return env


def unwrapped(env_id: str, env_kwargs: dict | None = None) -> gym.Env:
    """The unwrapped env of ``env_id`` with an agent's ``env_kwargs``, reset with seed 0 (made once)."""
    return _unwrapped(env_id, tuple(sorted((env_kwargs or {}).items())))


def other_setting(env_id: str) -> str:
    return next(other for other in cluster_envs.env_ids() if setting(other) != setting(env_id))


@pytest.mark.parametrize(("env_id", "name"), CASES, ids=[f"{e}-{n}" for e, n in CASES])
def test_protocol_mistakes_say_what_to_call(env_id, name):
    agent = make_agent(env_id, name)
    env = unwrapped(env_id, agent.env_kwargs)
    with pytest.raises(RuntimeError, match=r"act\(\) before reset\(\): call agent\.reset\("):
        agent.act(env.observation_space.sample())
    right, wrong = (env, env.problem) if agent.privileged else (env.problem, env)
    with pytest.raises(ValueError, match="privileged" if agent.privileged else r"env\.unwrapped\.problem"):
        agent.reset(wrong, seed=0)
    other = unwrapped(other_setting(env_id))
    with pytest.raises(ValueError, match=f"got a {type(other.problem).__name__}.*another setting"):
        agent.reset(other if agent.privileged else other.problem, seed=0)
    with pytest.raises(RuntimeError, match="before reset"):  # a refused reset leaves the agent unusable
        agent.act(env.observation_space.sample())
    agent.reset(right, seed=0)
    obs, _ = env.reset(seed=0)
    agent.act(obs)  # the checks let the right calls through
