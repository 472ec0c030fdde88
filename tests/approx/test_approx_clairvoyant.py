"""`known_rates`, the clairvoyant anchor of the ClusterApprox ids: OPM/OPS with θ̂ fixed to the hidden mean rates."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from agents.registry import agent_class, make_agent
from baselines.eval.harness import rollout


@pytest.mark.parametrize("env_id", ["ClusterApprox-v1", "ClusterApproxSingleJob-v0"])
def test_known_rates_reads_the_hidden_means_and_never_estimates(env_id):
    assert agent_class(env_id, "known_rates").privileged
    agent = make_agent(env_id, "known_rates")
    env = gym.make(env_id, horizon=40)
    obs, _ = env.reset(seed=2)
    agent.reset(env.unwrapped, seed=2)
    means = env.unwrapped._instance.means
    for _ in range(20):
        np.testing.assert_array_equal(agent.estimate(obs), means)
        obs, *_ = env.step(agent.act(obs))
    assert rollout(env_id, "known_rates", 0, env_kwargs={"horizon": 40}, record=()).metrics["steps"] == 40
