"""The RL-ready ids (``Cluster<Name>RL-v0``, cluster_envs/registration.py): one Box observation, a Box, Discrete or
MultiDiscrete action, the base id's episodes, and an id-only client trains on them with no user code.

The registry-wide files (tests/test_conformance.py, tests/robustness/) cover them as any other id."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import cluster_envs  # noqa: F401
from cluster_envs.registration import RL_IDS, env_ids, rl_base

SHORT = {"horizon": 40}
RL_ACTIONS = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete)


def test_every_setting_has_an_rl_ready_id_named_after_it():
    bases = env_ids(rl_ready=False)
    assert set(RL_IDS) <= set(env_ids()) - set(bases)
    for env_id, (base, _) in RL_IDS.items():
        assert base in bases and env_id == base.replace("-v", "RL-v") and rl_base(env_id) == base
    assert rl_base(bases[0]) is None


@pytest.mark.parametrize("env_id", list(RL_IDS))
def test_one_box_observation_and_an_rl_action_space(env_id):
    env = gym.make(env_id)
    assert isinstance(env.observation_space, spaces.Box) and env.observation_space.shape is not None
    assert isinstance(env.action_space, RL_ACTIONS)
    vec = gym.make_vec(env_id, 2, vectorization_mode="vector_entry_point")
    assert vec.single_observation_space == env.observation_space and vec.single_action_space == env.action_space
    vec.close()


@pytest.mark.parametrize("env_id", list(RL_IDS))
def test_the_kwargs_change_only_the_interface(env_id):
    """Only how an action is read and how the observation is laid out (the benchmark's format kwargs)."""
    from baselines.settings import FORMAT_KWARGS

    base, kwargs = RL_IDS[env_id]
    assert set(kwargs) <= FORMAT_KWARGS and kwargs["observation_mode"] == "flat"
    assert gym.make(env_id).unwrapped.config == gym.make(base, **kwargs).unwrapped.config


@pytest.mark.parametrize("env_id", list(RL_IDS))
def test_an_rl_ready_id_plays_its_base_ids_episodes(env_id):
    """Same seed, same actions: the flat observation is the base id's Dict flattened; rewards and info agree."""
    base, kwargs = RL_IDS[env_id]
    mine = gym.make(env_id, **SHORT)
    theirs = gym.make(base, action_mode=kwargs["action_mode"], **SHORT)  # the same reading, Dict observation
    flat, _ = mine.reset(seed=4)
    obs, _ = theirs.reset(seed=4)
    mine.action_space.seed(4)
    for _ in range(SHORT["horizon"]):
        np.testing.assert_array_equal(flat, spaces.flatten(theirs.observation_space, obs))
        action = mine.action_space.sample()
        flat, r1, term1, trunc1, info1 = mine.step(action)
        obs, r2, term2, trunc2, info2 = theirs.step(action)
        assert (r1, term1, trunc1) == (r2, term2, trunc2)
        if term1 or trunc1:
            assert info1["episode_summary"] == info2["episode_summary"]
            break
    assert term1 or trunc1


@pytest.mark.parametrize("env_id", list(RL_IDS))
def test_the_rl_ready_ids_agree_with_the_benchmarks_ppo_interface(env_id):
    """The RL-ready id is the interface the benchmark's PPO trains on (FlattenObservation = observation_mode flat)."""
    from baselines.settings import FLATTEN, require_setting

    base, kwargs = RL_IDS[env_id]
    setting = require_setting(base)
    trained = setting.rl_needs("ppo")
    flat = trained.get("observation_mode") == "flat" or setting.rl_wrapper == FLATTEN
    assert flat and {k: v for k, v in trained.items() if k != "observation_mode"} == {
        k: v for k, v in kwargs.items() if k != "observation_mode"
    }


@pytest.mark.parametrize("env_id", list(RL_IDS))
def test_sb3_ppo_trains_on_the_id_alone(env_id):
    """What an id-only client does: SB3's PPO given the id string, default policy, no wrapper."""
    sb3 = pytest.importorskip("stable_baselines3")
    import torch

    torch.set_num_threads(1)
    model = sb3.PPO("MlpPolicy", env_id, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    assert model.num_timesteps >= 256
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(action)
