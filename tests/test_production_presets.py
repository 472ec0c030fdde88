"""The production-scale presets (``PRODUCTION_PRESETS`` of each config module: an order of magnitude past the
papers) build with the documented sizes, reset and take steps inside their spaces. Their speed is measured by
``cluster-envs bench --scaling-only``, not here."""

from __future__ import annotations

import gymnasium as gym
import pytest

import cluster_envs  # noqa: F401

SIZES = {  # id -> (what, how many): the sizes the env pages document
    "ClusterSLA-v1": (lambda env: env.config.n_users, 128),
    "ClusterBilinear-v0": (lambda env: env.config.num_job_classes, 40),
    "ClusterMultiServer-v0": (lambda env: env.instance.n_servers, 1523),
    "ClusterGang-v0": (lambda env: env.instance.n_servers, 1523),
    "ClusterApprox-v1": (lambda env: env.config.n_machines, 10_000),
}
SLOW = {"ClusterApprox-v1"}  # drawing ten times the paper preset's jobs takes seconds


@pytest.mark.parametrize("env_id", [pytest.param(i, marks=pytest.mark.slow) if i in SLOW else i for i in SIZES])
def test_production_preset_builds_resets_and_steps(env_id):
    env = gym.make(env_id, preset="production")
    size, expected = SIZES[env_id]
    assert size(env.unwrapped) == expected
    observation, _ = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    env.action_space.seed(0)
    for _ in range(3):
        observation, reward, *_ = env.step(env.action_space.sample())
        assert env.observation_space.contains(observation)


def test_the_multiserver_production_preset_is_past_the_paper_by_an_order_of_magnitude():
    edges = len(gym.make("ClusterMultiServer-v0", preset="production").unwrapped.instance.edges)
    assert edges >= 10 * 32  # the paper's instance: |E| = 32
