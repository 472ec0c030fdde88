"""The RL-side wrappers of baselines/rl/wrappers.py: what they compute from the observation, and that they leave the
env's dynamics alone."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from baselines.rl.wrappers import BanditStatsObservation, SlotMaskAction

SMALL = {"horizon": 60}


def test_the_slot_mask_allows_idle_and_the_occupied_slots():
    env = SlotMaskAction(gym.make("ClusterApprox-v1", **SMALL))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(env.action_space.sample())
    k, m = obs["jobs"].shape[0], env.action_space.shape[0]
    mask = env.action_masks().reshape(m, k + 1)
    assert mask[:, 0].all()
    for row in mask:
        np.testing.assert_array_equal(row[1:], obs["jobs"][:, 0] > 0)


@pytest.mark.parametrize("env_id", ["ClusterApprox-v1", "ClusterApproxSingleJob-v0"])
def test_bandit_stats_are_the_empirical_means_and_widths(env_id):
    env = BanditStatsObservation(gym.make(env_id, **SMALL))
    raw = env.env
    raw_obs, _ = raw.reset(seed=2)
    for _ in range(SMALL["horizon"] - 1):  # until some machine has run a task
        raw_obs, *_ = raw.step(raw.action_space.sample())
        if raw_obs["n_obs"].any():
            break
    flat = env.observation(raw_obs)
    assert env.observation_space.contains(flat)
    m = raw_obs["n_obs"].size
    mean, width = flat[-2 * m : -m], flat[-m:]
    n = raw_obs["n_obs"]
    seen = n > 0
    assert seen.any()
    np.testing.assert_allclose(mean[seen], raw_obs["sum_obs"][seen] / n[seen])
    np.testing.assert_array_equal(mean[~seen], 0.0)
    np.testing.assert_allclose(width, 1 / np.sqrt(1 + n))
    np.testing.assert_array_equal(flat[: -2 * m], gym.spaces.flatten(raw.observation_space, raw_obs))


def test_the_wrappers_refuse_an_env_they_do_not_fit():
    with pytest.raises(ValueError, match="n_obs and sum_obs"):
        BanditStatsObservation(gym.make("ClusterSLA-v1"))
    with pytest.raises(ValueError, match="ClusterApprox-v1"):
        SlotMaskAction(gym.make("ClusterApproxSingleJob-v0", **SMALL))


def test_the_slot_mask_is_computed_from_the_problem_and_the_observation_alone():
    """What a masked policy acting outside the wrapper gets (``SlotMaskAction.action_mask_from``) is the wrapper's
    ``action_masks()`` at every step: the information rule for the evaluation of a masked variant."""
    env = SlotMaskAction(gym.make("ClusterApprox-v1", **SMALL))
    obs, _ = env.reset(seed=3)
    for _ in range(20):
        np.testing.assert_array_equal(SlotMaskAction.action_mask_from(env.unwrapped.problem, obs), env.action_masks())
        obs, *_ = env.step(env.action_space.sample())
