"""Test helper: roll one episode of an approximation env with an agent (no harness dependency)."""

from __future__ import annotations

import gymnasium as gym

import cluster_envs  # noqa: F401  (registers the ids)


def run_episode(env_id: str, agent, seed: int, **env_kwargs):
    """Return (unwrapped env at the end, episode_summary, list of per-step infos if asked via env_kwargs)."""
    env = gym.make(env_id, **env_kwargs).unwrapped
    obs, _ = env.reset(seed=seed)
    agent.reset(env.problem, seed=seed)
    while True:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        if terminated or truncated:
            return env, info["episode_summary"]
