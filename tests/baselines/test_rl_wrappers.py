"""The RL-side wrappers of baselines/wrappers.py: what they compute from the observation, and that they leave the
env's dynamics alone."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import cluster_envs  # noqa: F401
from baselines.wrappers import BanditStatsObservation, SlotMaskAction, WorkConservingAction, work_conserving

SMALL = {"horizon": 60}


def test_work_conserving_moves_empty_slot_choices_to_the_next_occupied_slot():
    present = np.array([False, True, False, True])  # slots 2 and 4 hold jobs
    action = np.array([0, 1, 2, 3, 4])
    np.testing.assert_array_equal(work_conserving(present, action), [0, 2, 2, 4, 4])
    wrap = np.array([False, True, False, False])  # only slot 2: every non-idle choice goes there, cyclically
    np.testing.assert_array_equal(work_conserving(wrap, np.array([3, 4, 1, 0])), [2, 2, 2, 0])
    np.testing.assert_array_equal(work_conserving(np.zeros(4, dtype=bool), action), np.zeros(5))


def test_a_work_conserving_policy_never_sends_a_machine_to_an_empty_slot():
    env = WorkConservingAction(gym.make("ClusterApprox-v0", **SMALL))
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    sent = 0
    for _ in range(SMALL["horizon"]):
        action = rng.integers(1, env.action_space.nvec, size=env.action_space.shape)  # never idle
        sent += int(np.any(obs["jobs"][:, 0] > 0)) * action.size
        np.testing.assert_array_equal(WorkConservingAction.action_from(obs, action), env.action(action))
        obs, _, terminated, truncated, info = env.step(action)
        assert info["n_invalid"] == 0
        if terminated or truncated:
            break
    assert sent > 0  # jobs were there to serve


def test_the_action_wrappers_keep_a_valid_action_unchanged():
    """An action that sends machines to occupied slots or idles them plays the same episode with or without."""
    plain, wrapped = gym.make("ClusterApprox-v0", **SMALL), WorkConservingAction(gym.make("ClusterApprox-v0", **SMALL))
    obs, _ = plain.reset(seed=1)
    wrapped.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(SMALL["horizon"]):
        occupied = np.flatnonzero(obs["jobs"][:, 0] > 0) + 1
        choices = np.concatenate([[0], occupied])
        action = rng.choice(choices, size=plain.action_space.shape)
        obs, r1, *_ = plain.step(action)
        obs2, r2, terminated, truncated, _ = wrapped.step(action)
        assert r1 == r2
        np.testing.assert_array_equal(obs["jobs"], obs2["jobs"])
        if terminated or truncated:
            break


def test_the_slot_mask_allows_idle_and_the_occupied_slots():
    env = SlotMaskAction(gym.make("ClusterApprox-v0", **SMALL))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(env.action_space.sample())
    k, m = obs["jobs"].shape[0], env.action_space.shape[0]
    mask = env.action_masks().reshape(m, k + 1)
    assert mask[:, 0].all()
    for row in mask:
        np.testing.assert_array_equal(row[1:], obs["jobs"][:, 0] > 0)


@pytest.mark.parametrize("env_id", ["ClusterApprox-v0", "ClusterApproxSingleJob-v0"])
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
        BanditStatsObservation(gym.make("ClusterSLA-v0"))
    with pytest.raises(ValueError, match="ClusterApprox-v0"):
        WorkConservingAction(gym.make("ClusterApproxSingleJob-v0", **SMALL))
