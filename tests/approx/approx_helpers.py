"""Test helpers: roll one episode of an approximation env with an agent (no harness dependency)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

import cluster_envs  # noqa: F401  (registers the ids)


def run_episode(env_id: str, agent, seed: int, on_step=None, **env_kwargs):
    """Return (unwrapped env at the end, episode_summary); ``on_step(env, agent, obs)`` runs per act."""
    env = gym.make(env_id, **env_kwargs).unwrapped
    obs, _ = env.reset(seed=seed)
    agent.reset(env if agent.privileged else env.problem, seed=seed)
    while True:
        action = agent.act(obs)
        if on_step is not None:
            on_step(env, agent, obs)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return env, info["episode_summary"]


def loglog_slope(horizons, values) -> float:
    return float(np.polyfit(np.log(horizons), np.log(values), 1)[0])


def sqrt_scale(n_machines: int, horizon: int, delta: float = 0.05) -> float:
    return math.sqrt(horizon * math.log(n_machines * horizon / delta))
