"""baselines/tuning/zoo_native.py: once installed, rl-zoo3's env factories become the id's native batched env, which
gives the same steps as the DummyVecEnv rl-zoo3 would build; a trial past its CPU budget is pruned."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rl_zoo3")

import optuna  # noqa: E402
from rl_zoo3.exp_manager import ExperimentManager  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from baselines.tuning import zoo_native  # noqa: E402
from cluster_envs.sb3 import NativeVecEnv  # noqa: E402

KWARGS = {"action_mode": "normalize", "horizon": 36}


def _vec_env(cls, seed=7):
    import gymnasium as gym

    return make_vec_env(lambda **kw: gym.make("ClusterSLA-v1", **kw), n_envs=3, seed=seed, env_kwargs=KWARGS,
                        vec_env_cls=cls)  # fmt: skip


def test_the_zoo_manager_builds_native_envs_and_rl_zoo3s_class_is_left_alone():
    from baselines.tuning.zoo import experiment_manager

    native = experiment_manager(native=True)
    assert issubclass(native, ExperimentManager) and native.default_vec_env_cls is zoo_native.native_vec_env
    assert ExperimentManager.default_vec_env_cls is None and experiment_manager().default_vec_env_cls is None
    env = _vec_env(zoo_native.native_vec_env)
    assert isinstance(env.venv, NativeVecEnv) and env.num_envs == 3
    env.close()


def test_the_native_envs_step_as_rl_zoo3s_dummy_vec_env():
    native, dummy = _vec_env(zoo_native.native_vec_env), _vec_env(DummyVecEnv)
    obs_n, obs_d = native.reset(), dummy.reset()
    np.testing.assert_allclose(obs_n, obs_d)
    rng = np.random.default_rng(0)
    ended = False
    for _ in range(40):  # past the horizon: the copies reset as DummyVecEnv resets them
        action = rng.uniform(0, 1, size=(3, *native.action_space.shape)).astype(np.float32)
        obs_n, reward_n, done_n, _ = native.step(action)
        obs_d, reward_d, done_d, _ = dummy.step(action)
        np.testing.assert_allclose(obs_n, obs_d, rtol=1e-6)
        np.testing.assert_allclose(reward_n, reward_d, rtol=1e-6)
        np.testing.assert_array_equal(done_n, done_d)
        ended |= bool(done_n.any())
    assert ended  # the comparison crossed an episode's end (T = 36) and the reset after it
    native.close()
    dummy.close()


def test_a_trial_past_its_cpu_budget_is_pruned_even_inside_a_long_computation():
    callback = zoo_native.TrialCPUBudget(seconds=0.05)
    callback._on_training_start()
    try:
        with pytest.raises(optuna.TrialPruned, match="CPU-seconds"):
            deadline = time.process_time() + 5
            while time.process_time() < deadline:  # no callback step: the timer interrupts the loop itself
                pass
    finally:
        callback._on_training_end()
    with pytest.raises(ValueError, match="seconds must be positive"):
        zoo_native.TrialCPUBudget(seconds=0)


def test_a_trial_that_ends_in_time_disarms_the_budget():
    callback = zoo_native.TrialCPUBudget(seconds=0.05)
    callback._on_training_start()
    callback._on_training_end()
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:  # past the budget after training ended: nothing is raised
        pass
